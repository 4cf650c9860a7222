import { memoryPolicy, memoryTools } from '@agentfs/memory'
import { AgentFS } from '@agentfs/sdk'
import { expectMemoryFlow, MEMORY_FLOW, MEMORY_KEY, plantMemoryGarden } from '@agentfs/test-kit'
import { ScriptedModel } from '@agentfs/test-kit/openai-model'
import { Agent, run, setTracingDisabled } from '@openai/agents'
import { expect, test } from 'vitest'
import { openAiAgentsTools } from '../src/index.js'

setTracingDisabled(true)

test("seed 003's profile-update flow in an OpenAI Agents run: the memory tools edit, the memory policy refuses a generic overwrite", async () => {
  const agentfs = await AgentFS.open({ path: ':memory:', audit: { key: MEMORY_KEY } })
  await plantMemoryGarden(agentfs)
  const model = new ScriptedModel([
    ...MEMORY_FLOW.map(([name, input], i) => [
      {
        type: 'function_call' as const,
        callId: `c${i + 1}`,
        name,
        arguments: JSON.stringify(input),
        status: 'completed' as const,
      },
    ]),
    [
      {
        type: 'message' as const,
        role: 'assistant' as const,
        status: 'completed' as const,
        content: [{ type: 'output_text' as const, text: 'Updated the concerns.' }],
      },
    ],
  ])
  const agent = new Agent({
    name: 'gardener',
    instructions: "Tend the user's garden.",
    model,
    tools: openAiAgentsTools({
      fs: agentfs.fs.restrict(memoryPolicy()),
      audit: agentfs.tools,
      sessionId: 'memory',
      tools: memoryTools({ userId: 'u1' }),
    }),
  })
  const result = await run(agent, 'The user fears missing out on friends; update their profile.', {
    maxTurns: 10,
  })
  expect(result.finalOutput).toBe('Updated the concerns.')
  await expectMemoryFlow(agentfs, 'memory', model.requests.at(-1)!.input)
  await agentfs.close()
})
