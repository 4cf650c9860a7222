import { type AgentDatabase, type Driver, fixedClock, fsck, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { tursoDriver } from '@agentfs/driver-turso'
import { bagOfWordsEmbedder, type TestEmbedder, withoutVectors } from '@agentfs/test-kit'
import { afterEach, describe, expect, test } from 'vitest'
import {
  createFileSystem,
  embeddingBacklog,
  type SqlFileSystem,
  updateEmbeddings,
} from '../src/index.js'
import { code } from './helpers.js'

// Semantic search on every engine: libSQL and the Turso engine rank with their vector functions,
// SQLite in JavaScript; the answers must be the same.
const ENGINES: Record<string, { driver: () => Driver; sql: boolean }> = {
  'better-sqlite3': { driver: () => betterSqlite3Driver({ path: ':memory:' }), sql: false },
  libsql: { driver: () => libsqlDriver({ url: ':memory:' }), sql: true },
  'libsql, no vector functions': {
    driver: () => withoutVectors(libsqlDriver({ url: ':memory:' })),
    sql: false,
  },
  turso: { driver: () => tursoDriver({ path: ':memory:' }), sql: true },
}

const closing: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const db of closing.splice(0)) await db.close()
})

const SYNONYMS = [
  ['car', 'automobile', 'vehicle'],
  ['fruit', 'apple', 'pear'],
]

async function fresh(
  engine: string,
  embedder: TestEmbedder = bagOfWordsEmbedder({ synonyms: SYNONYMS }),
): Promise<{ fs: SqlFileSystem; db: AgentDatabase; embedder: TestEmbedder }> {
  const db = await openDatabase({ driver: ENGINES[engine]!.driver(), clock: fixedClock() })
  closing.push(db)
  return { fs: createFileSystem(db, { embed: embedder }), db, embedder }
}

const paths = (result: { hits: readonly { path: string }[] }) => result.hits.map((h) => h.path)

async function garden(fs: SqlFileSystem) {
  await fs.mkdir('/notes')
  await fs.writeFile(
    '/notes/garage.md',
    '# Garage\n\nThe automobile needs new tyres.\nCheck the oil.\n',
  )
  await fs.writeFile('/notes/market.md', 'Buy an apple and a pear at the market.\n')
  await fs.writeFile('/notes/taxes.md', 'File the tax return before April.\n')
}

for (const engine of Object.keys(ENGINES)) {
  describe(`semantic search (${engine})`, () => {
    test('finds files about the query when no word matches; hybrid fuses both rankings', async () => {
      const { fs, db, embedder } = await fresh(engine)
      await garden(fs)
      expect(await embeddingBacklog(db, embedder.model)).toBe(3)
      // Nothing embedded yet: a semantic search says how many files it could not see.
      expect(await fs.search('car', { mode: 'semantic' })).toMatchObject({ hits: [], behind: 3 })
      const done = await updateEmbeddings(db, embedder)
      expect(done).toMatchObject({ writable: true, files: 3, backlog: 0 })
      expect(await embeddingBacklog(db, embedder.model)).toBe(0)

      expect(paths(await fs.search('car', { mode: 'text' }))).toEqual([])
      const semantic = await fs.search('car', { mode: 'semantic', limit: 1 })
      expect(semantic).toMatchObject({ behind: 0, store: 'none' })
      expect(paths(semantic)).toEqual(['/notes/garage.md'])
      expect(semantic.hits[0]!.score).toBeGreaterThan(0)
      expect(semantic.hits[0]!.lines).toEqual([
        { line: 1, text: '# Garage' },
        { line: 3, text: 'The automobile needs new tyres.' },
        { line: 4, text: 'Check the oil.' },
      ])
      // Hybrid (the default with an embedder): a word match and a meaning match both count.
      const hybrid = await fs.search('fruit market')
      expect(paths(hybrid)[0]).toBe('/notes/market.md')
      expect(hybrid.hits[0]!.lines).toEqual([
        { line: 1, text: 'Buy an apple and a pear at the market.' },
      ])
      // Nearest first, whatever the distance: a scope keeps only what is below it.
      expect(
        paths(await fs.search('apple', { mode: 'semantic', path: '/notes/taxes.md' })),
      ).toEqual(['/notes/taxes.md'])
    })

    test('a rewritten or deleted file is never found by vectors of what it held', async () => {
      const { fs, db, embedder } = await fresh(engine)
      await garden(fs)
      await updateEmbeddings(db, embedder)
      await fs.writeFile('/notes/garage.md', 'Bake bread on Sunday.\n')
      await fs.unlink('/notes/market.md')
      expect(await embeddingBacklog(db, embedder.model)).toBe(1)
      const stale = await fs.search('automobile', { mode: 'semantic' })
      expect(paths(stale)).not.toContain('/notes/garage.md')
      expect(paths(await fs.search('pear', { mode: 'semantic' }))).not.toContain('/notes/market.md')
      expect(stale.behind).toBe(1)
      const again = await updateEmbeddings(db, embedder)
      expect(again).toMatchObject({ files: 1, dropped: 1, backlog: 0 })
      expect(paths(await fs.search('bread', { mode: 'semantic', limit: 1 }))).toEqual([
        '/notes/garage.md',
      ])
      const { rows } = await db.execute<{ n: number }>({
        sql: 'SELECT count(*) AS n FROM agentfs_embedding_doc WHERE ino NOT IN (SELECT ino FROM fs_inode WHERE nlink > 0)',
      })
      expect(rows).toEqual([{ n: 0 }])
    })
  })
}

