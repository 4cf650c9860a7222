import { createHash } from 'node:crypto'
import { fixedClock } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { afterEach, describe, expect, test } from 'vitest'
import { type AgentToolsOptions, createAgentTools } from '../src/index.js'

const agents: AgentFS[] = []
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close()
})

async function setup(options: Partial<AgentToolsOptions> = {}) {
  const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  agents.push(agent)
  const tools = createAgentTools({
    fs: agent.fs,
    kv: agent.kv,
    audit: agent.tools,
    sessionId: 's1',
    ...options,
  })
  const run = (name: string, input: unknown) => tools.get(name)!.execute(input)
  return { agent, tools, run }
}

describe('read_file', () => {
  test('cat -n numbering, offset/limit with a continue hint, version, empty and binary files, long lines', async () => {
    const { agent, run } = await setup()
    await agent.fs.writeFile(
      '/a.txt',
      Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n') + '\n',
    )
    const all = await run('read_file', { path: '/a.txt' })
    expect(all.text.split('\n')[0]).toBe('     1\tline 1')
    expect(all.text).toMatch(/\[version: \d+\]$/)
    expect(all.data?.version).toBe((await agent.fs.stat('/a.txt')).version)
    const page = await run('read_file', { path: 'a.txt', offset: 10, limit: 5 })
    expect(page.text.split('\n').slice(0, 5)).toEqual([
      '    10\tline 10',
      '    11\tline 11',
      '    12\tline 12',
      '    13\tline 13',
      '    14\tline 14',
    ])
    expect(page.text).toContain('continue with offset 15')
    await agent.fs.writeFile('/empty.txt', '')
    expect((await run('read_file', { path: '/empty.txt' })).text).toMatch(/exists but is empty/)
    await agent.fs.writeFile('/bin', new Uint8Array([0, 1, 2, 3]))
    expect((await run('read_file', { path: '/bin' })).text).toMatch(/binary file \(4 bytes\)/)
    await agent.fs.writeFile('/long.txt', 'x'.repeat(5000))
    expect((await run('read_file', { path: '/long.txt' })).text).toContain(
      '[line truncated: 5000 characters]',
    )
    const missing = await run('read_file', { path: '/nope.txt' })
    expect(missing).toMatchObject({ isError: true, code: 'ENOENT' })
    expect(missing.text).toContain("'/nope.txt'")
    expect(await run('read_file', { path: '/' })).toMatchObject({ isError: true, code: 'EISDIR' })
  })
})

