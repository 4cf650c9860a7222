export type { McpServerOptions } from './mcp-server.js'
export { createMcpServer, serveMcpStdio } from './mcp-server.js'
