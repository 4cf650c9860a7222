import { fixedClock } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { expectEditedOnce, RETRIED_EDIT, RETRIED_EDIT_BEFORE } from '@agentfs/test-kit'
import { callTool, ScriptedModel, say } from '@agentfs/test-kit/openai-model'
import { Agent, run, setTracingDisabled } from '@openai/agents'
import { expect, test } from 'vitest'
import { openAiAgentsTools } from '../src/index.js'

setTracingDisabled(true)

test('an OpenAI Agents run reads, hits an ambiguous edit, recovers; errors reach the model; calls are audited', async () => {
  const agentfs = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  await agentfs.fs.writeFile('/notes.md', '# Notes\n- TODO: write docs\n- TODO: ship\n')
  const model = new ScriptedModel([
    callTool('c1', 'read_file', { path: '/notes.md' }),
    callTool('c2', 'edit_file', { path: '/notes.md', old_string: 'TODO', new_string: 'DONE' }),
    callTool('c3', 'edit_file', {
      path: '/notes.md',
      old_string: 'TODO: ship',
      new_string: 'DONE: ship',
    }),
    say('Marked shipping as done.'),
  ])
  const agent = new Agent({
    name: 'editor',
    instructions: 'Edit files carefully.',
    model,
    tools: openAiAgentsTools({
      fs: agentfs.fs,
      kv: agentfs.kv,
      audit: agentfs.tools,
      sessionId: 'openai',
    }),
  })
  const result = await run(agent, 'Mark shipping as done in /notes.md', { maxTurns: 10 })
  expect(result.finalOutput).toBe('Marked shipping as done.')
  expect(JSON.stringify(model.requests[2]!.input)).toContain(
    'Found 2 matches of the string to replace',
  )
  expect(await agentfs.fs.readFile('/notes.md', 'utf8')).toBe(
    '# Notes\n- TODO: write docs\n- DONE: ship\n',
  )
  expect((await agentfs.tools.bySession('openai')).map((c) => [c.name, c.status])).toEqual([
    ['read_file', 'success'],
    ['edit_file', 'error'],
    ['edit_file', 'success'],
  ])
  await agentfs.close()
})

test('a model that retries an edit with its idempotency_key gets the first answer; the edit applies once', async () => {
  const agentfs = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  await agentfs.fs.writeFile('/notes.md', RETRIED_EDIT_BEFORE)
  const model = new ScriptedModel([
    callTool('c1', 'edit_file', RETRIED_EDIT),
    callTool('c2', 'edit_file', RETRIED_EDIT),
    say('Done.'),
  ])
  const agent = new Agent({
    name: 'editor',
    instructions: 'Edit files carefully.',
    model,
    tools: openAiAgentsTools({ fs: agentfs.fs, audit: agentfs.tools, sessionId: 'retry' }),
  })
  await run(agent, 'Mark shipping as done', { maxTurns: 10 })
  expect(JSON.stringify(model.requests[0]!.tools)).toContain('idempotency_key')
  await expectEditedOnce(agentfs, 'retry', model.requests[2]!.input.at(-1))
  await agentfs.close()
})
