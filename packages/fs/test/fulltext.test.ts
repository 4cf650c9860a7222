import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type AgentDatabase, type Driver, fixedClock, fsck, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { tursoDriver } from '@agentfs/driver-turso'
import { withoutFts5, withoutRecursiveQueries, withSlotIds } from '@agentfs/test-kit'
import { afterEach, describe, expect, test } from 'vitest'
import { createFileSystem, type SqlFileSystem } from '../src/index.js'
import { code, typedCode } from './helpers.js'

const ENGINES: Record<string, { driver: () => Driver; store: 'fts5' | 'postings' }> = {
  'better-sqlite3': { driver: () => betterSqlite3Driver({ path: ':memory:' }), store: 'fts5' },
  'better-sqlite3, no FTS5': {
    driver: () => withoutFts5(betterSqlite3Driver({ path: ':memory:' })),
    store: 'postings',
  },
  libsql: { driver: () => libsqlDriver({ url: ':memory:' }), store: 'fts5' },
  turso: { driver: () => tursoDriver({ path: ':memory:' }), store: 'postings' },
  'turso, slot ids': {
    driver: () => withSlotIds(tursoDriver({ path: ':memory:' })),
    store: 'postings',
  },
  'better-sqlite3, no WITH RECURSIVE': {
    driver: () => withoutRecursiveQueries(betterSqlite3Driver({ path: ':memory:' })),
    store: 'fts5',
  },
}

const closing: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const db of closing.splice(0)) await db.close()
})

async function fresh(engine: string): Promise<SqlFileSystem> {
  return (await freshDb(engine)).fs
}

async function freshDb(engine: string): Promise<{ fs: SqlFileSystem; db: AgentDatabase }> {
  const db = await openDatabase({ driver: ENGINES[engine]!.driver(), clock: fixedClock() })
  closing.push(db)
  return { fs: createFileSystem(db), db }
}

const paths = (result: { hits: readonly { path: string }[] }) => result.hits.map((h) => h.path)

