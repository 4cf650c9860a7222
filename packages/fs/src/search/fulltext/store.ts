import {
  AgentFsError,
  bm25,
  type Executor,
  FsError,
  fts5Expression,
  fullTextSearch,
  placeholders,
  type QueryPhrase,
  readMeta,
  SEARCH_MAX_TOKENS,
  writeMeta,
} from '@agentfs/core'
import { probed } from '../probe.js'

/** Where the words of indexed files live: SQLite's FTS5, or our postings table. */
export type StoreKind = 'fts5' | 'postings'

/** The `agentfs_meta` row naming the store the index's rows are in. */
export const META_SEARCH_STORE = 'search.store'

/** The FTS5 table of the `fts5` store (created on first use; never on an engine without FTS5). */
export const FTS_TABLE = 'agentfs_search_fts'

/** Postings rows one query of the postings store reads at most (a word found everywhere). */
export const MAX_POSTINGS = 1_000_000

/** A ranked candidate: an inode and its bm25 score (smaller ranks first). */
export interface Ranked {
  readonly ino: number
  readonly score: number
}

/** The index's words of one store, added and removed per file, ranked per query. */
export interface IndexStore {
  readonly kind: StoreKind
  /** Indexes a file's words, under the version its doc row holds (written first). */
  add(q: Executor, ino: number, words: readonly string[]): Promise<void>
  remove(q: Executor, ino: number): Promise<void>
  clear(q: Executor): Promise<void>
  /** Every matching file, best first (ties by inode number). */
  rank(q: Executor, phrases: readonly QueryPhrase[]): AsyncIterable<Ranked>
}

const probedFts5 = new WeakMap<object, boolean>()

/** Whether the engine behind `q` has FTS5: its capability, else a probe (remembered). */
export function hasFts5(q: Executor): Promise<boolean> {
  return probed(probedFts5, q as object, fullTextSearch(q), async () => {
    const { rows } = await q.execute({
      sql: "SELECT 1 AS ok FROM pragma_module_list WHERE name = 'fts5'",
    })
    return rows.length > 0
  })
}

/**
 * The store of this database on this engine, inside a write transaction: `postings` or `fts5`
 * when the settings say so, else (`auto`) the one the database names when the engine has it,
 * else the best the engine has. Switching empties the index (the next catch-up rebuilds it in
 * the new store); switching to postings drops the FTS5 tables.
 */
export async function openStore(
  tx: Executor,
  preference: 'auto' | 'fts5' | 'postings' = 'auto',
): Promise<IndexStore> {
  const fts5 = await hasFts5(tx)
  if (preference === 'fts5' && !fts5)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'search settings: this engine has no FTS5; use store postings (or auto) here',
    )
  const named = await readMeta(tx, META_SEARCH_STORE)
  let kind: StoreKind
  if (preference !== 'auto') kind = preference
  else if (named === 'postings' || (named === 'fts5' && fts5)) kind = named
  else kind = fts5 ? 'fts5' : 'postings'
  const store = kind === 'fts5' ? fts5Store : postingsStore
  if (named !== kind) {
    if (kind === 'fts5')
      await tx.execute({
        sql: `CREATE VIRTUAL TABLE IF NOT EXISTS ${FTS_TABLE} USING fts5(body, tokenize = 'ascii')`,
      })
    else if (fts5) await tx.execute({ sql: `DROP TABLE IF EXISTS ${FTS_TABLE}` })
    await tx.execute({ sql: 'DELETE FROM agentfs_search_doc' })
    await tx.execute({ sql: 'DELETE FROM agentfs_search_posting' })
    if (kind === 'fts5') await fts5Store.clear(tx)
    await writeMeta(tx, META_SEARCH_STORE, kind)
  }
  return store
}

/** The store a read-only search uses: the one the database names, if this engine has it. */
export async function namedStore(q: Executor): Promise<IndexStore | undefined> {
  const named = await readMeta(q, META_SEARCH_STORE)
  if (named === 'postings') return postingsStore
  if (named === 'fts5' && (await hasFts5(q))) return fts5Store
  return undefined
}

const PAGE = 500

