import {
  type ChunkFormat,
  type Executor,
  fsError,
  normalizePath,
  parseQuery,
  phrasePositions,
  placeholders,
  type Queryable,
  type QueryPhrase,
  S_IFMT,
  S_IFREG,
  tokenize,
} from '@agentfs/core'
import { versionOf } from '../../storage/inode.js'
import { pathOf } from '../../storage/mutate.js'
import { lookup } from '../../storage/resolver.js'
import { type Embedder, embedAll } from '../semantic/embedder.js'
import { rankSemantic } from '../semantic/rank.js'
import { embeddingBacklog, notConfigured } from '../semantic/upkeep.js'
import { walkTree } from '../walk.js'
import { MAX_MAX_FILE_SIZE, readSettings } from './settings.js'
import { type IndexStore, namedStore, openStore } from './store.js'
import { catchUp, countBehind, textOrDamaged, timedOut, VERSION_SQL } from './upkeep.js'

/**
 * How `search` ranks: `text` by BM25 over the words (every word required), `semantic` by the
 * cosine similarity of the embedder's vectors (the closest chunk of each file), `hybrid` both,
 * fused by reciprocal rank (a file high in either list ranks high).
 */
export type SearchMode = 'text' | 'semantic' | 'hybrid'

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
  /** Default `hybrid` with an embedder (the `embed` option), else `text`. */
  readonly mode?: SearchMode
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
  /**
   * Relevance, larger is better: the negated FTS5 `bm25()` of the file (`text`), the cosine
   * similarity of its closest chunk (`semantic`), or the fused reciprocal-rank score (`hybrid`).
   */
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
   * read-only (a search of a writable database brings the index up to date first) — plus, for
   * `semantic` and `hybrid`, the files whose vectors are not made yet (the embedder's backlog).
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
  if (options.mode !== undefined && !['text', 'semantic', 'hybrid'].includes(options.mode))
    throw fsError('EINVAL', 'search', undefined, {
      hint: "mode must be 'text', 'semantic' or 'hybrid'",
    })
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
  format: ChunkFormat,
  query: string,
  options: SearchOptions = {},
  within?: (
    read: (tx: Queryable, scope: SearchScope) => Promise<SearchResult>,
  ) => Promise<SearchResult>,
  embedder?: Embedder,
): Promise<SearchResult> {
  const phrases = parseQuery(query)
  const checked = checkOptions(options)
  const mode = options.mode ?? (embedder ? 'hybrid' : 'text')
  if (mode !== 'text' && !embedder) throw notConfigured()
  const deadline = Date.now() + checked.timeoutMs
  const under = normalizePath(options.path ?? '/', 'search')
  // The query's vector before any transaction: the model may be slow or remote.
  const vector = mode === 'text' ? undefined : (await embedAll(embedder!, [query]))[0]
  const { writable } = await catchUp(q, format, deadline)
  const semantic = vector && { q, model: embedder!.model, vector }
  const read = (tx: Queryable, scope: SearchScope) =>
    queryIndex(
      tx,
      format,
      phrases,
      { ...checked, under, deadline, writable, mode },
      scope,
      semantic,
    )
  if (within) return within(read)
  // One transaction for what is read, where the database takes one (not when read-only).
  return writable ? q.transaction((tx) => read(tx, {})) : read(q, {})
}

/** A file in ranked order, with its score (larger is better) and, from vectors, its best chunk. */
interface Candidate {
  readonly ino: number
  readonly score: number
  readonly chunk?: { readonly startLine: number; readonly endLine: number }
}

/** Files one ranked list contributes to a hybrid ranking, at most. */
const FUSED_FILES = 10_000
/** Reciprocal rank fusion's constant: a file's fused score is the sum of 1 / (60 + rank). */
const RRF_K = 60

async function queryIndex(
  tx: Queryable,
  format: ChunkFormat,
  phrases: QueryPhrase[],
  options: {
    limit: number
    lines: number
    under: string
    deadline: number
    writable: boolean
    mode: SearchMode
  },
  scope: SearchScope,
  semantic: { q: Queryable; model: string; vector: Float32Array } | undefined,
): Promise<SearchResult> {
  const { limit, lines, under, deadline, writable, mode } = options
  const store =
    mode === 'semantic'
      ? undefined
      : writable
        ? await openStore(tx, (await readSettings(tx)).store)
        : await namedStore(tx)
  let behind = writable || mode === 'semantic' ? 0 : await countBehind(tx)
  if (semantic) behind += await embeddingBacklog(tx, semantic.model)
  if (!store && mode === 'text') return { hits: [], behind, store: 'none' }
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
  const candidates = ranked(tx, phrases, store, semantic, mode, inside, deadline)
  const hits: SearchHit[] = []
  let scanned = 0
  let page: Candidate[] = []
  const flush = async () => {
    const current = await currentDocs(
      tx,
      page.map((c) => c.ino),
    )
    const paths: { path: string; c: Candidate }[] = []
    for (const c of page) {
      if (!current.has(c.ino)) continue
      const path = inside ? inside.get(c.ino) : await pathOf(tx, c.ino)
      if (path !== undefined) paths.push({ path, c })
    }
    const allowed = scope.readable ? await scope.readable(paths.map((p) => p.path)) : undefined
    for (const { path, c } of paths) {
      if (hits.length >= limit) break
      if (allowed && !allowed.has(path)) continue
      let shown: SearchLine[] = []
      if (lines > 0 && mode !== 'semantic')
        shown = await linesOf(tx, format, c.ino, phrases, lines, deadline)
      if (lines > 0 && shown.length === 0 && c.chunk)
        shown = await chunkLines(tx, format, c.ino, c.chunk, lines)
      hits.push({ path, score: c.score, version: current.get(c.ino)!, lines: shown })
    }
    page = []
    if (Date.now() > deadline) throw timedOut()
  }
  for await (const candidate of candidates) {
    if (inside && !inside.has(candidate.ino)) continue
    page.push(candidate)
    if (++scanned > MAX_CANDIDATES) break
    if (page.length >= Math.max(limit - hits.length, 50)) await flush()
    if (hits.length >= limit) break
  }
  if (page.length > 0 && hits.length < limit) await flush()
  return { hits, behind, store: store?.kind ?? 'none' }
}

