export type { AgentFSBackendOptions } from './backend.js'
export { AgentFSBackend } from './backend.js'