const fts5Store: IndexStore = {
  kind: 'fts5',
  async add(q, ino, words) {
    await q.execute({ sql: `DELETE FROM ${FTS_TABLE} WHERE rowid = ?`, params: [ino] })
    await q.execute({
      sql: `INSERT INTO ${FTS_TABLE} (rowid, body) VALUES (?, ?)`,
      params: [ino, words.join(' ')],
    })
  },
  async remove(q, ino) {
    await q.execute({ sql: `DELETE FROM ${FTS_TABLE} WHERE rowid = ?`, params: [ino] })
  },
  async clear(q) {
    await q.execute({ sql: `DELETE FROM ${FTS_TABLE}` })
  },
  async *rank(q, phrases) {
    const expression = fts5Expression(phrases)
    for (let offset = 0; ; offset += PAGE) {
      const { rows } = await q.execute<{ ino: number; score: number }>({
        sql: `SELECT rowid AS ino, bm25(${FTS_TABLE}) AS score FROM ${FTS_TABLE} WHERE ${FTS_TABLE} MATCH ? ORDER BY score, rowid LIMIT (SELECT ?) OFFSET (SELECT ?)`,
        params: [expression, PAGE, offset],
      })
      for (const row of rows) yield { ino: Number(row.ino), score: Number(row.score) }
      if (rows.length < PAGE) return
    }
  },
}

/** Positions of a word in a file, as stored: decimal, comma-separated, ascending. */
const encodePositions = (at: readonly number[]) => at.join(',')
/**
 * A row's positions; undefined when they are not what the index writes (ascending whole numbers
 * below the word limit): such a row counts as absent.
 */
function decodePositions(text: string): number[] | undefined {
  const out = text.split(',').map(Number)
  for (let i = 0; i < out.length; i++) {
    const at = out[i]!
    if (!Number.isSafeInteger(at) || at < 0 || at >= SEARCH_MAX_TOKENS) return undefined
    if (i > 0 && at <= out[i - 1]!) return undefined
  }
  return out
}

/**
 * Characters of one row's positions, at most: every position of the most words a file is
 * indexed with. A longer row (a crafted database, a hostile sync peer) counts as absent.
 */
const MAX_POSITIONS_CHARS = SEARCH_MAX_TOKENS * 7
/** Characters of positions one query reads at most. */
const MAX_POSITION_BYTES = 256 << 20

interface Posting {
  readonly ino: number
  readonly term: string
  readonly freq: number
  readonly positions: string
}

const postingsStore: IndexStore = {
  kind: 'postings',
  async add(q, ino, words) {
    await postingsStore.remove(q, ino)
    const at = new Map<string, number[]>()
    words.forEach((word, i) => {
      const list = at.get(word)
      if (list) list.push(i)
      else at.set(word, [i])
    })
    const rows = [...at]
    for (let i = 0; i < rows.length; i += 100) {
      const batch = rows.slice(i, i + 100)
      await q.execute({
        sql: `INSERT INTO agentfs_search_posting (term, ino, version, freq, positions) VALUES ${batch.map(() => '(?, ?, (SELECT version FROM agentfs_search_doc WHERE ino = ?), ?, ?)').join(', ')}`,
        params: batch.flatMap(([term, list]) => [
          term,
          ino,
          ino,
          list.length,
          encodePositions(list),
        ]),
      })
    }
  },
  async remove(q, ino) {
    await q.execute({ sql: 'DELETE FROM agentfs_search_posting WHERE ino = ?', params: [ino] })
  },
  async clear(q) {
    await q.execute({ sql: 'DELETE FROM agentfs_search_posting' })
  },
  async *rank(q, phrases) {
    const { rows: stats } = await q.execute<{ n: number; total: number | null }>({
      sql: 'SELECT count(*) AS n, sum(words) AS total FROM agentfs_search_doc WHERE words >= 0',
    })
    const rows = Number(stats[0]?.n ?? 0)
    const totalWords = Number(stats[0]?.total ?? 0)
    if (rows === 0) return
    const budget = { left: MAX_POSTINGS, bytes: MAX_POSITION_BYTES }
    // Per phrase: the files holding it and how often.
    const perPhrase: Map<number, number>[] = []
    for (const phrase of phrases) perPhrase.push(await phraseFrequencies(q, phrase, budget))
    const hits = perPhrase.map((m) => m.size)
    const smallest = perPhrase.reduce((a, b) => (b.size < a.size ? b : a))
    const ranked: Ranked[] = []
    const candidates = [...smallest.keys()].filter((ino) => perPhrase.every((m) => m.has(ino)))
    const lengths = await wordCounts(q, candidates)
    for (const ino of candidates) {
      const freq = perPhrase.map((m) => m.get(ino)!)
      ranked.push({ ino, score: bm25(rows, totalWords, hits, freq, lengths.get(ino) ?? 0) })
    }
    ranked.sort((a, b) => a.score - b.score || a.ino - b.ino)
    yield* ranked
  },
}

