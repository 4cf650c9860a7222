import type { AgentFS } from '@agentfs/sdk'
import { createTwoFilesPatch } from 'diff'
import { afterEach, describe, expect, test } from 'vitest'
import { applyUnifiedDiff, curateList } from '../src/index.js'
import { PROFILE, PROFILE_PATH, setupToolbelt } from './fixtures.js'

const agents: AgentFS[] = []
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close()
})

const PATH = PROFILE_PATH
const setup = (options: { allowMove?: boolean } = {}) => setupToolbelt(agents, { tools: options })

describe('unified diffs, applied exactly', () => {
  const diff = `--- a/profile.md
+++ b/profile.md
@@ -12,2 +12,2 @@
 Worries about deadlines.
-Keeps lists.
+Keeps lists and calendars.
@@ -21,2 +21,3 @@
 <!-- @anchor: change-log v1 -->
 - 2026-01-05: created
+- 2026-02-01: calendars
`
  test('every hunk applied at its line; a hunk that does not fit is named and nothing changes', () => {
    const after = applyUnifiedDiff(PROFILE, diff)
    expect(after).toBe(
      PROFILE.replace('Keeps lists.', 'Keeps lists and calendars.').replace(
        '- 2026-01-05: created\n',
        '- 2026-01-05: created\n- 2026-02-01: calendars\n',
      ),
    )
    const moved = PROFILE.replace('Keeps lists.', 'Keeps piles.')
    expect(() => applyUnifiedDiff(moved, diff)).toThrow(
      /hunk 1 of 2 \(@@ -12,2 \+12,2 @@\) does not apply: line 13 is "Keeps piles.", the hunk expects "Keeps lists."/,
    )
    // The same lines elsewhere do not count: a hunk applies where it says or not at all.
    const shifted = `\n\n${PROFILE}`
    expect(() => applyUnifiedDiff(shifted, diff)).toThrow(/hunk 1 of 2/)
    expect(() => applyUnifiedDiff(PROFILE, 'not a diff')).toThrow(/no hunks/)
  })

  test('many hunks over a long file: each checked where its header puts it, applied together', () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => `line ${i}`)
    const before = `${lines.join('\n')}\n`
    const edited = lines.map((l, i) => (i % 40 === 7 ? `${l} (edited)` : l))
    edited.splice(100, 0, 'inserted')
    const after = `${edited.join('\n')}\n`
    const diff = createTwoFilesPatch('a', 'b', before, after)
    expect(diff.match(/^@@/gm)!.length).toBeGreaterThan(400)
    expect(applyUnifiedDiff(before, diff)).toBe(after)
    // Hunks out of order are refused, not applied somewhere.
    const [head, ...hunks] = diff.split(/^(?=@@)/m)
    const swapped = [head, hunks[1], hunks[0], ...hunks.slice(2)].join('')
    expect(() => applyUnifiedDiff(before, swapped)).toThrow(
      /hunk 2 of \d+ .* overlaps|comes before/,
    )
  })
})

describe('list curation', () => {
  test('append, prune by a unique part, merge into one where the first was', () => {
    const after = curateList(PROFILE, 'evidence v1', [
      { op: 'append', item: '"Calendars help" (ev:2026-02-01)' },
      {
        op: 'merge',
        items: ['never finish', 'keep me safe'],
        into: '"Finishing is hard; lists help" (ev:2026-01-02, ev:2026-01-05)',
      },
    ])
    expect(after).toBe(
      PROFILE.replace(
        '- "I never finish anything" (ev:2026-01-02)\n- "Lists keep me safe" (ev:2026-01-05)\n',
        '- "Finishing is hard; lists help" (ev:2026-01-02, ev:2026-01-05)\n- "Calendars help" (ev:2026-02-01)\n',
      ),
    )
    expect(curateList(PROFILE, 'evidence v1', [{ op: 'prune', item: 'Lists keep' }])).not.toContain(
      'Lists keep',
    )
    expect(() => curateList(PROFILE, 'evidence v1', [{ op: 'prune', item: 'ev:2026' }])).toThrow(
      /2 items contain/,
    )
    expect(() =>
      curateList(PROFILE, 'evidence v1', [{ op: 'append', item: 'two\nlines' }]),
    ).toThrow(/one non-empty line/)
  })
})