describe('edit_file and write_file', () => {
  test('unique match, not found, ambiguous with line numbers, no change, replace_all, old_str alias', async () => {
    const { agent, run } = await setup()
    await agent.fs.writeFile('/f.ts', 'const a = 1\nconst b = 2\nconst a2 = 1\n')
    const ok = await run('edit_file', {
      path: '/f.ts',
      old_string: 'const b = 2',
      new_string: 'const b = 3',
    })
    expect(ok.isError).toBeUndefined()
    expect(ok.text).toContain('     2\tconst b = 3')
    const missing = await run('edit_file', { path: '/f.ts', old_string: 'nope', new_string: 'x' })
    expect(missing.text).toMatch(/^String to replace not found in file\.\nString: nope\n/)
    expect(missing.text).toContain('No similar text was found in the file either.')
    const ambiguous = await run('edit_file', {
      path: '/f.ts',
      old_string: '= 1',
      new_string: '= 9',
    })
    expect(ambiguous.text).toMatch(
      /^Found 2 matches of the string to replace, but replace_all is false\./,
    )
    expect(ambiguous.text).toContain('Matches at lines: 1, 3')
    expect((await run('edit_file', { path: '/f.ts', old_string: 'a', new_string: 'a' })).text).toBe(
      'No changes to make: old_string and new_string are exactly the same.',
    )
    await run('edit_file', { path: '/f.ts', old_str: '= 1', new_str: '= 9', replace_all: true })
    expect(await agent.fs.readFile('/f.ts', 'utf8')).toBe(
      'const a = 9\nconst b = 3\nconst a2 = 9\n',
    )
  })

  test('a stale expected_version is refused with both versions and a diff; nothing is written', async () => {
    const { agent, run } = await setup()
    const written = await run('write_file', { path: '/docs/note.md', content: 'v1\n' })
    const version = written.data?.version as string
    await agent.fs.writeFile('/docs/note.md', 'changed by someone else\n')
    const now = (await agent.fs.stat('/docs/note.md')).version
    const stale = await run('write_file', {
      path: '/docs/note.md',
      content: 'mine\n',
      expected_version: version,
    })
    expect(stale.code).toBe('STALE')
    expect(stale.text).toContain(
      `File has been modified since read (version ${version}, now ${now}). Read it again before attempting to write it.`,
    )
    expect(stale.text).toContain('-changed by someone else')
    expect(stale.text).toContain('+mine')
    expect(await agent.fs.readFile('/docs/note.md', 'utf8')).toBe('changed by someone else\n')
    const staleEdit = await run('edit_file', {
      path: '/docs/note.md',
      old_string: 'someone',
      new_string: 'me',
      expected_version: version,
    })
    expect(staleEdit.code).toBe('STALE')
  })

  test('a stale write of a whole rewritten file answers at once with a bounded diff', async () => {
    const { agent, run } = await setup()
    const lines = (tag: string) =>
      `${Array.from({ length: 10_000 }, (_, i) => `line ${i} ${tag}`).join('\n')}\n`
    const written = await run('write_file', { path: '/big.txt', content: lines('v1') })
    await agent.fs.writeFile('/big.txt', lines('theirs'))
    // Quadratic diffing took 48 s here; bounded, it is one linear hunk (a hang guard, not a
    // speed target: the bench measures speed).
    const started = Date.now()
    const stale = await run('write_file', {
      path: '/big.txt',
      content: lines('mine'),
      expected_version: written.data?.version as string,
    })
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(stale.code).toBe('STALE')
    expect(stale.text).toContain('-line 0 theirs')
    expect(stale.text).toContain('[diff truncated]')
  })

  test('multi_edit checks every edit first and applies all or nothing, across files', async () => {
    const { agent, run } = await setup()
    await agent.fs.writeFile('/x.txt', 'alpha beta\n')
    await agent.fs.writeFile('/y.txt', 'gamma\n')
    const failed = await run('multi_edit', {
      edits: [
        { path: '/x.txt', old_string: 'alpha', new_string: 'ALPHA' },
        { path: '/y.txt', old_string: 'missing', new_string: '?' },
      ],
    })
    expect(failed.code).toBe('NOT_FOUND')
    expect(await agent.fs.readFile('/x.txt', 'utf8')).toBe('alpha beta\n')
    const ok = await run('multi_edit', {
      path: '/x.txt',
      edits: [
        { old_string: 'alpha', new_string: 'ALPHA' },
        { old_string: 'beta', new_string: 'BETA' },
        { path: '/y.txt', old_str: 'gamma', new_str: 'GAMMA' },
      ],
    })
    expect(ok.isError).toBeUndefined()
    expect(await agent.fs.readFile('/x.txt', 'utf8')).toBe('ALPHA BETA\n')
    expect(await agent.fs.readFile('/y.txt', 'utf8')).toBe('GAMMA\n')
  })
})

describe('hash', () => {
  test('write_file and edit_file answer with the hash of what they wrote; hash agrees, canonical too', async () => {
    const { agent, run } = await setup()
    const sha = (text: string) => `sha256:${createHash('sha256').update(text).digest('hex')}`
    const wrote = await run('write_file', { path: '/n.md', content: 'one  \r\ntwo' })
    expect(wrote.data).toMatchObject({ sha256: sha('one  \r\ntwo') })
    expect(wrote.text).toMatch(/\[version: \d+\] \[sha256:[0-9a-f]{64}\]$/)
    const hashed = await run('hash', { path: '/n.md' })
    expect(hashed.data).toMatchObject({ hash: sha('one  \r\ntwo'), size: 10, canonical: false })
    expect(hashed.data!.version).toBe((await agent.fs.stat('/n.md')).version)
    expect(hashed.text).toBe(
      `${sha('one  \r\ntwo')} /n.md (10 bytes) [version: ${hashed.data!.version}]`,
    )
    const canonical = await run('hash', { path: '/n.md', canonical: true })
    expect(canonical.data).toMatchObject({ hash: sha('one\ntwo\n'), canonical: true })
    const edited = await run('edit_file', { path: '/n.md', old_string: 'two', new_string: '2' })
    expect(edited.data!.sha256).toBe(sha('one  \r\n2'))
    expect((await run('hash', { path: '/n.md' })).data!.hash).toBe(edited.data!.sha256)
    expect((await run('hash', { path: '/missing' })).code).toBe('ENOENT')
  })
})

