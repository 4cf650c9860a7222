import { fixedClock } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { expect, test } from 'vitest'
import {
  drawStats,
  drawTimeline,
  drawTree,
  formatMs,
  runAgent,
  scriptedModel,
  seedProject,
} from '../src/session.js'

test('the scripted session fixes the bug, recovers from its mistake, and leaves a full audit trail', async () => {
  const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  await seedProject(agent)
  const model = scriptedModel()
  const result = await runAgent(agent, model)
  expect(result.steps).toBe(10)
  expect(result.text).toMatch(/^Fixed the typo/)

  // The real tools did the work on the real database.
  expect(await agent.fs.readFile('/project/src/greet.js', 'utf8')).toBe(
    "export function greet(name) {\n  return 'Hello, ' + name + '!'\n}\n",
  )
  expect(await agent.fs.readFile('/project/CHANGELOG.md', 'utf8')).toContain(
    'Fix the greeting typo',
  )
  expect(await agent.kv.get('memory:last-task')).toEqual({
    task: 'fix greeting typo',
    files: ['src/greet.js', 'CHANGELOG.md'],
  })

  // The mistake reached the model as a tool result, and the next step re-read the file.
  const afterMistake = JSON.stringify(model.doGenerateCalls[4]!.prompt.at(-1))
  expect(afterMistake).toContain('String to replace not found in file')
  // The last grep counted no remaining typo.
  expect(JSON.stringify(model.doGenerateCalls[9]!.prompt.at(-1))).toContain('No matches')

  const calls = await agent.tools.bySession('demo')
  expect(calls.map((c) => `${c.name}:${c.status}`)).toEqual([
    'list_directory:success',
    'kv_get:success',
    'grep:success',
    'edit_file:error',
    'read_file:success',
    'edit_file:success',
    'edit_file:success',
    'kv_set:success',
    'grep:success',
  ])

  expect(await drawTree(agent, '/project')).toBe(
    '/project\n├── CHANGELOG.md  (70 B)\n└── src/\n    ├── greet.js  (64 B)\n    └── main.js  (64 B)',
  )
  expect(await drawTimeline(agent)).toMatch(
    /#4 edit_file +error \d+ ms\n +↳ String to replace not found in file\./,
  )
  expect(await drawStats(agent)).toMatch(
    /^ {2}tool +calls +ok +failed +avg ms\n {2}edit_file +3 +2 +1 /,
  )
  await agent.close()
})

test('durations print as people read them, not as floating-point noise', () => {
  expect(formatMs(1.2026080000000001)).toBe('1.2')
  expect(formatMs(0.04)).toBe('0')
  expect(formatMs(2)).toBe('2')
  expect(formatMs(12.5)).toBe('13')
  expect(formatMs(1234.49)).toBe('1234')
})