describe('semantic search: the same answers in SQL and in JavaScript', () => {
  test('libSQL and the Turso engine rank as the JavaScript fallback does', async () => {
    const results: Record<string, { path: string; score: number }[]> = {}
    for (const engine of Object.keys(ENGINES)) {
      const { fs, db, embedder } = await fresh(engine, bagOfWordsEmbedder({ dimensions: 32 }))
      await fs.mkdir('/d')
      for (let i = 0; i < 40; i++)
        await fs.writeFile(
          `/d/${i}.txt`,
          Array.from(
            { length: 1 + (i % 7) },
            (_, j) => `word${(i * 3 + j) % 17} topic${i % 5}`,
          ).join('\n'),
        )
      await updateEmbeddings(db, embedder)
      const found = await fs.search('word3 topic2 word11', { mode: 'semantic', limit: 25 })
      results[engine] = found.hits.map((h) => ({ path: h.path, score: h.score }))
    }
    const reference = results['better-sqlite3']!
    expect(reference.length).toBe(25)
    for (const [engine, hits] of Object.entries(results)) {
      expect(
        hits.map((h) => h.path),
        engine,
      ).toEqual(reference.map((h) => h.path))
      for (const [i, h] of hits.entries())
        expect(h.score, engine).toBeCloseTo(reference[i]!.score, 5)
    }
  })
})