/** The candidates of a search in ranked order: by words, by vectors, or both fused. */
async function* ranked(
  tx: Queryable,
  phrases: QueryPhrase[],
  store: IndexStore | undefined,
  semantic: { q: Queryable; model: string; vector: Float32Array } | undefined,
  mode: SearchMode,
  inside: Map<number, string> | undefined,
  deadline: number,
): AsyncGenerator<Candidate> {
  if (mode === 'text') {
    for await (const c of store!.rank(tx, phrases)) yield { ino: c.ino, score: -c.score }
    return
  }
  const byVector = (
    await rankSemantic(
      semantic!.q,
      tx,
      semantic!.model,
      semantic!.vector,
      FUSED_FILES,
      deadline,
      timedOut,
    )
  ).filter((c) => !inside || inside.has(c.ino))
  if (mode === 'semantic') {
    for (const c of byVector)
      yield { ino: c.ino, score: c.score, chunk: { startLine: c.startLine, endLine: c.endLine } }
    return
  }
  const byWords: number[] = []
  if (store)
    for await (const c of store.rank(tx, phrases)) {
      if (inside && !inside.has(c.ino)) continue
      byWords.push(c.ino)
      if (byWords.length >= FUSED_FILES) break
    }
  const fused = new Map<number, { score: number; chunk?: Candidate['chunk'] }>()
  byWords.forEach((ino, i) => {
    fused.set(ino, { score: 1 / (RRF_K + i + 1) })
  })
  byVector.forEach((c, i) => {
    const had = fused.get(c.ino)
    fused.set(c.ino, {
      score: (had?.score ?? 0) + 1 / (RRF_K + i + 1),
      chunk: { startLine: c.startLine, endLine: c.endLine },
    })
  })
  const order = [...fused.entries()].sort((a, b) => b[1].score - a[1].score || a[0] - b[0])
  for (const [ino, f] of order)
    yield { ino, score: f.score, ...(f.chunk === undefined ? {} : { chunk: f.chunk }) }
}

/** The text of a file whose lines a hit shows (its first 64 MiB at most). */
async function shownText(
  q: Executor,
  format: ChunkFormat,
  ino: number,
): Promise<string | undefined> {
  const { rows } = await q.execute<{ size: number }>({
    sql: 'SELECT size FROM fs_inode WHERE ino = ?',
    params: [ino],
  })
  const size = Number(rows[0]?.size ?? 0)
  return textOrDamaged(q, ino, Math.min(size, MAX_MAX_FILE_SIZE), format)
}

/** Up to `max` non-blank lines of a file's chunk (a semantic hit's best match). */
async function chunkLines(
  q: Executor,
  format: ChunkFormat,
  ino: number,
  chunk: { readonly startLine: number; readonly endLine: number },
  max: number,
): Promise<SearchLine[]> {
  const text = await shownText(q, format, ino)
  if (text === undefined) return []
  const all = text.split('\n')
  const out: SearchLine[] = []
  const end = Math.min(chunk.endLine, all.length)
  for (let line = Math.max(1, chunk.startLine); line <= end && out.length < max; line++)
    if (all[line - 1]!.trim().length > 0) out.push({ line, text: window(all[line - 1]!, '') })
  return out
}

/** Version tokens of the given inodes whose doc row is current (indexed at their version). */
async function currentDocs(q: Executor, inos: readonly number[]): Promise<Map<number, string>> {
  const out = new Map<number, string>()
  if (inos.length === 0) return out
  const { rows } = await q.execute<{ ino: number; ctime: number; ctime_nsec: number }>({
    sql: `SELECT i.ino AS ino, i.ctime AS ctime, i.ctime_nsec AS ctime_nsec FROM fs_inode i JOIN agentfs_search_doc d ON d.ino = i.ino
WHERE i.ino IN (${placeholders(inos.length)}) AND d.words >= 0 AND d.version = ${VERSION_SQL} AND i.nlink > 0`,
    params: [...inos],
  })
  for (const r of rows) out.set(Number(r.ino), versionOf(r))
  return out
}

/** The lines of a file where the query's phrases are (lines holding a whole phrase first). */
async function linesOf(
  q: Executor,
  format: ChunkFormat,
  ino: number,
  phrases: readonly QueryPhrase[],
  max: number,
  deadline: number,
): Promise<SearchLine[]> {
  const text = await shownText(q, format, ino)
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