describe('tree tools', () => {
  test('list_directory, glob (newest first), grep modes, mkdir, move, copy, delete, stat', async () => {
    const { agent, run } = await setup()
    await run('mkdir', { path: '/src/lib' })
    await run('write_file', { path: '/src/a.ts', content: 'export const a = 1 // TODO\n' })
    await run('write_file', { path: '/src/lib/b.ts', content: 'one\ntwo TODO\nthree\n' })
    expect((await run('list_directory', { path: '/src' })).text).toBe(
      '/src:\na.ts  (file, 27 bytes)\nlib/',
    )
    expect((await run('list_directory', { path: '/', depth: 3 })).text).toContain(
      '    b.ts  (file, 19 bytes)',
    )
    expect((await run('glob', { pattern: '**/*.ts' })).text).toBe('/src/lib/b.ts\n/src/a.ts')
    expect((await run('grep', { pattern: 'TODO' })).text).toBe('/src/a.ts\n/src/lib/b.ts')
    expect((await run('grep', { pattern: 'todo', '-i': true, output_mode: 'count' })).text).toBe(
      '/src/a.ts:1\n/src/lib/b.ts:1',
    )
    expect(
      (await run('grep', { pattern: 'TODO', path: '/src/lib', output_mode: 'content', '-C': 1 }))
        .text,
    ).toBe('/src/lib/b.ts-1-one\n/src/lib/b.ts:2:two TODO\n/src/lib/b.ts-3-three')
    expect((await run('grep', { pattern: '(' })).code).toBe('EINVAL')
    await run('move', { from: '/src/a.ts', to: '/moved/a.ts' })
    await run('copy', { from: '/src', to: '/backup/src' })
    expect(await agent.fs.readdir('/backup/src/lib')).toEqual(['b.ts'])
    expect((await run('delete', { path: '/backup' })).code).toBe('ENOTEMPTY')
    await run('delete', { path: '/backup', recursive: true })
    expect((await run('stat', { path: '/moved/a.ts' })).text).toMatch(
      /^path: \/moved\/a.ts\ntype: file\nsize: 27/,
    )
    expect((await run('delete', { path: '/' })).code).toBe('EPERM')
  })
})

describe('kv tools', () => {
  test('get, set with versions and stale refusal, delete, list by prefix', async () => {
    const { run } = await setup()
    const set = await run('kv_set', { key: 'user:prefs', value: { theme: 'dark' } })
    expect(set.text).toBe("Stored 'user:prefs'. [version: 1]")
    expect((await run('kv_get', { key: 'user:prefs' })).data).toEqual({
      value: { theme: 'dark' },
      version: 1,
    })
    await run('kv_set', { key: 'user:prefs', value: { theme: 'light' } })
    expect((await run('kv_set', { key: 'user:prefs', value: 1, expected_version: 1 })).code).toBe(
      'STALE',
    )
    await run('kv_set', { key: 'user:name', value: 'Ada' })
    expect((await run('kv_list', { prefix: 'user:' })).text).toBe(
      'user:name = "Ada"\nuser:prefs = {"theme":"light"}',
    )
    expect((await run('kv_delete', { key: 'user:name' })).text).toBe("Deleted 'user:name'.")
    expect((await run('kv_get', { key: 'user:name' })).code).toBe('NOT_FOUND')
  })
})

