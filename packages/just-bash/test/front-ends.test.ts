import { aiSdkTools } from '@agentfs/ai-sdk'
import { fixedClock } from '@agentfs/core'
import { mastraTools } from '@agentfs/mastra'
import { createMcpServer } from '@agentfs/mcp'
import { openAiAgentsTools } from '@agentfs/openai-agents'
import { AgentFS } from '@agentfs/sdk'
import { mockText, mockToolCall } from '@agentfs/test-kit'
import { ScriptedModel } from '@agentfs/test-kit/openai-model'
import { Agent as MastraAgent } from '@mastra/core/agent'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { Agent as OpenAiAgent, run, setTracingDisabled } from '@openai/agents'
import { generateText, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { createBashTool } from 'bash-tool'
import { afterEach, beforeEach, expect, test } from 'vitest'
import { agentFsSandbox, bashTool } from '../src/index.js'

setTracingDisabled(true)

// The same script through every front end: one real agent loop each (a scripted model calls
// `bash`, reads the result, answers). Each call is audited, its changes land in the database.
const SCRIPT = 'mkdir -p /out && echo "a b c" | tr " " "\\n" | sort -r > /out/list && cat /out/list'
const PRINTED = 'c\nb\na\n'

let agentfs: AgentFS
beforeEach(async () => {
  agentfs = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
})
afterEach(async () => {
  await agentfs.close()
})

const expectRan = async (session: string, name = 'bash') => {
  expect(await agentfs.fs.readFile('/out/list', 'utf8')).toBe(PRINTED)
  expect((await agentfs.tools.bySession(session)).map((c) => [c.name, c.status])).toEqual([
    [name, 'success'],
  ])
}

const aiModel = (toolName: string) =>
  new MockLanguageModelV3({
    doGenerate: [mockToolCall('1', toolName, { command: SCRIPT }), mockText('Sorted.')],
  })

test('AI SDK: aiSdkTools({ tools: [bashTool()] }) in a generateText loop', async () => {
  const model = aiModel('bash')
  const result = await generateText({
    model,
    tools: aiSdkTools({
      fs: agentfs.fs,
      audit: agentfs.tools,
      sessionId: 'ai',
      tools: [bashTool()],
    }),
    stopWhen: stepCountIs(5),
    prompt: 'Sort a b c in reverse into /out/list',
  })
  expect(result.text).toBe('Sorted.')
  expect(JSON.stringify(model.doGenerateCalls[1]!.prompt)).toContain('c\\nb\\na\\n[exit status 0]')
  await expectRan('ai')
})

test('AI SDK: bash-tool’s createBashTool on an AgentFS sandbox in a generateText loop', async () => {
  const { tools } = await createBashTool({
    sandbox: agentFsSandbox({ fs: agentfs.fs, audit: agentfs.tools, sessionId: 'bash-tool' }),
    // bash-tool runs each command in its destination (default /workspace): the database's root.
    destination: '/',
  })
  const model = aiModel('bash')
  const result = await generateText({
    model,
    tools,
    stopWhen: stepCountIs(5),
    prompt: 'Sort a b c in reverse into /out/list',
  })
  expect(result.text).toBe('Sorted.')
  expect(JSON.stringify(model.doGenerateCalls[1]!.prompt)).toContain('"stdout":"c\\nb\\na\\n"')
  // bash-tool first probes the programs installed (ls /usr/bin …): also an audited command.
  const calls = await agentfs.tools.bySession('bash-tool')
  expect(calls.map((c) => c.parameters)).toEqual([
    { command: 'ls /usr/bin /usr/local/bin /bin /sbin /usr/sbin 2>/dev/null' },
    { command: `cd "/" && ${SCRIPT}` },
  ])
  expect(await agentfs.fs.readFile('/out/list', 'utf8')).toBe(PRINTED)
})

test('OpenAI Agents: openAiAgentsTools({ tools: [bashTool()] }) in a run loop', async () => {
  const model = new ScriptedModel([
    [
      {
        type: 'function_call' as const,
        callId: 'c1',
        name: 'bash',
        arguments: JSON.stringify({ command: SCRIPT }),
        status: 'completed' as const,
      },
    ],
    [
      {
        type: 'message' as const,
        role: 'assistant' as const,
        status: 'completed' as const,
        content: [{ type: 'output_text' as const, text: 'Sorted.' }],
      },
    ],
  ])
  const agent = new OpenAiAgent({
    name: 'sorter',
    instructions: 'Use bash.',
    model,
    tools: openAiAgentsTools({
      fs: agentfs.fs,
      audit: agentfs.tools,
      sessionId: 'openai',
      tools: [bashTool()],
    }),
  })
  const result = await run(agent, 'Sort a b c in reverse into /out/list', { maxTurns: 5 })
  expect(result.finalOutput).toBe('Sorted.')
  expect(JSON.stringify(model.requests[1]!.input)).toContain('c\\nb\\na')
  await expectRan('openai')
})

test('Mastra: mastraTools({ tools: [bashTool()] }) in an agent.generate loop', async () => {
  const model = aiModel('bash')
  const agent = new MastraAgent({
    id: 'sorter',
    name: 'sorter',
    instructions: 'Use bash.',
    model,
    tools: mastraTools({
      fs: agentfs.fs,
      audit: agentfs.tools,
      sessionId: 'mastra',
      tools: [bashTool()],
    }),
  })
  const result = await agent.generate('Sort a b c in reverse into /out/list', { maxSteps: 5 })
  expect(result.text).toBe('Sorted.')
  expect(JSON.stringify(model.doGenerateCalls[1]!.prompt)).toContain('c\\nb\\na')
  await expectRan('mastra')
}, 60_000)

test('MCP: a real client calls the bash tool of createMcpServer({ tools: [bashTool()] })', async () => {
  const server = createMcpServer({
    fs: agentfs.fs,
    audit: agentfs.tools,
    sessionId: 'mcp',
    tools: [bashTool()],
  })
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
  const client = new Client({ name: 'test-client', version: '1.0.0' })
  await Promise.all([client.connect(clientTransport), server.connect(serverTransport)])
  expect((await client.listTools()).tools.map((t) => t.name)).toContain('bash')
  const result = await client.callTool({ name: 'bash', arguments: { command: SCRIPT } })
  expect((result.content as Array<{ text: string }>)[0]!.text).toBe(`${PRINTED}[exit status 0]`)
  await expectRan('mcp')
  await client.close()
})
