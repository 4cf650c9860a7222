export { aiSdkTools } from './ai-sdk-tools.js'
