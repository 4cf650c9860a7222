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
import { generateText, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { expect, test } from 'vitest'
import { aiSdkTools } from '../src/index.js'

test("seed 003's profile-update flow in a generateText loop: the memory tools edit, the memory policy refuses a generic overwrite", async () => {
  const agent = await AgentFS.open({ path: ':memory:', audit: { key: MEMORY_KEY } })
  await plantMemoryGarden(agent)
  const model = new MockLanguageModelV3({
    doGenerate: [
      ...MEMORY_FLOW.map(([name, input], i) => call(String(i + 1), name, input)),
      mockText('Updated the concerns.'),
    ],
  })
  const result = await generateText({
    model,
    tools: aiSdkTools({
      fs: agent.fs.restrict(memoryPolicy()),
      audit: agent.tools,
      sessionId: 'memory',
      tools: memoryTools({ userId: 'u1' }),
    }),
    stopWhen: stepCountIs(10),
    prompt: 'The user fears missing out on friends; update their profile.',
  })
  expect(result.text).toBe('Updated the concerns.')
  await expectMemoryFlow(agent, 'memory', model.doGenerateCalls.at(-1)!.prompt.at(-1))
  await agent.close()
})
