import {
  type Executor,
  fsError,
  normalizePath,
  parseQuery,
  phrasePositions,
  type Queryable,
  type QueryPhrase,
  S_IFMT,
  S_IFREG,
  tokenize,
} from '@agentfs/core'
import { pathOf } from '../../storage/mutate.js'
import { lookup } from '../../storage/resolver.js'
import { walkTree } from '../walk.js'
import { MAX_MAX_FILE_SIZE, readSettings } from './settings.js'
import { namedStore, openStore } from './store.js'
import { catchUp, countBehind, textOrDamaged, timedOut, VERSION_SQL } from './upkeep.js'

/** Options of `search`. */
export interface SearchOptions {
  /** Directory (or file) to search below (default `/`). */
  readonly path?: string
  /** Most hits returned (default 20, at most 1,000). */
  readonly limit?: number
  /** Matching lines shown per hit (default 3, at most 20; 0 for none). */
  readonly lines?: number
  /** Give up with ETIMEDOUT after this many milliseconds (default 30,000). */
  readonly timeoutMs?: number
}

/** A line of a hit where the query's words are. */
export interface SearchLine {
  /** 1-based. */
  readonly line: number
  /** The line, at most 240 characters (a window around the first match for longer lines). */
  readonly text: string
}

/** One file that matches. */
export interface SearchHit {
  readonly path: string
  /** Relevance, larger is better: the negated FTS5 `bm25()` of the file. */
  readonly score: number
  /** The file's version token (as `stat`'s `version`: pass it to a guarded write). */
  readonly version: string
  readonly lines: readonly SearchLine[]
}

/** What `search` found. */
export interface SearchResult {
  readonly hits: readonly SearchHit[]
  /**
   * Files changed since the index last saw them and so not searched: 0 unless the database is
   * read-only (a search of a writable database brings the index up to date first).
   */
  readonly behind: number
  /** The index's storage on this engine: SQLite's FTS5, or a postings table where it has none. */
  readonly store: 'fts5' | 'postings' | 'none'
}

const DEFAULT_LIMIT = 20
const MAX_LIMIT = 1_000
const MAX_LINES = 20
const LINE_WIDTH = 240
const SEARCH_TIMEOUT_MS = 30_000
/** Ranked candidates looked at, at most, to find `limit` the scope and policy let through. */
export const MAX_CANDIDATES = 100_000

function checkOptions(options: SearchOptions) {
  const limit = options.limit ?? DEFAULT_LIMIT
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    throw fsError('EINVAL', 'search', undefined, {
      hint: `limit must be a whole number from 1 to ${MAX_LIMIT}`,
    })
  const lines = options.lines ?? 3
  if (!Number.isSafeInteger(lines) || lines < 0 || lines > MAX_LINES)
    throw fsError('EINVAL', 'search', undefined, {
      hint: `lines must be a whole number from 0 to ${MAX_LINES}`,
    })
  const timeoutMs = options.timeoutMs ?? SEARCH_TIMEOUT_MS
  if (!(timeoutMs > 0))
    throw fsError('EINVAL', 'search', undefined, { hint: 'timeoutMs must be a positive number' })
  return { limit, lines, timeoutMs }
}

/** Where a search looks and what it may show: the scope, and the policy's reading rights. */
export interface SearchScope {
  /** Keeps the paths the caller may read (a policy's filter), in order. */
  readonly readable?: (paths: string[]) => Promise<Set<string>>
}

/**
 * Ranked full-text search. The index is brought up to date first (its own transactions), so no
 * deleted or changed file is found by words it no longer holds; then the best-ranked files
 * below `options.path` that the scope lets through, each with the lines where the words are.
 * `within` runs the reading part (a policy's transaction); default: a transaction of its own.
 */
export async function searchFullText(
  q: Queryable,
  chunkSize: number,
  query: string,
  options: SearchOptions = {},
  within?: (
    read: (tx: Queryable, scope: SearchScope) => Promise<SearchResult>,
  ) => Promise<SearchResult>,
): Promise<SearchResult> {
  const phrases = parseQuery(query)
  const checked = checkOptions(options)
  const deadline = Date.now() + checked.timeoutMs
  const under = normalizePath(options.path ?? '/', 'search')
  const { writable } = await catchUp(q, chunkSize, deadline)
  const read = (tx: Queryable, scope: SearchScope) =>
    queryIndex(tx, chunkSize, phrases, { ...checked, under, deadline, writable }, scope)
  if (within) return within(read)
  // One transaction for what is read, where the database takes one (not when read-only).
  return writable ? q.transaction((tx) => read(tx, {})) : read(q, {})
}

