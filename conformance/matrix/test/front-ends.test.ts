import { aiSdkTools } from '@agentfs/ai-sdk'
import { fixedClock } from '@agentfs/core'
import { mastraTools } from '@agentfs/mastra'
import { createMcpServer } from '@agentfs/mcp'
import { openAiAgentsTools } from '@agentfs/openai-agents'
import { AgentFS } from '@agentfs/sdk'
import { Agent as MastraAgent } from '@mastra/core/agent'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import {
  Agent,
  type Model,
  type ModelRequest,
  type ModelResponse,
  run,
  setTracingDisabled,
  Usage,
} from '@openai/agents'
import { generateText, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { expect, test } from 'vitest'

setTracingDisabled(true)

/** The script every front end runs: read, an ambiguous edit, a recovering edit, a note in memory. */
const script = (path: string) =>
  [
    ['read_file', { path }],
    ['edit_file', { path, old_string: 'TODO', new_string: 'DONE' }],
    ['edit_file', { path, old_string: 'TODO: ship', new_string: 'DONE: ship' }],
    ['kv_set', { key: `done:${path}`, value: true }],
  ] as const

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
}
function aiSdkModel(path: string) {
  return new MockLanguageModelV3({
    doGenerate: [
      ...script(path).map(([name, input], i) => ({
        content: [
          {
            type: 'tool-call' as const,
            toolCallId: String(i),
            toolName: name,
            input: JSON.stringify(input),
          },
        ],
        finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' },
        usage,
        warnings: [],
      })),
      {
        content: [{ type: 'text' as const, text: 'done' }],
        finishReason: { unified: 'stop' as const, raw: 'stop' },
        usage,
        warnings: [],
      },
    ],
  })
}

class ScriptedModel implements Model {
  #turn = 0
  constructor(readonly path: string) {}
  async getResponse(_request: ModelRequest): Promise<ModelResponse> {
    const step = script(this.path)[this.#turn++]
    const output: ModelResponse['output'] = step
      ? [
          {
            type: 'function_call',
            callId: `c${this.#turn}`,
            name: step[0],
            arguments: JSON.stringify(step[1]),
            status: 'completed',
          },
        ]
      : [
          {
            type: 'message',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: 'done' }],
          },
        ]
    return { usage: new Usage(), output }
  }
  // biome-ignore lint/correctness/useYield: streaming is not used here
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not used')
  }
}

test('the same script through the AI SDK, OpenAI Agents, Mastra and MCP leaves identical results', async () => {
  const agentfs = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  const original = '# Notes\n- TODO: write docs\n- TODO: ship\n'
  const fronts = ['ai-sdk', 'openai-agents', 'mastra', 'mcp'] as const
  for (const front of fronts) await agentfs.fs.writeFile(`/${front}.md`, original)
  const options = (front: string) => ({
    fs: agentfs.fs,
    kv: agentfs.kv,
    audit: agentfs.tools,
    sessionId: front,
  })

  await generateText({
    model: aiSdkModel('/ai-sdk.md'),
    tools: aiSdkTools(options('ai-sdk')),
    stopWhen: stepCountIs(10),
    prompt: 'go',
  })
  await run(
    new Agent({
      name: 'o',
      instructions: 'i',
      model: new ScriptedModel('/openai-agents.md'),
      tools: openAiAgentsTools(options('openai-agents')),
    }),
    'go',
    { maxTurns: 10 },
  )
  await new MastraAgent({
    id: 'm',
    name: 'm',
    instructions: 'i',
    model: aiSdkModel('/mastra.md'),
    tools: mastraTools(options('mastra')),
  }).generate('go', { maxSteps: 10 })
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  const client = new Client({ name: 'c', version: '1' })
  await Promise.all([
    client.connect(clientSide),
    createMcpServer(options('mcp')).connect(serverSide),
  ])
  for (const [name, input] of script('/mcp.md'))
    await client.callTool({ name, arguments: input as Record<string, unknown> })

  const results = await Promise.all(fronts.map((f) => agentfs.fs.readFile(`/${f}.md`, 'utf8')))
  expect(new Set(results)).toEqual(new Set(['# Notes\n- TODO: write docs\n- DONE: ship\n']))
  for (const front of fronts) {
    expect(await agentfs.kv.get(`done:/${front}.md`)).toBe(true)
    const calls = await agentfs.tools.bySession(front)
    expect(
      calls.map((c) => [c.name, c.status, c.parameters]),
      front,
    ).toEqual(
      script(`/${front}.md`).map(([name, input], i) => [
        name,
        i === 1 ? 'error' : 'success',
        input,
      ]),
    )
  }
  await agentfs.close()
}, 60_000)
