import { AgentFS } from '@agentfs/sdk'
import { afterEach, expect, test } from 'vitest'
import { createAgentTools } from '../src/index.js'

const agents: AgentFS[] = []
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close()
})

async function setup(options: { readOnly?: boolean; allowedRoots?: string[] } = {}) {
  const agent = await AgentFS.open({ path: ':memory:', versions: true })
  agents.push(agent)
  const tools = createAgentTools({
    fs: agent.fs,
    kv: agent.kv,
    changes: agent.changes,
    audit: agent.tools,
    sessionId: 'chat-1',
    ...options,
  })
  const run = (name: string, input: unknown) => tools.get(name)!.execute(input)
  return { agent, tools, run }
}

test('list_changes names the tool call that made each change; paging with next', async () => {
  const { agent, run } = await setup()
  await run('write_file', { path: '/notes.md', content: 'one\n' })
  await agent.fs.writeFile('/direct.txt', 'by the program')
  await run('kv_set', { key: 'k', value: 1 })
  const out = await run('list_changes', {})
  const [write] = await agent.tools.query({ name: 'write_file' })
  expect(out.text).toMatch(
    new RegExp(
      `^#\\d+ \\S+ create /notes.md \\(4 bytes\\) by session chat-1, tool call #${write!.id}$`,
      'm',
    ),
  )
  expect(out.text).toMatch(/create \/direct.txt \(14 bytes\)$/m)
  expect(out.text).toMatch(/kv-set key k by session chat-1, tool call #\d+$/m)
  const first = await run('list_changes', { limit: 1 })
  expect(first.text).toMatch(/\[next: \d+, more changes follow\]/)
  const rest = await run('list_changes', { since: first.data!.next })
  expect(rest.text).not.toMatch(/notes.md/)
  expect((await run('list_changes', { path: '/direct.txt' })).text.split('\n')).toHaveLength(2)
})

test('file_history and restore_version bring back an earlier version, refused when stale', async () => {
  const { agent, run } = await setup()
  await run('write_file', { path: '/doc.md', content: 'first\n' })
  const v1 = (await agent.fs.stat('/doc.md')).version
  await run('write_file', { path: '/doc.md', content: 'second\n', expected_version: v1 })
  const history = await run('file_history', { path: '/doc.md' })
  expect(history.text).toContain(`[version: ${v1}] (readable)`)
  const stale = await run('restore_version', { path: '/doc.md', version: v1, expected_version: v1 })
  expect(stale.isError).toBe(true)
  expect(stale.code).toBe('STALE')
  expect(stale.text).toMatch(/^File has been modified since read \(version \d+, now \d+\)/)
  const restored = await run('restore_version', { path: '/doc.md', version: v1 })
  expect(restored.isError).toBeUndefined()
  expect(await agent.fs.readFile('/doc.md', 'utf8')).toBe('first\n')
  const missing = await run('restore_version', { path: '/doc.md', version: '123' })
  expect(missing.isError).toBe(true)
  expect(missing.text).toMatch(/not kept/)
})

test('read-only sets leave restore_version out; allowed roots hide other paths', async () => {
  const { tools } = await setup({ readOnly: true })
  expect([...tools.keys()]).toContain('file_history')
  expect([...tools.keys()]).not.toContain('restore_version')
  const confined = await setup({ allowedRoots: ['/pub'] })
  await confined.agent.fs.mkdir('/pub')
  await confined.agent.fs.writeFile('/secret.txt', 'x')
  await confined.run('write_file', { path: '/pub/a.txt', content: 'a' })
  const out = await confined.run('list_changes', {})
  expect(out.text).not.toMatch(/secret/)
  expect(out.text).toMatch(/\/pub\/a.txt/)
  const denied = await confined.run('file_history', { path: '/secret.txt' })
  expect(denied.code).toBe('EACCES')
})

test('blame names the tool call and message of each line; a message argument is recorded with the change', async () => {
  const { agent, run } = await setup()
  await run('write_file', {
    path: '/app.ts',
    content: 'const a = 1\nconst b = 2\n',
    message: 'first cut of the app',
  })
  await run('edit_file', { path: '/app.ts', old_string: 'const b = 2', new_string: 'const b = 3' })
  const [write] = await agent.tools.query({ name: 'write_file' })
  const [edit] = await agent.tools.query({ name: 'edit_file' })
  const out = await run('blame', { path: '/app.ts' })
  expect(out.isError).toBeUndefined()
  const lines = out.text.split('\n')
  expect(lines[0]).toMatch(/^\/app.ts \(2 lines, version \d+\):$/)
  const [first, second] = (await agent.fs.blame('/app.ts')).lines
  expect(lines[1]).toBe(`1\t#${first!.change!.seq}\tconst a = 1`)
  expect(lines[2]).toBe(`2\t#${second!.change!.seq}\tconst b = 3`)
  expect(out.text).toMatch(
    new RegExp(
      `^#${first!.change!.seq} \\S+ create session chat-1 tool call write_file #${write!.id} — "first cut of the app"$`,
      'm',
    ),
  )
  expect(out.text).toMatch(new RegExp(`tool call edit_file #${edit!.id}$`, 'm'))
  // the message is in the feed, in file_history and in the audit's parameters
  expect((await agent.changes.since(0)).changes[0]!.message).toBe('first cut of the app')
  expect((await run('file_history', { path: '/app.ts' })).text).toContain('"first cut of the app"')
  expect(write!.parameters).toMatchObject({ message: 'first cut of the app' })
  // paging, and a bad message refused before anything is written
  const page = await run('blame', { path: '/app.ts', offset: 2, limit: 1 })
  expect(page.text.split('\n')[1]).toBe(`2\t#${second!.change!.seq}\tconst b = 3`)
  const bad = await run('write_file', { path: '/x.txt', content: 'x', message: '' })
  expect(bad.code).toBe('EINVAL')
  expect(await agent.fs.exists('/x.txt')).toBe(false)
  expect(tools(await setup({ readOnly: true }))).toContain('blame')
})

test('blame says what is known of lines no change can be named for: between which changes they appeared', async () => {
  const agent = await AgentFS.open({ path: ':memory:' })
  agents.push(agent)
  const tools = createAgentTools({ fs: agent.fs, kv: agent.kv, changes: agent.changes })
  // Versions off: the lines the first write gave are not known after the second one.
  await agent.fs.writeFile('/a.txt', 'one\ntwo\n')
  await agent.fs.writeFile('/a.txt', 'one\ntwo\nthree\n')
  const b = await agent.fs.blame('/a.txt')
  const out = await tools.get('blame')!.execute({ path: '/a.txt' })
  const { after, by } = b.lines[0]!.between!
  expect(out.text).toContain(
    `[3 lines marked ? have no known change: 3 appeared ${after === null ? 'before the oldest change kept' : `after change #${after}`} and by change #${by} — the versions in between are not kept (versions off, trimmed, or past the limit of versions walked)]`,
  )
})

const tools = (s: { tools: Map<string, unknown> }) => [...s.tools.keys()]

test('undelete lists and brings back a deleted file with the call that deleted it; refused when it exists', async () => {
  const { agent, run } = await setup()
  await run('write_file', { path: '/keep.md', content: 'precious\n' })
  await run('delete', { path: '/keep.md' })
  const listed = await run('undelete', { path: '/', list: true })
  const [del] = await agent.tools.query({ name: 'delete' })
  expect(listed.text).toMatch(
    new RegExp(
      `^/keep.md deleted \\S+ \\(#\\d+, tool call #${del!.id}\\) can be undeleted \\(from version\\)$`,
    ),
  )
  const back = await run('undelete', { path: '/keep.md', message: 'the delete was a mistake' })
  expect(back.text).toMatch(/^Undeleted \/keep.md \(file: 1 files, 0 directories, 9 bytes\)/)
  expect(await agent.fs.readFile('/keep.md', 'utf8')).toBe('precious\n')
  expect((await agent.fs.history('/keep.md'))[0]!.message).toBe('the delete was a mistake')
  expect((await run('undelete', { path: '/keep.md' })).code).toBe('EEXIST')
  expect(tools(await setup({ readOnly: true }))).not.toContain('undelete')
})

test('write_file with merge: a stale write merges with the changes made since, or answers merge_conflict', async () => {
  const { agent, run } = await setup()
  await run('write_file', { path: '/plan.md', content: 'one\ntwo\nthree\nfour\n' })
  const read = (await agent.fs.stat('/plan.md')).version
  // Another agent changes the last line after this one read the file.
  await agent.fs.writeFile('/plan.md', 'one\ntwo\nthree\nFOUR (other)\n')
  // Without merge the contract's refusal stands.
  const refused = await run('write_file', {
    path: '/plan.md',
    content: 'ONE (me)\ntwo\nthree\nfour\n',
    expected_version: read,
  })
  expect(refused.code).toBe('STALE')
  const merged = await run('write_file', {
    path: '/plan.md',
    content: 'ONE (me)\ntwo\nthree\nfour\n',
    expected_version: read,
    merge: true,
  })
  expect(merged.isError).toBeUndefined()
  expect(merged.text).toMatch(/your changes were merged with those/)
  expect(merged.data).toMatchObject({ merged: true })
  expect(await agent.fs.readFile('/plan.md', 'utf8')).toBe('ONE (me)\ntwo\nthree\nFOUR (other)\n')

  // The same line changed on both sides: a merge_conflict answer, nothing written.
  const mine = (await agent.fs.stat('/plan.md')).version
  await agent.fs.writeFile('/plan.md', 'ONE (me)\nTWO (other)\nthree\nFOUR (other)\n')
  const now = (await agent.fs.stat('/plan.md')).version
  const conflict = await run('write_file', {
    path: '/plan.md',
    content: 'ONE (me)\nTWO (me)\nthree\nFOUR (other)\n',
    expected_version: mine,
    merge: true,
  })
  expect(conflict.isError).toBe(true)
  expect(conflict.code).toBe('MERGE_CONFLICT')
  expect(conflict.text).toBe(
    [
      `Merge conflict: /plan.md changed since you read it (version ${mine}, now ${now}), and 1 region(s) were changed both by you and by the others. Nothing was written.`,
      'Region 1 — your lines 2–2, current lines 2–2:',
      '<<<<<<< yours',
      'TWO (me)',
      `||||||| version ${mine} (what you read)`,
      'two',
      '=======',
      'TWO (other)',
      `>>>>>>> current (version ${now})`,
      `Resolve each region, then write the whole file with expected_version ${now}.`,
    ].join('\n'),
  )
  expect(conflict.data).toEqual({
    version: now,
    conflicts: [
      {
        ours: 'TWO (me)\n',
        base: 'two\n',
        theirs: 'TWO (other)\n',
        oursLine: 2,
        baseLine: 2,
        theirsLine: 2,
      },
    ],
  })
  expect(await agent.fs.readFile('/plan.md', 'utf8')).toBe(
    'ONE (me)\nTWO (other)\nthree\nFOUR (other)\n',
  )
  // Resolved and written with the current version, as the answer says.
  const resolved = await run('write_file', {
    path: '/plan.md',
    content: 'ONE (me)\nTWO (both)\nthree\nFOUR (other)\n',
    expected_version: now,
    merge: true,
  })
  expect(resolved.isError).toBeUndefined()
  expect(resolved.data).not.toHaveProperty('merged')
  // The audit keeps the conflict answer whole.
  const calls = await agent.tools.query({ name: 'write_file' })
  expect(
    calls.some((c) => JSON.stringify(c.error ?? c.result).includes('Merge conflict: /plan.md')),
  ).toBe(true)
})

test('write_file with merge where the version read is not kept: a stale answer that says so', async () => {
  const agent = await AgentFS.open({ path: ':memory:' })
  agents.push(agent)
  const tools = createAgentTools({ fs: agent.fs, kv: agent.kv })
  await agent.fs.writeFile('/a.txt', 'one\n')
  const read = (await agent.fs.stat('/a.txt')).version
  await agent.fs.writeFile('/a.txt', 'two\n')
  const out = await tools
    .get('write_file')!
    .execute({ path: '/a.txt', content: 'three\n', expected_version: read, merge: true })
  expect(out.code).toBe('STALE')
  expect(out.text).toMatch(/version \d+ is not kept, so your write cannot be merged/)
  expect(await agent.fs.readFile('/a.txt', 'utf8')).toBe('two\n')
})
