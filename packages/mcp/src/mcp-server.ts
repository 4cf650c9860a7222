import { type AgentToolsOptions, createAgentTools, isText } from '@agentfs/agent-tools'
import type { Dirent } from '@agentfs/fs'
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'

/** Options of {@link createMcpServer}. */
export interface McpServerOptions extends AgentToolsOptions {
  /** Server name announced to clients (default `agentfs`). */
  readonly name?: string
  readonly version?: string
  /** Expose files as `agentfs:///path` resources (default true). */
  readonly resources?: boolean
  /** Resources listed at most (default 1,000). */
  readonly maxResources?: number
}

/**
 * An MCP server with the AgentFS tools (errors come back as `isError` results the model reads;
 * every call is audited once) and, by default, every file as a resource `agentfs:///path`.
 *
 * @example
 * const server = createMcpServer({ fs: agent.fs, kv: agent.kv, audit: agent.tools })
 * await server.connect(new StdioServerTransport())
 */
export function createMcpServer(options: McpServerOptions): McpServer {
  const server = new McpServer({
    name: options.name ?? 'agentfs',
    version: options.version ?? '0.1.0',
  })
  for (const [name, tool] of createAgentTools(options)) {
    server.registerTool(
      name,
      {
        description: tool.description,
        inputSchema: tool.inputSchema as never,
        annotations: { readOnlyHint: !tool.mutates, destructiveHint: tool.mutates },
      },
      // The schema comes from the tool definition, so its inferred argument type is not static.
      (async (args: unknown) => {
        const output = await tool.execute(args)
        return {
          content: [{ type: 'text' as const, text: output.text }],
          isError: output.isError ?? false,
        }
      }) as never,
    )
  }
  if (options.resources !== false) {
    const fs = options.fs
    const limit = options.maxResources ?? 1000
    server.registerResource(
      'files',
      new ResourceTemplate('agentfs:///{+path}', {
        list: async () => {
          const entries = (await fs.readdir('/', {
            recursive: true,
            withFileTypes: true,
          })) as Dirent[]
          return {
            resources: entries
              .filter((d) => d.isFile())
              .slice(0, limit)
              .map((d) => {
                const path = `${d.parentPath === '/' ? '' : d.parentPath}/${d.name}`
                return { uri: `agentfs://${path}`, name: path }
              }),
          }
        },
      }),
      { description: 'Files of the agent filesystem' },
      async (uri, variables) => {
        const path = `/${String(variables.path ?? '')}`
        const bytes = await fs.readFile(path)
        return {
          contents: [
            isText(bytes)
              ? { uri: uri.href, mimeType: 'text/plain', text: bytes.toString('utf8') }
              : {
                  uri: uri.href,
                  mimeType: 'application/octet-stream',
                  blob: bytes.toString('base64'),
                },
          ],
        }
      },
    )
  }
  return server
}

/** Serves the tools over stdio (for `agentfs serve mcp` and MCP client configs). */
export async function serveMcpStdio(options: McpServerOptions): Promise<McpServer> {
  const server = createMcpServer(options)
  await server.connect(new StdioServerTransport())
  return server
}