for (const engine of Object.keys(ENGINES)) {
  describe(`full-text search (${engine})`, () => {
    test('ranks files by BM25 and shows the lines where the words are', async () => {
      const fs = await fresh(engine)
      await fs.mkdir('/docs')
      await fs.writeFile(
        '/docs/retry.md',
        '# Retries\n\nThe client retries a request.\nRetry budget: 3 retries per request.\n',
      )
      await fs.writeFile('/docs/auth.md', 'Auth tokens expire.\nA request without a token fails.\n')
      await fs.writeFile('/docs/other.md', 'Nothing here.\n')
      const result = await fs.search('request retries')
      expect(result.store).toBe(ENGINES[engine]!.store)
      expect(result.behind).toBe(0)
      expect(paths(result)).toEqual(['/docs/retry.md'])
      const hit = result.hits[0]!
      expect(hit.score).toBeGreaterThan(0)
      expect(hit.version).toBe((await fs.stat('/docs/retry.md')).version)
      expect(hit.lines).toEqual([
        { line: 1, text: '# Retries' },
        { line: 3, text: 'The client retries a request.' },
        { line: 4, text: 'Retry budget: 3 retries per request.' },
      ])
      // One word: both files, the one where it weighs more first.
      expect(paths(await fs.search('request'))).toEqual(['/docs/retry.md', '/docs/auth.md'])
    })

    test('never finds a file by words it no longer holds: rewrite, delete, rename, truncate', async () => {
      const fs = await fresh(engine)
      await fs.writeFile('/a.txt', 'alpha beta')
      await fs.writeFile('/b.txt', 'beta gamma')
      expect(paths(await fs.search('beta'))).toHaveLength(2)
      await fs.writeFile('/a.txt', 'delta')
      expect(paths(await fs.search('alpha'))).toEqual([])
      expect(paths(await fs.search('delta'))).toEqual(['/a.txt'])
      await fs.unlink('/b.txt')
      expect(paths(await fs.search('beta'))).toEqual([])
      await fs.mkdir('/d')
      await fs.rename('/a.txt', '/d/moved.txt')
      expect(paths(await fs.search('delta'))).toEqual(['/d/moved.txt'])
      await fs.appendFile('/d/moved.txt', ' epsilon')
      expect(paths(await fs.search('epsilon'))).toEqual(['/d/moved.txt'])
      await fs.truncate('/d/moved.txt', 2)
      expect(paths(await fs.search('delta'))).toEqual([])
      await fs.rm('/d', { recursive: true })
      expect(paths(await fs.search('de*'))).toEqual([])
    })

    test('phrases, prefixes and words the tokenizer splits', async () => {
      const fs = await fresh(engine)
      await fs.writeFile('/1', 'max retry count is three')
      await fs.writeFile('/2', 'retry max: the count')
      await fs.writeFile('/3', 'config_loader reads Configuration')
      expect(paths(await fs.search('"max retry"'))).toEqual(['/1'])
      expect(paths(await fs.search('"retry max"'))).toEqual(['/2'])
      expect((await fs.search('max retry')).hits).toHaveLength(2)
      expect(paths(await fs.search('conf*'))).toEqual(['/3'])
      expect(paths(await fs.search('"max ret"*'))).toEqual(['/1'])
      // snake_case is two words: the query's bare word becomes their phrase.
      expect(paths(await fs.search('config_loader'))).toEqual(['/3'])
      expect(paths(await fs.search('CONFIGURATION'))).toEqual(['/3'])
      // Unicode: NFKC and case folding on both sides.
      await fs.writeFile('/4', 'Ｃafé ÜBER straße')
      expect(paths(await fs.search('café über'))).toEqual(['/4'])
    })

    test('below a path, with a limit; hard links found once', async () => {
      const fs = await fresh(engine)
      await fs.mkdir('/src/deep', { recursive: true })
      await fs.mkdir('/test')
      for (let i = 0; i < 30; i++)
        await fs.writeFile(`/src/deep/f${i}.ts`, `widget ${'pad '.repeat(i)}`)
      await fs.writeFile('/test/widget.test.ts', 'widget widget')
      await fs.writeFile('/src/one.ts', 'widget')
      await fs.link('/src/one.ts', '/src/two.ts')
      expect((await fs.search('widget')).hits).toHaveLength(20)
      expect((await fs.search('widget', { limit: 100 })).hits).toHaveLength(32)
      const under = await fs.search('widget', { path: '/src/deep', limit: 5 })
      expect(paths(under)).toEqual([
        '/src/deep/f0.ts',
        '/src/deep/f1.ts',
        '/src/deep/f2.ts',
        '/src/deep/f3.ts',
        '/src/deep/f4.ts',
      ])
      expect(paths(await fs.search('widget', { path: '/test' }))).toEqual(['/test/widget.test.ts'])
      expect(paths(await fs.search('widget', { path: '/test/widget.test.ts' }))).toEqual([
        '/test/widget.test.ts',
      ])
      expect(await code(fs.search('widget', { path: '/nope' }))).toBe('ENOENT')
    })

    test('binary and oversized files are not indexed; settings choose files by glob and size', async () => {
      const fs = await fresh(engine)
      await fs.writeFile('/bin', new Uint8Array([0x77, 0x6f, 0x72, 0x64, 0, 1, 2]))
      await fs.writeFile('/latin1', new Uint8Array([0x77, 0x6f, 0x72, 0x64, 0x20, 0xe9]))
      await fs.writeFile('/big.txt', `word ${'x'.repeat(2000)}`)
      await fs.mkdir('/node_modules/pkg', { recursive: true })
      await fs.writeFile('/node_modules/pkg/index.js', 'word')
      await fs.writeFile('/keep.js', 'word')
      expect((await fs.search('word')).hits).toHaveLength(3)
      const settings = await fs.setSearchSettings({
        maxFileSize: 1000,
        exclude: ['node_modules/**'],
      })
      expect(settings).toEqual({
        maxFileSize: 1000,
        include: [],
        exclude: ['node_modules/**'],
        store: 'auto',
      })
      expect(await fs.searchSettings()).toEqual(settings)
      expect(paths(await fs.search('word'))).toEqual(['/keep.js'])
      // A rename changes which files the globs take, with no change of content.
      await fs.rename('/node_modules/pkg', '/pkg')
      expect(paths(await fs.search('word')).sort()).toEqual(['/keep.js', '/pkg/index.js'])
      await fs.rename('/keep.js', '/node_modules/keep.js')
      expect(paths(await fs.search('word'))).toEqual(['/pkg/index.js'])
      await fs.setSearchSettings({ include: ['*.js'] })
      expect(paths(await fs.search('word')).sort()).toEqual([
        '/node_modules/keep.js',
        '/pkg/index.js',
      ])
      expect(await typedCode(fs.setSearchSettings({ maxFileSize: -1 }))).toBe('INVALID_ARGUMENT')
      expect(await typedCode(fs.setSearchSettings({ include: [''] }))).toBe('INVALID_ARGUMENT')
      expect(await fs.searchSettings()).toEqual({
        maxFileSize: 8 << 20,
        include: ['*.js'],
        exclude: [],
        store: 'auto',
      })
    })

    test('a policy hides what it does not let be read, before the limit', async () => {
      const fs = await fresh(engine)
      await fs.mkdir('/secret')
      for (let i = 0; i < 5; i++) await fs.writeFile(`/secret/s${i}`, 'token token token')
      await fs.writeFile('/open.txt', 'token')
      const agent = fs.restrict({ read: ['/', '/open.txt'] })
      expect(paths(await agent.search('token', { limit: 1 }))).toEqual(['/open.txt'])
      expect(await code(agent.search('token', { path: '/secret' }))).toBe('EACCES')
      expect(await code(agent.setSearchSettings({}))).toBe('EPERM')
    })

    test('fsck checks that the index equals the content; repair empties it, search rebuilds it', async () => {
      const { fs, db } = await freshDb(engine)
      await fs.writeFile('/a', 'alpha beta alpha')
      await fs.writeFile('/b', 'beta')
      await fs.search('alpha')
      expect((await fsck(db)).ok).toBe(true)
      const { ino } = await fs.stat('/a')
      // Damage the index as a bug or a hostile peer could: a word replaced in the stored words.
      if (ENGINES[engine]!.store === 'fts5')
        await db.execute({
          sql: "UPDATE agentfs_search_fts SET body = 'alpha gamma alpha' WHERE rowid = ?",
          params: [ino],
        })
      else
        await db.execute({
          sql: "UPDATE agentfs_search_posting SET term = 'gamma' WHERE term = 'beta' AND ino = ?",
          params: [ino],
        })
      expect(paths(await fs.search('gamma'))).toEqual(['/a'])
      const report = await fsck(db)
      expect(report.findings.map((f) => [f.rule, f.ino])).toEqual([['search-index', ino]])
      expect((await fsck(db, { repair: true })).ok).toBe(true)
      expect(paths(await fs.search('gamma'))).toEqual([])
      expect(paths(await fs.search('beta'))).toEqual(['/b', '/a'])
      expect((await fsck(db)).ok).toBe(true)
    })

    test('bad queries and options are refused with typed errors', async () => {
      const fs = await fresh(engine)
      expect(await typedCode(fs.search(''))).toBe('INVALID_ARGUMENT')
      expect(await typedCode(fs.search('"open phrase'))).toBe('INVALID_ARGUMENT')
      expect(await typedCode(fs.search('a '.repeat(20)))).toBe('INVALID_ARGUMENT')
      expect(await typedCode(fs.search('x'.repeat(2000)))).toBe('INVALID_ARGUMENT')
      expect(await code(fs.search('x', { limit: 0 }))).toBe('EINVAL')
      expect(await code(fs.search('x', { lines: 99 }))).toBe('EINVAL')
      // FTS5 syntax is not passed through: operators are words.
      await fs.writeFile('/f', 'NEAR AND OR NOT')
      expect(paths(await fs.search('NEAR( OR'))).toEqual(['/f'])
    })
  })
}

