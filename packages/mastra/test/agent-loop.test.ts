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
import { Agent } from '@mastra/core/agent'
import { MockLanguageModelV3 } from 'ai/test'
import { expect, test } from 'vitest'
import { mastraTools } from '../src/index.js'

test('a Mastra agent reads, hits an ambiguous edit, recovers; calls are audited', async () => {
  const agentfs = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  await agentfs.fs.writeFile('/notes.md', '# Notes\n- TODO: write docs\n- TODO: ship\n')
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
  const agent = new Agent({
    id: 'editor',
    name: 'editor',
    instructions: 'Edit files carefully.',
    model,
    tools: mastraTools({
      fs: agentfs.fs,
      kv: agentfs.kv,
      audit: agentfs.tools,
      sessionId: 'mastra',
    }),
  })
  const result = await agent.generate('Mark shipping as done in /notes.md', { maxSteps: 10 })
  expect(result.text).toBe('Marked shipping as done.')
  expect(JSON.stringify(model.doGenerateCalls[2]!.prompt)).toContain(
    'Found 2 matches of the string to replace',
  )
  expect(await agentfs.fs.readFile('/notes.md', 'utf8')).toBe(
    '# Notes\n- TODO: write docs\n- DONE: ship\n',
  )
  expect((await agentfs.tools.bySession('mastra')).map((c) => [c.name, c.status])).toEqual([
    ['read_file', 'success'],
    ['edit_file', 'error'],
    ['edit_file', 'success'],
  ])
  await agentfs.close()
}, 60_000)

test('a model that retries an edit with its idempotency_key gets the first answer; the edit applies once', async () => {
  const agentfs = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  await agentfs.fs.writeFile('/notes.md', RETRIED_EDIT_BEFORE)
  const model = new MockLanguageModelV3({
    doGenerate: [
      call('1', 'edit_file', RETRIED_EDIT),
      call('2', 'edit_file', RETRIED_EDIT),
      mockText('Done.'),
    ],
  })
  const agent = new Agent({
    id: 'editor',
    name: 'editor',
    instructions: 'Edit files carefully.',
    model,
    tools: mastraTools({ fs: agentfs.fs, audit: agentfs.tools, sessionId: 'retry' }),
  })
  await agent.generate('Mark shipping as done', { maxSteps: 10 })
  expect(JSON.stringify(model.doGenerateCalls[0]!.tools)).toContain('idempotency_key')
  await expectEditedOnce(agentfs, 'retry', model.doGenerateCalls[2]!.prompt.at(-1))
  await agentfs.close()
}, 60_000)
