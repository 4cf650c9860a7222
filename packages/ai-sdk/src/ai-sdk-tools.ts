import { type AgentToolsOptions, createAgentTools } from '@agentfs/agent-tools'
import { type Tool, tool } from 'ai'

/** What a tool answering with images returns (its `toModelOutput` makes content parts of it). */
export interface ImageAnswer {
  readonly text: string
  readonly images: ReadonlyArray<{ readonly data: string; readonly mediaType: string }>
}

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
      // Text for the model; with images (read_file of an image), the text and the images as
      // content parts the model sees.
      execute: async (input: unknown): Promise<string | ImageAnswer> => {
        const output = await agentTool.execute(input)
        return output.images === undefined
          ? output.text
          : { text: output.text, images: output.images }
      },
      toModelOutput: ({ output }: { output: unknown }) =>
        typeof output === 'string'
          ? { type: 'text' as const, value: output }
          : {
              type: 'content' as const,
              value: [
                { type: 'text' as const, text: (output as ImageAnswer).text },
                ...(output as ImageAnswer).images.map((image) => ({
                  type: 'image-data' as const,
                  data: image.data,
                  mediaType: image.mediaType,
                })),
              ],
            },
    }) as Tool
  }
  return tools
}
