import { type AgentToolsOptions, createAgentTools } from '@agentfs/agent-tools'
import { type FunctionTool, tool } from '@openai/agents'
import { z } from 'zod'

/**
 * The AgentFS tools as OpenAI Agents SDK function tools. Tool failures are returned as text the
 * model reads (and `errorFunction` turns anything unexpected into text too, so the model always
 * sees what went wrong); every call is recorded once in `tool_calls` when `audit` is given.
 *
 * @example
 * const agent = new Agent({ name: 'editor', instructions, tools: openAiAgentsTools({ fs: agentfs.fs, audit: agentfs.tools }) })
 * await run(agent, 'Fix the typo in /README.md')
 */
export function openAiAgentsTools(options: AgentToolsOptions): FunctionTool[] {
  return [...createAgentTools(options).values()].map(
    (agentTool) =>
      tool({
        name: agentTool.name,
        description: agentTool.description,
        // The SDK takes zod schemas only in strict mode, which optional fields rule out; JSON
        // Schema in non-strict mode keeps them optional, and the tool validates its input itself.
        parameters: {
          ...z.toJSONSchema(agentTool.inputSchema, { io: 'input' }),
          additionalProperties: true,
        } as never,
        strict: false,
        // Text, or with images (read_file of an image) the text and the images as structured
        // tool output the SDK sends to the model as input_image parts.
        execute: async (input: unknown) => {
          const output = await agentTool.execute(input)
          if (output.images === undefined) return output.text
          return [
            { type: 'text' as const, text: output.text },
            ...output.images.map((image) => ({
              type: 'image' as const,
              image: { data: image.data, mediaType: image.mediaType },
            })),
          ]
        },
        errorFunction: (_context, error) =>
          `Error: ${error instanceof Error ? error.message : String(error)}`,
      }) as unknown as FunctionTool,
  )
}
