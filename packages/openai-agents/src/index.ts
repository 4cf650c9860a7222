export { openAiAgentsTools } from './openai-agents-tools.js'
