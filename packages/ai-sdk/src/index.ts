export { aiSdkTools, type ImageAnswer } from './ai-sdk-tools.js'
