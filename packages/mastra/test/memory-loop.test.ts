import { memoryPolicy, memoryTools } from '@agentfs/memory'
import { AgentFS } from '@agentfs/sdk'
import {
  mockToolCall as call,
  expectMemoryFlow,
  MEMORY_FLOW,
  MEMORY_KEY,
  mockText,
  plantMemoryGarden,
} from '@agentfs/test-kit'
import { Agent } from '@mastra/core/agent'
import { MockLanguageModelV3 } from 'ai/test'
import { expect, test } from 'vitest'
import { mastraTools } from '../src/index.js'

test("seed 003's profile-update flow in a Mastra agent: the memory tools edit, the memory policy refuses a generic overwrite", async () => {
  const agentfs = await AgentFS.open({ path: ':memory:', audit: { key: MEMORY_KEY } })
  await plantMemoryGarden(agentfs)
  const model = new MockLanguageModelV3({
    doGenerate: [
      ...MEMORY_FLOW.map(([name, input], i) => call(String(i + 1), name, input)),
      mockText('Updated the concerns.'),
    ],
  })
  const agent = new Agent({
    id: 'gardener',
    name: 'gardener',
    instructions: "Tend the user's garden.",
    model,
    tools: mastraTools({
      fs: agentfs.fs.restrict(memoryPolicy()),
      audit: agentfs.tools,
      sessionId: 'memory',
      tools: memoryTools({ userId: 'u1' }),
    }),
  })
  const result = await agent.generate(
    'The user fears missing out on friends; update their profile.',
    { maxSteps: 10 },
  )
  expect(result.text).toBe('Updated the concerns.')
  await expectMemoryFlow(agentfs, 'memory', model.doGenerateCalls.at(-1)!.prompt)
  await agentfs.close()
})