/** Word counts of indexed files, by inode. */
async function wordCounts(q: Executor, inos: readonly number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>()
  for (let i = 0; i < inos.length; i += 500) {
    const batch = inos.slice(i, i + 500)
    const { rows } = await q.execute<{ ino: number; words: number }>({
      sql: `SELECT ino, words FROM agentfs_search_doc WHERE ino IN (${placeholders(batch.length)})`,
      params: batch,
    })
    for (const r of rows) out.set(Number(r.ino), Number(r.words))
  }
  return out
}

/** The current postings of one word, or of every word starting with it. */
async function postingsOf(
  q: Executor,
  word: string,
  prefix: boolean,
  budget: { left: number; bytes: number },
  positions = true,
): Promise<Posting[]> {
  // Values bound through subqueries (ARCHITECTURE.md, "Statement shapes").
  const range = prefix ? 'p.term >= (SELECT ?) AND p.term < (SELECT ?)' : 'p.term = (SELECT ?)'
  // Positions only for phrases: a one-word phrase needs counts, and reads far fewer bytes.
  const { rows } = await q.execute<Posting>({
    // Rows the index does not write (a count that is not a whole number in range, positions
    // that are not text or too long) count as absent, whoever wrote them.
    sql: `SELECT p.ino AS ino, p.term AS term, p.freq AS freq, ${positions ? 'p.positions' : "''"} AS positions FROM agentfs_search_posting p JOIN agentfs_search_doc d ON d.ino = p.ino AND d.version = p.version WHERE ${range}
AND typeof(p.freq) = 'integer' AND p.freq BETWEEN 1 AND ${SEARCH_MAX_TOKENS} AND typeof(p.positions) = 'text' AND length(p.positions) <= ${MAX_POSITIONS_CHARS} LIMIT (SELECT ?)`,
    params: [...(prefix ? [word, `${word}\u{10ffff}`] : [word]), budget.left + 1],
  })
  budget.left -= rows.length
  for (const r of rows) budget.bytes -= r.positions.length
  if (budget.left < 0 || budget.bytes < 0)
    throw new FsError({
      code: 'EFBIG',
      syscall: 'search',
      hint: `the query's words are in more than ${MAX_POSTINGS} places (or ${MAX_POSITION_BYTES >> 20} MiB of positions) of the index; add words to narrow it`,
    })
  return rows
}

/** How often `phrase` occurs in each file holding it (overlapping occurrences count). */
async function phraseFrequencies(
  q: Executor,
  phrase: QueryPhrase,
  budget: { left: number; bytes: number },
): Promise<Map<number, number>> {
  const last = phrase.words.length - 1
  const out = new Map<number, number>()
  if (last === 0) {
    for (const p of await postingsOf(q, phrase.words[0]!, phrase.prefix, budget, false))
      out.set(Number(p.ino), (out.get(Number(p.ino)) ?? 0) + Number(p.freq))
    return out
  }
  // Positions of each word of the phrase, per file (a prefix word: of every word it starts).
  const positions: Map<number, Set<number>>[] = []
  for (let j = 0; j <= last; j++) {
    const byIno = new Map<number, Set<number>>()
    for (const p of await postingsOf(q, phrase.words[j]!, phrase.prefix && j === last, budget)) {
      const ino = Number(p.ino)
      if (j > 0 && !positions[0]!.has(ino)) continue
      const decoded = decodePositions(p.positions)
      if (decoded === undefined) continue
      const set = byIno.get(ino) ?? new Set<number>()
      byIno.set(ino, set)
      for (const at of decoded) set.add(at)
    }
    positions.push(byIno)
  }
  for (const [ino, starts] of positions[0]!) {
    let count = 0
    for (const start of starts) {
      let ok = true
      for (let j = 1; j <= last && ok; j++) ok = positions[j]!.get(ino)?.has(start + j) === true
      if (ok) count++
    }
    if (count > 0) out.set(ino, count)
  }
  return out
}
