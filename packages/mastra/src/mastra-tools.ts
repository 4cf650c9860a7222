import { type AgentToolsOptions, createAgentTools } from '@agentfs/agent-tools'
import { createTool } from '@mastra/core/tools'

/** A Mastra tool as `createTool` returns it. */
export type MastraTool = ReturnType<typeof createTool>

/**
 * The AgentFS tools as Mastra tools, for `new Agent({ tools })`. Failures come back as text the
 * model reads; every call is recorded once in `tool_calls` when `audit` is given.
 *
 * @example
 * const agent = new Agent({ name: 'editor', instructions, model, tools: mastraTools({ fs: agentfs.fs, audit: agentfs.tools }) })
 */
export function mastraTools(options: AgentToolsOptions): Record<string, MastraTool> {
  const tools: Record<string, MastraTool> = {}
  for (const [name, agentTool] of createAgentTools(options)) {
    tools[name] = createTool({
      id: name,
      description: agentTool.description,
      inputSchema: agentTool.inputSchema as never,
      execute: async (input: unknown) => (await agentTool.execute(input)).text,
    }) as unknown as MastraTool
  }
  return tools
}