describe('semantic search: what cannot go wrong', () => {
  test('rows no vector of the model can be, or of another version, are left out', async () => {
    const { fs, db, embedder } = await fresh('better-sqlite3')
    await garden(fs)
    await updateEmbeddings(db, embedder)
    const { rows } = await db.execute<{ ino: number }>({
      sql: "SELECT ino FROM fs_dentry WHERE name = 'taxes.md'",
    })
    const taxes = Number(rows[0]!.ino)
    const nan = new Uint8Array(64 * 4)
    new DataView(nan.buffer).setFloat32(0, Number.NaN, true)
    // A crafted chunk for taxes.md: too short, NaN, and one for a version it does not have.
    await db.execute({
      sql: 'UPDATE agentfs_embedding SET vector = ? WHERE ino = ?',
      params: [new Uint8Array(7), taxes],
    })
    for (const engine of ['better-sqlite3']) {
      expect(engine).toBe('better-sqlite3')
      const found = await fs.search('tax return April', { mode: 'semantic' })
      expect(paths(found)).not.toContain('/notes/taxes.md')
      await db.execute({
        sql: 'UPDATE agentfs_embedding SET vector = ? WHERE ino = ?',
        params: [nan, taxes],
      })
      expect(paths(await fs.search('tax return April', { mode: 'semantic' }))).not.toContain(
        '/notes/taxes.md',
      )
    }
  })

  test('an embedder that answers wrongly stores nothing and says what was wrong', async () => {
    const good = bagOfWordsEmbedder()
    const short = {
      ...good,
      embed: async (texts: readonly string[]) => texts.slice(1).map(() => new Float32Array(64)),
    }
    const wide = {
      ...good,
      embed: async (texts: readonly string[]) => texts.map(() => new Float32Array(65)),
    }
    const nan = {
      ...good,
      embed: async (texts: readonly string[]) =>
        texts.map(() => new Float32Array(64).fill(Number.NaN)),
    }
    const { fs, db } = await fresh('better-sqlite3')
    await garden(fs)
    await expect(updateEmbeddings(db, short)).rejects.toThrow(
      /returned 2 vectors for 3 texts; it must return one per text/,
    )
    await expect(updateEmbeddings(db, wide)).rejects.toThrow(
      /returned a vector of 65 numbers; its dimensions say 64/,
    )
    await expect(updateEmbeddings(db, nan)).rejects.toThrow(
      /holding NaN; vectors hold finite numbers/,
    )
    const { rows } = await db.execute<{ n: number }>({
      sql: 'SELECT count(*) AS n FROM agentfs_embedding',
    })
    expect(rows).toEqual([{ n: 0 }])
    expect(await embeddingBacklog(db, good.model)).toBe(3)
  })

  test('a file changed while its chunks are embedded is not stored under the old version', async () => {
    const base = bagOfWordsEmbedder()
    let fs!: SqlFileSystem
    let changed = false
    const racing = {
      ...base,
      async embed(texts: readonly string[]) {
        if (!changed) {
          changed = true
          await fs.writeFile('/notes/garage.md', 'Now about gardening.\n')
        }
        return base.embed(texts)
      },
    }
    const opened = await fresh('better-sqlite3')
    fs = opened.fs
    await garden(fs)
    // The first pass stores the two files that did not change; the next reads garage.md again.
    const done = await updateEmbeddings(opened.db, racing)
    expect(done).toMatchObject({ files: 3, backlog: 0 })
    expect(base.calls).toHaveLength(2)
    expect(base.calls[1]).toEqual(['Now about gardening.\n'])
    expect(
      paths(
        await createFileSystem(opened.db, { embed: base }).search('gardening', {
          mode: 'semantic',
          limit: 1,
        }),
      ),
    ).toEqual(['/notes/garage.md'])
  })

  test('a policy hides what it does not let be read; bad options are refused', async () => {
    const { fs, db, embedder } = await fresh('better-sqlite3')
    await garden(fs)
    await updateEmbeddings(db, embedder)
    const restricted = fs.restrict({ read: ['/notes/market.md', '/'] })
    expect(paths(await restricted.search('automobile apple tax', { mode: 'semantic' }))).toEqual([
      '/notes/market.md',
    ])
    expect(await code(fs.search('car', { mode: 'vibes' as never }))).toBe('EINVAL')
    const plain = createFileSystem(db)
    await expect(plain.search('car', { mode: 'semantic' })).rejects.toThrow(
      /semantic search needs an embedder/,
    )
    expect(() =>
      createFileSystem(db, { embed: { model: '', dimensions: 3, embed: async () => [] } }),
    ).toThrow(/embed.model/)
  })
})