async function queryIndex(
  tx: Queryable,
  chunkSize: number,
  phrases: QueryPhrase[],
  options: { limit: number; lines: number; under: string; deadline: number; writable: boolean },
  scope: SearchScope,
): Promise<SearchResult> {
  const { limit, lines, under, deadline, writable } = options
  const store = writable
    ? await openStore(tx, (await readSettings(tx)).store)
    : await namedStore(tx)
  const behind = writable ? 0 : await countBehind(tx)
  if (!store) return { hits: [], behind, store: 'none' }
  // Below a directory other than the root: its files' paths, by inode (one walk).
  let inside: Map<number, string> | undefined
  if (under !== '/') {
    const found = await lookup(tx, under, { followLast: true, syscall: 'search' })
    if (!found.node) throw fsError('ENOENT', 'search', under)
    inside = new Map()
    if ((found.node.mode & S_IFMT) === S_IFREG) inside.set(found.node.ino, under)
    else
      for (const e of await walkTree(tx, found.node.ino, { syscall: 'search', path: under }))
        if ((e.mode & S_IFMT) === S_IFREG && !inside.has(e.ino))
          inside.set(e.ino, `${under}/${e.rel}`)
  }
  const hits: SearchHit[] = []
  let scanned = 0
  let page: { ino: number; score: number }[] = []
  const flush = async () => {
    const current = await currentDocs(
      tx,
      page.map((c) => c.ino),
    )
    const paths: { path: string; ino: number; score: number }[] = []
    for (const c of page) {
      const version = current.get(c.ino)
      if (version === undefined) continue
      const path = inside ? inside.get(c.ino) : await pathOf(tx, c.ino)
      if (path !== undefined) paths.push({ path, ino: c.ino, score: c.score })
    }
    const allowed = scope.readable ? await scope.readable(paths.map((p) => p.path)) : undefined
    for (const p of paths) {
      if (hits.length >= limit) break
      if (allowed && !allowed.has(p.path)) continue
      hits.push({
        path: p.path,
        score: -p.score,
        version: current.get(p.ino)!,
        lines: lines === 0 ? [] : await linesOf(tx, chunkSize, p.ino, phrases, lines, deadline),
      })
    }
    page = []
    if (Date.now() > deadline) throw timedOut()
  }
  for await (const candidate of store.rank(tx, phrases)) {
    if (inside && !inside.has(candidate.ino)) continue
    page.push(candidate)
    if (++scanned > MAX_CANDIDATES) break
    if (page.length >= Math.max(limit - hits.length, 50)) await flush()
    if (hits.length >= limit) break
  }
  if (page.length > 0 && hits.length < limit) await flush()
  return { hits, behind, store: store.kind }
}

/** Version tokens of the given inodes whose doc row is current (indexed at their version). */
async function currentDocs(q: Executor, inos: readonly number[]): Promise<Map<number, string>> {
  const out = new Map<number, string>()
  if (inos.length === 0) return out
  const { rows } = await q.execute<{ ino: number; ctime: number; ctime_nsec: number }>({
    sql: `SELECT i.ino AS ino, i.ctime AS ctime, i.ctime_nsec AS ctime_nsec FROM fs_inode i JOIN agentfs_search_doc d ON d.ino = i.ino
WHERE i.ino IN (${inos.map(() => '?').join(', ')}) AND d.words >= 0 AND d.version = ${VERSION_SQL} AND i.nlink > 0`,
    params: [...inos],
  })
  for (const r of rows)
    out.set(Number(r.ino), (BigInt(r.ctime) * 1_000_000_000n + BigInt(r.ctime_nsec)).toString())
  return out
}

/** The lines of a file where the query's phrases are (lines holding a whole phrase first). */
async function linesOf(
  q: Executor,
  chunkSize: number,
  ino: number,
  phrases: readonly QueryPhrase[],
  max: number,
  deadline: number,
): Promise<SearchLine[]> {
  const { rows } = await q.execute<{ size: number }>({
    sql: 'SELECT size FROM fs_inode WHERE ino = ?',
    params: [ino],
  })
  const size = Number(rows[0]?.size ?? 0)
  const text = await textOrDamaged(q, ino, Math.min(size, MAX_MAX_FILE_SIZE), chunkSize)
  if (text === undefined) return []
  const out: SearchLine[] = []
  const all = text.split('\n')
  const firstWords = phrases.map((p) => ({
    words: [p.words[0]!],
    prefix: p.prefix && p.words.length === 1,
  }))
  for (const wanted of [phrases, firstWords]) {
    for (let i = 0; i < all.length && out.length < max; i++) {
      if (out.some((l) => l.line === i + 1)) continue
      if (i % 4096 === 4095 && Date.now() > deadline) throw timedOut()
      const words = tokenize(all[i]!)
      if (wanted.some((p) => phrasePositions(words, p, 1).length > 0))
        out.push({ line: i + 1, text: window(all[i]!, phrases[0]!.words[0]!) })
    }
    if (out.length > 0) break
  }
  return out.sort((a, b) => a.line - b.line)
}

/** At most {@link LINE_WIDTH} characters of a line, around the first place `word` is. */
function window(line: string, word: string): string {
  const text = line.endsWith('\r') ? line.slice(0, -1) : line
  if (text.length <= LINE_WIDTH) return text
  const at = Math.max(0, text.toLowerCase().indexOf(word))
  const start = Math.max(0, Math.min(at - 40, text.length - LINE_WIDTH))
  return `${start > 0 ? '…' : ''}${text.slice(start, start + LINE_WIDTH)}${start + LINE_WIDTH < text.length ? '…' : ''}`
}