/** Runs `fn` on a database file in a fresh directory, removed afterwards. */
async function inFile(fn: (path: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-fulltext-'))
  try {
    await fn(join(dir, 'db'))
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** Opens a database on `driver`, runs `fn` on it and its filesystem, closes it. */
async function opened<T>(
  driver: Driver,
  fn: (fs: SqlFileSystem, db: AgentDatabase) => Promise<T>,
): Promise<T> {
  const db = await openDatabase({ driver })
  try {
    return await fn(createFileSystem(db), db)
  } finally {
    await db.close()
  }
}

describe('full-text search on a read-only database', () => {
  test('searches what is indexed and says how many files it could not see', () =>
    inFile(async (path) => {
      await opened(betterSqlite3Driver({ path }), async (fs) => {
        await fs.writeFile('/a', 'apple')
        await fs.writeFile('/b', 'apple banana')
        expect((await fs.search('apple')).hits).toHaveLength(2)
        await fs.writeFile('/b', 'banana')
        await fs.writeFile('/c', 'apple')
      })
      await opened(betterSqlite3Driver({ path, readonly: true }), async (fs) => {
        const result = await fs.search('apple')
        // /b changed and /c is new: neither is searched (never a stale hit), both are counted.
        expect(paths(result)).toEqual(['/a'])
        expect(result.behind).toBe(2)
      })
    }))
})

describe('updating the search index ahead of readers that cannot write', () => {
  test('updateSearchIndex leaves nothing behind; rebuild starts from nothing; refused where it cannot write', () =>
    inFile(async (path) => {
      await opened(betterSqlite3Driver({ path }), async (fs, db) => {
        await fs.writeFile('/a', 'apple')
        await fs.writeFile('/b', 'banana')
        expect(await fs.updateSearchIndex()).toEqual({ writable: true, files: 2, dropped: 0 })
        await fs.writeFile('/b', 'apple banana')
        await fs.unlink('/a')
        expect(await fs.updateSearchIndex()).toEqual({ writable: true, files: 1, dropped: 1 })
        expect(await fs.updateSearchIndex({ rebuild: true })).toEqual({
          writable: true,
          files: 1,
          dropped: 0,
        })
        expect(await code(fs.restrict({ read: ['/**'] }).updateSearchIndex())).toBe('EPERM')
        expect(await code(fs.updateSearchIndex({ timeoutMs: 0 }))).toBe('EINVAL')
        expect((await fsck(db)).ok).toBe(true)
      })
      await opened(betterSqlite3Driver({ path, readonly: true }), async (fs) => {
        const result = await fs.search('apple')
        expect([paths(result), result.behind]).toEqual([['/b'], 0])
        // Nothing to do: nothing to refuse.
        expect((await fs.updateSearchIndex()).files).toBe(0)
      })
      await opened(betterSqlite3Driver({ path }), (fs) => fs.writeFile('/c', 'apple'))
      await opened(betterSqlite3Driver({ path, readonly: true }), async (fs) => {
        expect((await fs.search('apple')).behind).toBe(1)
        expect(await typedCode(fs.updateSearchIndex())).toBe('READONLY')
      })
    }))
})

describe('full-text search across engines', () => {
  test('an FTS5 index is refused by an engine without FTS5 until the index moves to the postings store', () =>
    inFile(async (path) => {
      await opened(betterSqlite3Driver({ path }), async (fs) => {
        await fs.writeFile('/a.md', 'shared words here')
        expect((await fs.search('words')).store).toBe('fts5')
      })
      // The Turso engine 0.7 cannot load a schema holding FTS5 tables: one clear refusal.
      expect(await typedCode(openDatabase({ driver: tursoDriver({ path }) }))).toBe(
        'UNSUPPORTED_LAYOUT',
      )
      await opened(betterSqlite3Driver({ path }), async (fs, db) => {
        expect((await fs.setSearchSettings({ store: 'postings' })).store).toBe('postings')
        const { rows } = await db.execute({
          sql: "SELECT name FROM sqlite_schema WHERE name GLOB 'agentfs_search_fts*'",
        })
        expect(rows).toEqual([])
      })
      await opened(tursoDriver({ path }), async (fs, db) => {
        await fs.writeFile('/b.md', 'more words')
        const result = await fs.search('words')
        expect(result.store).toBe('postings')
        expect(paths(result).sort()).toEqual(['/a.md', '/b.md'])
        expect((await fsck(db)).findings).toEqual([])
        expect(await typedCode(fs.setSearchSettings({ store: 'fts5' }))).toBe('INVALID_ARGUMENT')
      })
      await opened(betterSqlite3Driver({ path }), async (fs, db) => {
        await fs.unlink('/a.md')
        const result = await fs.search('words')
        expect(result.store).toBe('postings')
        expect(paths(result)).toEqual(['/b.md'])
        expect((await fsck(db)).findings).toEqual([])
      })
    }))
})

describe('full-text search on a hostile database', () => {
  test('a file with an impossible size or a chunk that is not a BLOB is left out, never fails the search', async () => {
    const { fs, db } = await freshDb('better-sqlite3')
    await fs.writeFile('/good.txt', 'needle here')
    await fs.writeFile('/negative.txt', 'needle too')
    await fs.writeFile('/text-chunk.txt', 'needle again')
    await db.execute({
      sql: 'UPDATE fs_inode SET size = -5 WHERE ino = ?',
      params: [(await fs.stat('/negative.txt')).ino],
    })
    await db.execute({
      sql: "UPDATE fs_data SET data = 'needle as text' WHERE ino = ?",
      params: [(await fs.stat('/text-chunk.txt')).ino],
    })
    expect(paths(await fs.search('needle'))).toEqual(['/good.txt'])
    // fsck reports the damage by its own rules and still runs the index check.
    const rules = (await fsck(db)).findings.map((f) => f.rule)
    expect(rules).toContain('size')
    expect(rules).not.toContain('search-index')
  })

  test('postings rows no index writes (a count that is not a number, positions of megabytes or not numbers) count as absent', async () => {
    const { fs, db } = await freshDb('better-sqlite3, no FTS5')
    await fs.writeFile('/good.txt', 'needle in a haystack\n')
    await fs.writeFile('/count.txt', 'needle in a haystack too\n')
    await fs.writeFile('/huge.txt', 'needle in a haystack again\n')
    await fs.writeFile('/words.txt', 'needle in a haystack once more\n')
    expect(paths(await fs.search('needle')).sort()).toEqual([
      '/count.txt',
      '/good.txt',
      '/huge.txt',
      '/words.txt',
    ])
    const ino = async (path: string) => (await fs.stat(path)).ino
    await db.execute({
      sql: "UPDATE agentfs_search_posting SET freq = 'many' WHERE ino = ? AND term = 'needle'",
      params: [await ino('/count.txt')],
    })
    await db.execute({
      sql: "UPDATE agentfs_search_posting SET positions = ? WHERE ino = ? AND term = 'needle'",
      params: ['0,'.repeat(3_000_000), await ino('/huge.txt')],
    })
    await db.execute({
      sql: "UPDATE agentfs_search_posting SET positions = 'x,y' WHERE ino = ? AND term = 'needle'",
      params: [await ino('/words.txt')],
    })
    const one = await fs.search('needle')
    expect(paths(one)).toEqual(['/good.txt', '/words.txt'])
    for (const hit of one.hits) expect(Number.isFinite(hit.score)).toBe(true)
    expect(paths(await fs.search('"needle in"'))).toEqual(['/good.txt'])
  })
})
