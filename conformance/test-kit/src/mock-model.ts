/**
 * Scripted responses for the AI SDK's `MockLanguageModelV3` (`ai/test`), as the agent-loop tests
 * of every front end use them: a step that calls one tool, and a final text.
 */
export const MOCK_USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}

/** A model step that calls `toolName` with `input`. */
export const mockToolCall = (id: string, toolName: string, input: unknown) => ({
  content: [{ type: 'tool-call' as const, toolCallId: id, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' },
  usage: MOCK_USAGE,
  warnings: [],
})

/** A final model step that answers `text`. */
export const mockText = (text: string) => ({
  content: [{ type: 'text' as const, text }],
  finishReason: { unified: 'stop' as const, raw: 'stop' },
  usage: MOCK_USAGE,
  warnings: [],
})