describe('the rest of the toolbelt', () => {
  test('fs_patch, md_curate_list, propose_change: checked like every write', async () => {
    const { agent, run } = await setup()
    const bad = await run('fs_patch', {
      path: PATH,
      diff_text:
        '@@ -11,1 +11,1 @@\n-<!-- @anchor: concerns v1 -->\n+<!-- @anchor: worries v1 -->\n',
    })
    expect(bad).toMatchObject({ isError: true, code: 'BLOCKED' })
    expect(await agent.fs.readFile(PATH, 'utf8')).toBe(PROFILE)
    const ok = await run('fs_patch', {
      path: PATH,
      diff_text: '@@ -13,1 +13,1 @@\n-Keeps lists.\n+Keeps lists and notes.\n',
      rationale: 'typo',
    })
    expect(ok.isError).toBeFalsy()
    expect(await agent.fs.readFile(PATH, 'utf8')).toContain('Keeps lists and notes.\n')
    const curated = await run('md_curate_list', {
      path: PATH,
      section_anchor: 'evidence v1',
      ops: [{ op: 'append', item: '"New" (ev:2026-03-01)' }],
      reason: 'new evidence',
    })
    expect(curated.isError).toBeFalsy()
    const events = await run('events_query', {})
    expect(events.text).toMatch(/committed profile_update\/append_item .*#evidence v1/)
    const before = await agent.fs.readFile(PATH, 'utf8')
    const dry = await run('propose_change', {
      path: PATH,
      section_anchor: 'concerns v1',
      replace: '## Oops',
    })
    expect(dry).toMatchObject({ isError: true, code: 'BLOCKED' })
    const dry2 = await run('propose_change', {
      path: PATH,
      content: before.replace('id: part-42', 'id: x'),
    })
    expect(dry2.data).toMatchObject({ blocked: true, requires_approval: false })
    expect(dry2.text).toMatch(/-id: part-42\n\+id: x/)
    expect(await agent.fs.readFile(PATH, 'utf8')).toBe(before)
  })

  test('fs_list, fs_search and fs_ensure_dir stay in the user folder', async () => {
    const { agent, run } = await setup()
    await agent.fs.mkdir('/users/u2', { recursive: true })
    await agent.fs.writeFile('/users/u2/notes.md', 'deadlines too')
    expect((await run('fs_list', {})).text).toBe(`${PATH}\t${Buffer.byteLength(PROFILE)}`)
    const found = await run('fs_search', { pattern: 'dead(line)s' })
    expect(found.data?.matches).toEqual([
      { path: PATH, line: 12, match: 'Worries about deadlines.' },
    ])
    expect((await run('fs_search', { root: '/users', pattern: 'x' })).code).toBe('BLOCKED')
    // A link in the user's folder to another user's file shows nothing of it.
    await agent.fs.symlink('/users/u2/notes.md', '/users/u1/notes.md')
    expect((await run('fs_search', { pattern: 'deadlines too' })).data?.matches).toEqual([])
    expect((await run('fs_search', { pattern: '(a)\\1' })).isError).toBe(true)
    expect((await run('fs_ensure_dir', { path: '/users/u1/relationships/r9' })).isError).toBeFalsy()
    expect(await agent.fs.exists('/users/u1/relationships/r9')).toBe(true)
    expect((await run('fs_ensure_dir', { path: '/users/u1/elsewhere/deep' })).code).toBe('BLOCKED')
  })

  test('fs_move is absent unless enabled, and moves only between garden files', async () => {
    const { tools } = await setup()
    expect(tools.has('fs_move')).toBe(false)
    const { agent, run } = await setup({ allowMove: true })
    await agent.fs.writeFile('/users/u1/notes.md', 'n\n')
    expect(
      (await run('fs_move', { path: '/users/u1/notes.md', new_path: '/users/u1/overview.md' }))
        .isError,
    ).toBeFalsy()
    expect(await agent.fs.readFile('/users/u1/overview.md', 'utf8')).toBe('n\n')
    expect(
      (await run('fs_move', { path: '/users/u1/overview.md', new_path: '/tmp/x.md' })).code,
    ).toBe('BLOCKED')
    expect((await run('fs_move', { path: PATH, new_path: '/users/u1/overview.md' })).code).toBe(
      'EEXIST',
    )
  })
})
