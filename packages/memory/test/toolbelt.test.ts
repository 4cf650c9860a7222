import { checkAuditKey } from '@agentfs/core'
import type { AgentFS } from '@agentfs/sdk'
import { afterEach, describe, expect, test } from 'vitest'
import { AgentFsEventStore, canonicalHash } from '../src/index.js'
import { KEY, PROFILE, PROFILE_PATH, setupToolbelt } from './fixtures.js'

const agents: AgentFS[] = []
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close()
})

const PATH = PROFILE_PATH

async function setup(options: { key?: typeof KEY | null } = {}) {
  const { agent, tools, run } = await setupToolbelt(agents, options)
  const events = () =>
    agent.db.execute<{ status: string; op: string; tool: string; error: string | null }>({
      sql: 'SELECT status, op, tool, error FROM agentfs_memory_event ORDER BY created_us, rowid',
    })
  return { agent, tools, run, events }
}

describe('the memory toolbelt through createAgentTools', () => {
  test('profile section update: bytes outside kept, history copy, Change Log, one committed event', async () => {
    const { agent, run } = await setup()
    const sections = await run('md_list_sections', { path: PATH })
    expect(sections.data?.sections).toEqual([
      { anchor: 'concerns v1', heading: 'Concerns', start_line: 10 },
      { anchor: 'evidence v1', heading: 'Evidence', start_line: 15 },
      { anchor: 'change-log v1', heading: 'Change Log', start_line: 20 },
    ])
    const out = await run('md_patch_section', {
      path: PATH,
      section_anchor: 'concerns v1',
      replace: 'Fears missing out on friends.',
      rationale: 'user said so on 2026-11-27',
      evidence_refs: ['ev:2026-11-27'],
    })
    expect(out.isError).toBeFalsy()
    const now = await agent.fs.readFile(PATH, 'utf8')
    expect(now.slice(0, now.indexOf('Fears'))).toBe(PROFILE.slice(0, PROFILE.indexOf('Worries')))
    expect(now).toContain('## Evidence\n<!-- @anchor: evidence v1 -->\n- "I never finish anything"')
    expect(now).toMatch(
      /- \d{4}-\d\d-\d\d: replace_section 'concerns v1' — user said so on 2026-11-27\n/,
    )
    expect(out.data).toMatchObject({
      before_hash: canonicalHash(PROFILE),
      after_hash: canonicalHash(now),
      new_hash: canonicalHash(now),
    })
    const history = out.data?.history_path as string
    expect(history).toMatch(/^\/users\/u1\/\.history\/parts\/p1\/profile\/.*\.md$/)
    expect(await agent.fs.readFile(history, 'utf8')).toBe(PROFILE)
    const [event] = await new AgentFsEventStore({
      userId: 'u1',
      key: checkAuditKey(KEY),
      clock: agent.db.clock,
    }).query(agent.db)
    expect(event).toMatchObject({
      status: 'committed',
      type: 'profile_update',
      op: 'replace_section',
      section_anchor: 'concerns v1',
      file_path: PATH,
      evidence_refs: ['ev:2026-11-27'],
      before_hash: canonicalHash(PROFILE),
      after_hash: canonicalHash(now),
      intended_hash: canonicalHash(now),
      integrity_salt_version: 'salt-1',
    })
    expect(event!.tool_call_id).toMatch(/.+/)
    expect(event!.transaction_id).toBeGreaterThan(0)
    // The call's tool_calls row and the event name the same call.
    const [call] = await agent.tools.query({ limit: 1 })
    expect(call?.name).toBe('md_patch_section')
  })

  test('hard blocks through every write tool: refused, nothing written, a failed event', async () => {
    const { agent, run, events } = await setup()
    const attempts: Array<[string, Record<string, unknown>, RegExp]> = [
      [
        'fs_write',
        { path: PATH, content: PROFILE.replace('<!-- @anchor: concerns v1 -->\n', '') },
        /'concerns v1' .* was removed/,
      ],
      [
        'fs_write',
        { path: PATH, content: PROFILE.replace('user_id: u1', 'user_id: u2') },
        /'user_id' would change/,
      ],
      ['fs_write', { path: '/users/u2/notes.md', content: 'x' }, /outside u1's garden/],
      ['fs_write', { path: '/users/u1/.history/x.md', content: 'x' }, /outside u1's garden/],
      [
        'md_patch_section',
        { path: PATH, section_anchor: 'concerns v1', replace: '## New\ntext' },
        /would add a heading/,
      ],
      ['fs_append', { path: PATH, text: '\n<!-- @anchor: concerns v1 -->\n' }, /./],
    ]
    for (const [tool, input, reason] of attempts) {
      const out = await run(tool, input)
      expect(out.isError, `${tool} ${JSON.stringify(input).slice(0, 80)}`).toBe(true)
      expect(out.text).toMatch(reason)
    }
    expect(await agent.fs.readFile(PATH, 'utf8')).toBe(PROFILE)
    expect(await agent.fs.exists('/users/u2/notes.md')).toBe(false)
    const rows = (await events()).rows
    expect(rows.filter((r) => r.status === 'failed').length).toBeGreaterThanOrEqual(4)
    expect(rows.every((r) => r.status === 'failed')).toBe(true)
  })

  test('a retried call changes nothing and answers as the first; the same key with other input is refused', async () => {
    const { agent, run, events } = await setup()
    const input = {
      path: '/users/u1/notes.md',
      text: 'theme: lists\n',
      rationale: 'captured theme',
    }
    const first = await run('fs_append', input)
    const again = await run('fs_append', input)
    expect(again.replayed).toBe(true)
    expect(again.data?.event_id).toBe(first.data?.event_id)
    expect(await agent.fs.readFile('/users/u1/notes.md', 'utf8')).toBe('theme: lists\n')
    const keyed = { path: '/users/u1/notes.md', text: 'two\n', idempotency_key: 'k-1' }
    await run('fs_append', keyed)
    expect((await run('fs_append', keyed)).replayed).toBe(true)
    const other = await run('fs_append', { ...keyed, text: 'three\n' })
    expect(other).toMatchObject({ isError: true, code: 'IDEMPOTENCY_MISMATCH' })
    expect(await agent.fs.readFile('/users/u1/notes.md', 'utf8')).toBe('theme: lists\ntwo\n')
    expect((await events()).rows.map((r) => r.status)).toEqual(['committed', 'committed'])
  })

  test('lint caps need a one-line override rationale, recorded in the event and the Change Log', async () => {
    const { agent, run } = await setup()
    const items = Array.from({ length: 8 }, (_, i) => `- item ${i} (ev:${i})`).join('\n')
    const input = { path: PATH, section_anchor: 'evidence v1', replace: items }
    const refused = await run('md_patch_section', input)
    expect(refused).toMatchObject({ isError: true, code: 'RATIONALE_REQUIRED' })
    expect(refused.text).toMatch(/8 items, over the cap of 7/)
    expect(await agent.fs.readFile(PATH, 'utf8')).toBe(PROFILE)
    expect(
      (await run('md_patch_section', { ...input, override_rationale: 'two\nlines' })).code,
    ).toBe('INVALID_ARGUMENT')
    const ok = await run('md_patch_section', {
      ...input,
      override_rationale: 'all eight are distinct',
    })
    expect(ok.isError).toBeFalsy()
    expect(ok.text).toMatch(/Lint warnings:\n- section 'evidence v1' has 8 items/)
    expect(await agent.fs.readFile(PATH, 'utf8')).toMatch(/\(override: all eight are distinct\)\n/)
    const lint = await run('lint_check', { path: PATH })
    expect(lint.text).toMatch(/^\[cap\] section 'evidence v1'/)
  })

  test('fs_write with if_match, fs_read ranges, fs_hash of a section, events_query, history kept out of reach', async () => {
    const { agent, run } = await setup()
    const notes = '/users/u1/notes.md'
    expect(
      (await run('fs_write', { path: notes, content: 'a\n', if_match: 'absent' })).isError,
    ).toBeFalsy()
    const stale = await run('fs_write', { path: notes, content: 'b\n', if_match: 'absent' })
    expect(stale).toMatchObject({ isError: true, code: 'STALE' })
    const hash = (await run('fs_hash', { path: notes })).text
    expect(
      (await run('fs_write', { path: notes, content: 'b\n', if_match: hash })).isError,
    ).toBeFalsy()
    const read = await run('fs_read', {
      path: PATH,
      ranges: [
        { start: 10, end: 11 },
        { start: 2, end: 2 },
      ],
    })
    expect(read.data?.slices).toEqual([
      { start: 10, end: 11, text: '## Concerns\n<!-- @anchor: concerns v1 -->' },
      { start: 2, end: 2, text: 'id: part-42' },
    ])
    expect((await run('fs_hash', { path: PATH, section_anchor: 'concerns v1' })).text).toBe(
      canonicalHash('Worries about deadlines.\nKeeps lists.\n'),
    )
    expect((await run('fs_read', { path: '/users/u2/notes.md' })).text).toMatch(
      /outside \/users\/u1/,
    )
    // A symlink in the garden that leads elsewhere is never followed by a write.
    await agent.fs.mkdir('/users/u2', { recursive: true })
    await agent.fs.writeFile('/users/u2/notes.md', 'theirs')
    await agent.fs.mkdir('/users/u1/relationships/r1', { recursive: true })
    await agent.fs.symlink('/users/u2/notes.md', '/users/u1/relationships/r1/notes.md')
    const through = await run('fs_append', {
      path: '/users/u1/relationships/r1/notes.md',
      text: 'x',
    })
    expect(through).toMatchObject({ isError: true })
    expect(await agent.fs.readFile('/users/u2/notes.md', 'utf8')).toBe('theirs')
    const q = await run('events_query', { status: 'committed' })
    expect(q.data?.rows).toHaveLength(2)
    const logged = await run('events_log', {
      type: 'observation',
      op: 'noted',
      rationale: 'nothing to write yet',
    })
    expect(logged.data?.event_id).toMatch(/.+/)
  })

  test('event HMACs: a changed event fails verification; the toolbelt needs a key', async () => {
    const { agent, run } = await setup()
    await run('fs_append', { path: '/users/u1/notes.md', text: 'x\n' })
    const store = new AgentFsEventStore({
      userId: 'u1',
      key: checkAuditKey(KEY),
      clock: agent.db.clock,
    })
    expect(await store.verify(agent.db, [checkAuditKey(KEY)])).toMatchObject({
      ok: true,
      checked: 1,
    })
    await agent.db.execute({ sql: "UPDATE agentfs_memory_event SET rationale = 'rewritten'" })
    const report = await store.verify(agent.db, [checkAuditKey(KEY)])
    expect(report).toMatchObject({ ok: false, issues: [{ kind: 'changed' }] })
    const other = await store.verify(agent.db, [
      checkAuditKey({ key: Buffer.alloc(32, 9), id: 'x' }),
    ])
    expect(other.issues[0]?.kind).toBe('unknown-key')

    const { run: keyless } = await setup({ key: null })
    expect((await keyless('fs_append', { path: '/users/u1/notes.md', text: 'x' })).text).toMatch(
      /HMAC key/,
    )
  })
})