describe('options and audit', () => {
  test('every call is recorded once, failures included, with the session', async () => {
    const { agent, run } = await setup()
    await run('write_file', { path: '/a', content: 'x' })
    await run('read_file', { path: '/missing' })
    await run('read_file', { nope: true })
    const calls = await agent.tools.bySession('s1')
    expect(calls.map((c) => [c.name, c.status])).toEqual([
      ['write_file', 'success'],
      ['read_file', 'error'],
      ['read_file', 'error'],
    ])
    expect(calls[0]!.parameters).toEqual({ path: '/a', content: 'x' })
    expect(calls[2]!.error).toMatch(/invalid input for read_file/)
  })

  test('a large write is audited whole; a full payload store refuses calls before they run, recorded once', async () => {
    const { agent, run } = await setup()
    const content = 'y'.repeat(300_000)
    expect((await run('write_file', { path: '/big', content })).isError).toBeFalsy()
    const [written] = await agent.tools.bySession('s1')
    expect(written?.parameters).toEqual({ path: '/big', content })
    expect(Object.keys(written?.payloads ?? {})).toEqual(['parameters'])
    await agent.tools.setBudget(350_000)
    // Over the budget: refused, nothing written, one record of the refusal.
    for (const [input, keyed] of [
      [{ path: '/b', content }, false],
      [{ path: '/b', content, idempotency_key: 'k-1' }, true],
    ] as const) {
      const out = await run('write_file', input)
      expect(out).toMatchObject({ isError: true, code: 'ENOSPC' })
      expect(out.text).toMatch(/^Error: write_file was refused: the audit's payload store is full/)
      expect(await agent.fs.exists('/b')).toBe(false)
      const calls = await agent.tools.bySession('s1')
      expect(calls.length).toBe(keyed ? 3 : 2)
      expect(calls.at(-1)?.error).toMatch(/^refused before it ran/)
    }
    // A small call still fits.
    expect((await run('write_file', { path: '/c', content: 'small' })).isError).toBeFalsy()
  })

  test('root, allowed roots (no escape by .. or symlink), read-only, subset, prefix and rename', async () => {
    const { agent } = await setup()
    await agent.fs.mkdir('/workspace/project', { recursive: true })
    await agent.fs.writeFile('/secret.txt', 'secret')
    await agent.fs.symlink('/secret.txt', '/workspace/project/link')
    const jailed = createAgentTools({ fs: agent.fs, root: '/workspace' })
    const write = await jailed.get('write_file')!.execute({ path: '/project/x.md', content: 'hi' })
    expect(write.text).toContain('/project/x.md')
    expect(await agent.fs.readFile('/workspace/project/x.md', 'utf8')).toBe('hi')
    // .. above the root is a traversal attempt: refused with that name, not clamped to the root.
    const climb = await jailed.get('read_file')!.execute({ path: '/../secret.txt' })
    expect(climb.code).toBe('EACCES')
    expect(climb.text).toMatch(/path traversal/)
    expect((await jailed.get('read_file')!.execute({ path: '/project/link' })).code).toBe('EACCES')
    const limited = createAgentTools({ fs: agent.fs, allowedRoots: ['/workspace'] })
    expect((await limited.get('read_file')!.execute({ path: '/secret.txt' })).code).toBe('EACCES')
    const readOnly = createAgentTools({ fs: agent.fs, kv: agent.kv, readOnly: true })
    expect([...readOnly.keys()]).toEqual([
      'read_file',
      'hash',
      'exists',
      'list_directory',
      'glob',
      'grep',
      'stat',
      'search',
      'kv_get',
      'kv_list',
      'file_history',
      'blame',
    ])
    const custom = createAgentTools({
      fs: agent.fs,
      include: ['read_file', 'glob'],
      prefix: 'fs_',
      rename: { glob: 'find' },
    })
    expect([...custom.keys()]).toEqual(['fs_read_file', 'fs_find'])
    expect(() => createAgentTools({ fs: agent.fs, include: ['nope'] })).toThrow(
      /Unknown tool 'nope'/,
    )
  })
})
