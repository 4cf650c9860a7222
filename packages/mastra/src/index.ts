export type { MastraTool } from './mastra-tools.js'
export { mastraTools } from './mastra-tools.js'
export type { AgentFSFilesystemOptions } from './workspace-filesystem.js'
export { AgentFSFilesystem } from './workspace-filesystem.js'
