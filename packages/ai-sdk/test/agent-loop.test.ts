import { fixedClock } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import {
  mockToolCall as call,
  expectEditedOnce,
  mockText,
  RETRIED_EDIT,
  RETRIED_EDIT_BEFORE,
  MOCK_USAGE as usage,
} from '@agentfs/test-kit'
import { generateText, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { expect, test } from 'vitest'
import { aiSdkTools } from '../src/index.js'

test('a full generateText loop reads, hits an ambiguous edit, recovers, and every call is audited', async () => {
  const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  await agent.fs.writeFile('/notes.md', '# Notes\n- TODO: write docs\n- TODO: ship\n')
  const model = new MockLanguageModelV3({
    doGenerate: [
      call('1', 'read_file', { path: '/notes.md' }),
      call('2', 'edit_file', { path: '/notes.md', old_string: 'TODO', new_string: 'DONE' }),
      call('3', 'edit_file', {
        path: '/notes.md',
        old_string: 'TODO: ship',
        new_string: 'DONE: ship',
      }),
      {
        content: [{ type: 'text' as const, text: 'Marked shipping as done.' }],
        finishReason: { unified: 'stop' as const, raw: 'stop' },
        usage,
        warnings: [],
      },
    ],
  })
  const result = await generateText({
    model,
    tools: aiSdkTools({ fs: agent.fs, kv: agent.kv, audit: agent.tools, sessionId: 'ai-sdk' }),
    stopWhen: stepCountIs(10),
    prompt: 'Mark shipping as done in /notes.md',
  })
  expect(result.text).toBe('Marked shipping as done.')
  // The model saw the ambiguity as a tool result it could read.
  const secondStep = model.doGenerateCalls[2]!.prompt.at(-1)
  expect(JSON.stringify(secondStep)).toContain('Found 2 matches of the string to replace')
  expect(await agent.fs.readFile('/notes.md', 'utf8')).toBe(
    '# Notes\n- TODO: write docs\n- DONE: ship\n',
  )
  const calls = await agent.tools.bySession('ai-sdk')
  expect(calls.map((c) => [c.name, c.status])).toEqual([
    ['read_file', 'success'],
    ['edit_file', 'error'],
    ['edit_file', 'success'],
  ])
  expect(calls[1]!.parameters).toEqual({
    path: '/notes.md',
    old_string: 'TODO',
    new_string: 'DONE',
  })
  await agent.close()
})

test('a model that retries an edit with its idempotency_key gets the first answer; the edit applies once', async () => {
  const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  await agent.fs.writeFile('/notes.md', RETRIED_EDIT_BEFORE)
  const model = new MockLanguageModelV3({
    doGenerate: [
      call('1', 'edit_file', RETRIED_EDIT),
      call('2', 'edit_file', RETRIED_EDIT),
      mockText('Done.'),
    ],
  })
  await generateText({
    model,
    tools: aiSdkTools({ fs: agent.fs, audit: agent.tools, sessionId: 'retry' }),
    stopWhen: stepCountIs(10),
    prompt: 'Mark shipping as done',
  })
  // The model is offered the key on every tool that changes something.
  expect(JSON.stringify(model.doGenerateCalls[0]!.tools)).toContain('idempotency_key')
  await expectEditedOnce(agent, 'retry', model.doGenerateCalls[2]!.prompt.at(-1))
  await agent.close()
})
