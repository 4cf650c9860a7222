import { AgentFS } from '@agentfs/sdk'
import { expect, test } from 'vitest'
import {
  MEMORY_SESSION,
  NOTES_PATH,
  PROFILE_PATH,
  plantGarden,
  runMemorySession,
} from '../src/memory.js'

test("the memory demo's session: three flows, a blocked edit, a retried call, every event committed and verified", async () => {
  const key = { key: new Uint8Array(32).fill(9), id: 'demo' }
  const agent = await AgentFS.open({ path: ':memory:', audit: { key } })
  await plantGarden(agent)
  const { result, memory, model } = await runMemorySession(agent)
  expect(result.text).toMatch(/^Updated the concerns/)
  const profile = await agent.fs.readFile(PROFILE_PATH, 'utf8')
  expect(profile).toContain('Fears missing out: on friends as much as on deadlines.')
  expect(profile).toContain('- "Everyone was there but me" (ev:2026-11-27)')
  expect(profile).toContain('<!-- @anchor: concerns v1 -->')
  // The note captured once, though the call came twice.
  const notes = await agent.fs.readFile(NOTES_PATH, 'utf8')
  expect(notes.match(/theme across notes/g)).toHaveLength(1)
  // The blocked edit reached the model with its reason.
  expect(JSON.stringify(model.doGenerateCalls[8]!.prompt.at(-1))).toMatch(/anchor/)
  const calls = await agent.tools.bySession(MEMORY_SESSION)
  expect(calls.map((c) => `${c.name}:${c.status}`)).toEqual([
    'fs_read:success',
    'md_list_sections:success',
    'md_patch_section:success',
    'md_curate_list:success',
    'md_lint:success',
    'fs_search:success',
    'fs_append:success',
    'write_file:error',
    'fs_append:success',
  ])
  // The retry got the first answer: the same event, nothing changed.
  const first = calls[6]!.result as { event_id: string }
  const retry = calls[8]!.result as { event_id: string; text: string }
  expect(retry.event_id).toBe(first.event_id)
  expect(retry.text).toMatch(/^Already applied/)
  const events = (await memory.query()).reverse()
  expect(events.map((e) => `${e.status} ${e.op}`)).toEqual([
    'committed replace_section',
    'committed append_item',
    'committed append',
  ])
  expect((await memory.verify()).ok).toBe(true)
  // History copies of the profile, one per material edit.
  expect(await agent.fs.readdir('/users/u1/.history/parts/p1/profile')).toHaveLength(2)
  await agent.close()
})
