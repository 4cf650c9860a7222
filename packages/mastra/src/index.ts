export type { MastraTool } from './mastra-tools.js'
export { mastraTools } from './mastra-tools.js'
