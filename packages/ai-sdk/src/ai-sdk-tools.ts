import { type AgentToolsOptions, createAgentTools } from '@agentfs/agent-tools'
import { type Tool, tool } from 'ai'

/**
 * The AgentFS tools as an AI SDK tool set for `generateText` / `streamText`. Tool errors come
 * back to the model as text it can act on; every call is recorded once in `tool_calls` when
 * `audit` is given.
 *
 * @example
 * const result = await generateText({
 *   model,
 *   tools: aiSdkTools({ fs: agent.fs, kv: agent.kv, audit: agent.tools }),
 *   stopWhen: stepCountIs(10),
 *   prompt: 'Fix the typo in /README.md',
 * })
 */
export function aiSdkTools(options: AgentToolsOptions): Record<string, Tool> {
  const tools: Record<string, Tool> = {}
  for (const [name, agentTool] of createAgentTools(options)) {
    tools[name] = tool({
      description: agentTool.description,
      inputSchema: agentTool.inputSchema as never,
      execute: async (input: unknown) => (await agentTool.execute(input)).text,
    }) as Tool
  }
  return tools
}
