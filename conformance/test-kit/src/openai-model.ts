import { type Model, type ModelRequest, type ModelResponse, Usage } from '@openai/agents'

/**
 * A scripted model for the OpenAI Agents SDK's run loop: each turn returns the next planned
 * output, and every request it was sent is kept in `requests` for the test to inspect.
 * (`@agentfs/test-kit/openai-model`: its own entry, so only tests that use it load the SDK.)
 */
export class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = []
  readonly #steps: ModelResponse['output'][]
  constructor(steps: ModelResponse['output'][]) {
    this.#steps = steps
  }
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request)
    const output = this.#steps[this.requests.length - 1]
    if (!output) throw new Error('the script has no more steps')
    return { usage: new Usage(), output }
  }
  // biome-ignore lint/correctness/useYield: the run loops of these tests do not stream
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not used')
  }
}

/** A scripted model turn that calls one tool. */
export const callTool = (callId: string, name: string, input: unknown) => [
  {
    type: 'function_call' as const,
    callId,
    name,
    arguments: JSON.stringify(input),
    status: 'completed' as const,
  },
]
/** A scripted model turn that answers with text. */
export const say = (text: string) => [
  {
    type: 'message' as const,
    role: 'assistant' as const,
    status: 'completed' as const,
    content: [{ type: 'output_text' as const, text }],
  },
]
