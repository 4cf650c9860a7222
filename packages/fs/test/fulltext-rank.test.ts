import {
  bm25,
  fixedClock,
  openDatabase,
  parseQuery,
  phrasePositions,
  type QueryPhrase,
  tokenize,
} from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { tursoDriver } from '@agentfs/driver-turso'
import { withoutFts5 } from '@agentfs/test-kit'
import fc from 'fast-check'
import { afterEach, describe, expect, test } from 'vitest'
import { createFileSystem, type SearchResult } from '../src/index.js'

// The postings store (engines without FTS5) must rank exactly as FTS5 does, and both as the
// definition: every phrase in the file, BM25 as fts5_aux.c computes it. Random files over a
// small vocabulary (so words repeat, phrases recur, prefixes overlap), random queries.

const RUNS = Number(process.env.AGENTFS_FUZZ_RUNS ?? 25)
const VOCABULARY = ['alpha', 'alp', 'beta', 'bet', 'gamma', 'delta', 'déjà', 'Ωmega', 'x1', 'zz']

const closing: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const db of closing.splice(0)) await db.close()
})

const word = fc.constantFrom(...VOCABULARY)
const text = fc
  .array(fc.tuple(word, fc.constantFrom(' ', ' ', '\n', ', ', '-', '_')), { maxLength: 40 })
  .map((parts) => parts.map(([w, sep]) => w + sep).join(''))
const queryPart = fc.oneof(
  word,
  word.map((w) => `${w.slice(0, 2)}*`),
  fc.array(word, { minLength: 2, maxLength: 3 }).map((ws) => `"${ws.join(' ')}"`),
  fc.array(word, { minLength: 2, maxLength: 2 }).map((ws) => `"${ws.join(' ')}"*`),
)
const query = fc.array(queryPart, { minLength: 1, maxLength: 3 }).map((ps) => ps.join(' '))

/** What the search must return: every file holding every phrase, ranked by bm25. */
function expected(files: string[], phrases: QueryPhrase[]): { path: string; score: number }[] {
  const docs = files.map((t) => tokenize(t))
  const total = docs.reduce((n, d) => n + d.length, 0)
  const hits = phrases.map((p) => docs.filter((d) => phrasePositions(d, p, 1).length > 0).length)
  const out: { path: string; score: number; i: number }[] = []
  docs.forEach((d, i) => {
    const freq = phrases.map((p) => phrasePositions(d, p).length)
    if (freq.every((f) => f > 0))
      out.push({ path: `/f${i}`, score: -bm25(docs.length, total, hits, freq, d.length), i })
  })
  // Ties by inode: files are created in order, so by index.
  return out
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .map(({ path, score }) => ({ path, score }))
}

const near = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a))

/** Same files with the same scores, in an order that differs at most among equal scores. */
function same(got: SearchResult, want: { path: string; score: number }[]) {
  expect(got.hits.map((h) => h.path).sort()).toEqual(want.map((w) => w.path).sort())
  const byPath = new Map(want.map((w) => [w.path, w.score]))
  got.hits.forEach((h, i) => {
    expect(
      near(h.score, byPath.get(h.path)!),
      `${h.path}: ${h.score} vs ${byPath.get(h.path)}`,
    ).toBe(true)
    if (i > 0) expect(got.hits[i - 1]!.score >= h.score - 1e-9).toBe(true)
  })
}

describe('full-text ranking: FTS5, the postings store and the definition agree', () => {
  test('random files and queries', async () => {
    const open = async (driver: ReturnType<typeof betterSqlite3Driver>) => {
      const db = await openDatabase({ driver, clock: fixedClock() })
      closing.push(db)
      return createFileSystem(db)
    }
    await fc.assert(
      fc.asyncProperty(
        fc.array(text, { minLength: 1, maxLength: 12 }),
        fc.array(query, { minLength: 1, maxLength: 6 }),
        async (files, queries) => {
          const stores = [
            await open(betterSqlite3Driver({ path: ':memory:' })),
            await open(withoutFts5(betterSqlite3Driver({ path: ':memory:' }))),
            await open(tursoDriver({ path: ':memory:' })),
          ]
          for (const fs of stores)
            for (const [i, t] of files.entries()) await fs.writeFile(`/f${i}`, t)
          for (const q of queries) {
            const want = expected(files, parseQuery(q))
            const [fts5, postings, turso] = await Promise.all(
              stores.map((fs) => fs.search(q, { limit: 1000, lines: 0 })),
            )
            expect(fts5!.store).toBe('fts5')
            expect(postings!.store).toBe('postings')
            same(fts5!, want)
            same(postings!, want)
            same(turso!, want)
            // The stores break ties alike (by inode): the very same list.
            expect(postings!.hits.map((h) => h.path)).toEqual(fts5!.hits.map((h) => h.path))
          }
          // Changes keep the stores equal too: rewrite the first file, drop the last.
          for (const fs of stores) {
            await fs.writeFile('/f0', files.at(-1)!)
            await fs.unlink(`/f${files.length - 1}`)
          }
          const changed = [files.at(-1)!, ...files.slice(1, -1)]
          if (files.length === 1) changed.length = 0
          for (const q of queries) {
            const results = await Promise.all(
              stores.map((fs) => fs.search(q, { limit: 1000, lines: 0 })),
            )
            const want = files.length === 1 ? [] : expected(changed, parseQuery(q))
            for (const r of results) same(r, want)
          }
        },
      ),
      { numRuns: RUNS },
    )
  }, 120_000)
})