for (const engine of Object.keys(ENGINES)) {
  test(`fsck checks the semantic index's rows; repair drops the broken ones, the next update redoes them (${engine})`, async () => {
    const { fs, db, embedder } = await fresh(engine)
    await garden(fs)
    await fs.writeFile('/notes/blank.md', '')
    await updateEmbeddings(db, embedder)
    const embedded = async () =>
      (
        await db.execute<{ ino: number; n: number }>({
          sql: 'SELECT ino, count(*) AS n FROM agentfs_embedding GROUP BY ino ORDER BY ino',
        })
      ).rows.map((r) => [Number(r.ino), Number(r.n)])
    expect((await embedded()).length).toBeGreaterThanOrEqual(3)
    expect((await fsck(db)).findings).toEqual([])
    // What an update leaves for the next one is not damage: a file changed since (its rows are
    // of the version its record names), a file deleted (its rows go at the next update).
    await fs.writeFile('/notes/market.md', 'Buy a car.\n')
    await fs.writeFile('/notes/spare.md', 'A spare tyre for the vehicle.\n')
    await updateEmbeddings(db, embedder)
    await fs.unlink('/notes/spare.md')
    expect((await fsck(db)).findings).toEqual([])
    await updateEmbeddings(db, embedder)
    const after = await embedded()
    const ino = async (name: string) => Number((await fs.stat(`/notes/${name}`)).ino)
    const [garage, market, taxes] = [
      await ino('garage.md'),
      await ino('market.md'),
      await ino('taxes.md'),
    ]
    // Damage as a bug or a hostile peer could: a vector of the wrong length, one holding NaN,
    // a chunk row gone, a chunk count no update writes.
    const nan = new Uint8Array(64 * 4)
    new DataView(nan.buffer).setFloat32(8, Number.NaN, true)
    await db.execute({
      sql: 'UPDATE agentfs_embedding SET vector = ? WHERE ino = ? AND chunk = 0',
      params: [new Uint8Array(7), garage],
    })
    await db.execute({
      sql: 'UPDATE agentfs_embedding SET vector = ? WHERE ino = ? AND chunk = 0',
      params: [nan, market],
    })
    await db.execute({ sql: 'DELETE FROM agentfs_embedding WHERE ino = ?', params: [taxes] })
    const blank = await ino('blank.md')
    await db.execute({
      sql: 'UPDATE agentfs_embedding_doc SET chunks = -7 WHERE ino = ?',
      params: [blank],
    })
    const report = await fsck(db)
    expect(report.ok).toBe(false)
    expect(
      report.findings
        .map((f) => [f.rule, f.ino, f.repairable])
        .sort((a, b) => Number(a[1]) - Number(b[1])),
    ).toEqual(
      [garage, market, taxes, blank].sort((a, b) => a - b).map((i) => ['embedding', i, true]),
    )
    expect(report.findings.find((f) => f.ino === market)!.message).toMatch(
      /under model '.+' cannot be right \(a vector holds a number that is not finite\)/,
    )
    expect(report.findings.find((f) => f.ino === garage)!.message).toMatch(/is not 64 float32/)
    const repaired = await fsck(db, { repair: true })
    expect(repaired.ok).toBe(true)
    expect(repaired.repaired).toHaveLength(4)
    // The other files' rows stay; the next update makes the dropped ones again.
    expect(await embeddingBacklog(db, embedder.model)).toBe(4)
    await updateEmbeddings(db, embedder)
    expect(await embeddingBacklog(db, embedder.model)).toBe(0)
    expect(await embedded()).toEqual(after)
    expect((await fsck(db)).findings).toEqual([])
    expect(paths(await fs.search('oil', { mode: 'semantic', limit: 1 }))).toEqual([
      '/notes/garage.md',
    ])
  })
}

test('fsck reads every page of vectors: a NaN in a file past the first pages is found', async () => {
  const { fs, db, embedder } = await fresh('better-sqlite3')
  await fs.mkdir('/many')
  for (let i = 0; i < 130; i++) await fs.writeFile(`/many/f${i}.md`, `note ${i} about a car\n`)
  await updateEmbeddings(db, embedder)
  expect((await fsck(db)).findings).toEqual([])
  const late = Number((await fs.stat('/many/f125.md')).ino)
  const nan = new Uint8Array(64 * 4)
  new DataView(nan.buffer).setFloat32(252, Number.POSITIVE_INFINITY, true)
  await db.execute({
    sql: 'UPDATE agentfs_embedding SET vector = ? WHERE ino = ?',
    params: [nan, late],
  })
  expect((await fsck(db)).findings.map((f) => [f.rule, f.ino])).toEqual([['embedding', late]])
  // More broken files than a report lists (100): the repair drops them all in one go.
  await db.execute({ sql: 'UPDATE agentfs_embedding SET vector = ?', params: [new Uint8Array(9)] })
  expect((await fsck(db)).findings).toHaveLength(100)
  expect((await fsck(db, { repair: true })).ok).toBe(true)
  expect(await embeddingBacklog(db, embedder.model)).toBe(130)
})
