import {
  type AgentToolsOptions,
  auditCopy,
  createAgentTools,
  createToolEnvironment,
  isText,
} from '@agentfs/agent-tools'
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
  recordRefusals(server, options)
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
          content: [
            { type: 'text' as const, text: output.text },
            ...(output.images ?? []).map((image) => ({
              type: 'image' as const,
              data: image.data,
              mimeType: image.mediaType,
            })),
          ],
          isError: output.isError ?? false,
        }
      }) as never,
    )
  }
  if (options.resources !== false) {
    // Resources go through the same path mapping and roots as the tools: the same check.
    const { fs, paths } = createToolEnvironment(options)
    const limit = options.maxResources ?? 1000
    server.registerResource(
      'files',
      new ResourceTemplate('agentfs:///{+path}', {
        list: async () => {
          const entries: Dirent[] = []
          for (const top of options.allowedRoots ?? ['/']) {
            const fsTop = await paths.resolve(top, fs).catch(() => undefined)
            if (fsTop === undefined) continue
            const listed = await fs.readdir(fsTop, { recursive: true, withFileTypes: true })
            entries.push(...(listed as Dirent[]))
          }
          const resources = []
          for (const d of entries) {
            if (resources.length >= limit) break
            if (!d.isFile()) continue
            const fsPath = `${d.parentPath === '/' ? '' : d.parentPath}/${d.name}`
            if (!(await paths.visible(fsPath, fs))) continue
            const path = paths.display(fsPath)
            resources.push({ uri: `agentfs://${path}`, name: path })
          }
          return { resources }
        },
      }),
      { description: 'Files of the agent filesystem' },
      async (uri, variables) => {
        const fsPath = await paths.resolve(`/${String(variables.path ?? '')}`, fs)
        const bytes = await fs.readFile(fsPath)
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

/**
 * The MCP SDK checks a call's arguments against the tool's schema before our handler runs, so a
 * refused call would leave no trace. Every call is audited, refusals too: the SDK's own check
 * (`validateToolInput`, @modelcontextprotocol/sdk 1.32) is wrapped to record the refusal with
 * the same clock and argument caps as the tools, then rethrow it unchanged.
 */
function recordRefusals(server: McpServer, options: McpServerOptions): void {
  const audit = options.audit
  if (!audit) return
  const target = server as unknown as {
    validateToolInput?: (tool: unknown, args: unknown, name: string) => Promise<unknown>
  }
  const original = target.validateToolInput?.bind(server)
  if (!original) throw new Error('@modelcontextprotocol/sdk no longer has validateToolInput')
  target.validateToolInput = async (tool, args, name) => {
    const startedAt = audit.clock.now()
    try {
      return await original(tool, args, name)
    } catch (error) {
      await audit.record({
        name,
        parameters: auditCopy(args ?? null) as never,
        error: error instanceof Error ? error.message : String(error),
        startedAt,
        completedAt: audit.clock.now(),
        ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
      })
      throw error
    }
  }
}

/** Serves the tools over stdio (for `agentfs serve mcp` and MCP client configs). */
export async function serveMcpStdio(options: McpServerOptions): Promise<McpServer> {
  const server = createMcpServer(options)
  await server.connect(new StdioServerTransport())
  return server
}
