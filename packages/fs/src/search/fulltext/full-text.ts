import {
  AgentFsError,
  type Executor,
  fsError,
  isAgentFsError,
  isFsError,
  normalizePath,
  parseQuery,
  phrasePositions,
  type Queryable,
  type QueryPhrase,
  ROOT_INO,
  readInode,
  readMeta,
  S_IFMT,
  S_IFREG,
  textOf,
  tokenize,
  writeMeta,
} from '@agentfs/core'
import { pathOf } from '../../storage/mutate.js'
import { lookup } from '../../storage/resolver.js'
import { compileGlob } from '../matchers.js'
import { walkTree } from '../walk.js'
import { type IndexStore, META_SEARCH_STORE, namedStore, openStore } from './store.js'

/** Which files the index holds: text files up to a size, optionally by glob. */
export interface SearchSettings {
  /** Files larger than this are not indexed (default 8 MiB; at most 64 MiB). */
  readonly maxFileSize?: number
  /** When given, only files whose path matches one of these globs are indexed. */
  readonly include?: readonly string[]
  /** Files whose path matches one of these globs are not indexed. */
  readonly exclude?: readonly string[]
  /**
   * Where the words are kept: `auto` (default) SQLite's FTS5 where the engine has it, else the
   * postings table; `postings` always the table — a database the Turso engine 0.7 must open
   * (it cannot load a schema holding FTS5 tables); `fts5` refused on an engine without it.
   */
  readonly store?: 'auto' | 'fts5' | 'postings'
}

/** The settings with every default filled in. */
export type ResolvedSearchSettings = Required<SearchSettings>

/** The `agentfs_meta` row holding the database's {@link SearchSettings} (JSON). */
export const META_SEARCH_SETTINGS = 'search.settings'
export const DEFAULT_MAX_FILE_SIZE = 8 << 20
export const MAX_MAX_FILE_SIZE = 64 << 20
/** Globs one setting may list. */
export const MAX_SETTING_GLOBS = 64

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
/** Files and bytes one catch-up transaction indexes at most (others run after it). */
const BATCH_FILES = 500
const BATCH_BYTES = 32 << 20
const VERSION_SQL = 'i.ctime * 1000000000 + i.ctime_nsec'
const REGULAR = `(i.mode & ${S_IFMT}) = ${S_IFREG}`
/** `words` of a doc row: not text, or larger than the size limit. */
const NOT_TEXT = -1
/** `words` of a doc row: left out by the include/exclude globs. */
const LEFT_OUT = -2

function invalid(hint: string): AgentFsError {
  return new AgentFsError('INVALID_ARGUMENT', `search settings: ${hint}`)
}

/** Checks and completes settings (globs compiled once to catch bad ones). */
export function resolveSettings(given: SearchSettings = {}): ResolvedSearchSettings {
  if (typeof given !== 'object' || given === null) throw invalid('settings must be an object')
  const maxFileSize = given.maxFileSize ?? DEFAULT_MAX_FILE_SIZE
  if (!Number.isSafeInteger(maxFileSize) || maxFileSize < 0 || maxFileSize > MAX_MAX_FILE_SIZE)
    throw invalid(
      `maxFileSize must be a whole number of bytes from 0 to ${MAX_MAX_FILE_SIZE}, not ${String(maxFileSize)}`,
    )
  const globs = (name: string, list: unknown): string[] => {
    if (list === undefined) return []
    if (!Array.isArray(list) || list.some((g) => typeof g !== 'string' || g === ''))
      throw invalid(`${name} must be a list of non-empty glob strings`)
    if (list.length > MAX_SETTING_GLOBS)
      throw invalid(`${name} may list at most ${MAX_SETTING_GLOBS} globs, not ${list.length}`)
    for (const g of list) compileGlob(g, { dot: true, matchBase: true })
    return [...list]
  }
  const store = given.store ?? 'auto'
  if (store !== 'auto' && store !== 'fts5' && store !== 'postings')
    throw invalid(`store must be auto, fts5 or postings, not ${String(store)}`)
  return {
    maxFileSize,
    include: globs('include', given.include),
    exclude: globs('exclude', given.exclude),
    store,
  }
}

/** The database's settings (defaults when none were set). */
export async function readSettings(q: Executor): Promise<ResolvedSearchSettings> {
  const stored = await readMeta(q, META_SEARCH_SETTINGS)
  if (stored === undefined || stored === null) return resolveSettings()
  try {
    return resolveSettings(JSON.parse(String(stored)) as SearchSettings)
  } catch (error) {
    throw new AgentFsError(
      'CORRUPT',
      `the search settings stored in agentfs_meta (${META_SEARCH_SETTINGS}) are not valid: ${error instanceof Error ? error.message : String(error)}; set them again with \`agentfs search DB --settings\``,
    )
  }
}

/**
 * Stores new settings and empties the index in the same transaction: the next search rebuilds
 * it under them. Returns the settings as stored.
 */
export async function writeSettings(
  q: Queryable,
  given: SearchSettings,
): Promise<ResolvedSearchSettings> {
  const settings = resolveSettings(given)
  await q.transaction(async (tx) => {
    await writeMeta(tx, META_SEARCH_SETTINGS, JSON.stringify(settings))
    await clearIndex(tx)
    // The store is chosen now: `postings` drops the FTS5 tables in this transaction.
    await openStore(tx, settings.store)
  })
  return settings
}

/** Empties the index (its next catch-up rebuilds it). */
export async function clearIndex(tx: Executor): Promise<void> {
  await tx.execute({ sql: 'DELETE FROM agentfs_search_doc' })
  await tx.execute({ sql: 'DELETE FROM agentfs_search_posting' })
  await writeMeta(tx, META_SEARCH_STORE, undefined)
}

type Filter = (path: string) => boolean

function membership(settings: ResolvedSearchSettings): Filter | undefined {
  if (settings.include.length === 0 && settings.exclude.length === 0) return undefined
  const compile = (g: string) => compileGlob(g, { dot: true, matchBase: true })
  const include = settings.include.map(compile)
  const exclude = settings.exclude.map(compile)
  return (path) =>
    (include.length === 0 || include.some((m) => m(path))) && !exclude.some((m) => m(path))
}

interface Stale {
  readonly ino: number
  readonly size: number
  /** False: the globs leave it out. */
  readonly wanted: boolean
}

/** Up to `limit` files whose doc row is missing or out of date, and doc rows of gone files. */
async function staleFiles(
  q: Queryable,
  settings: ResolvedSearchSettings,
  limit: number,
): Promise<{ stale: Stale[]; gone: number[] }> {
  const filter = membership(settings)
  if (!filter) {
    const { rows } = await q.execute<{ ino: number; size: number }>({
      sql: `SELECT i.ino AS ino, i.size AS size FROM fs_inode i LEFT JOIN agentfs_search_doc d ON d.ino = i.ino
WHERE ${REGULAR} AND i.nlink > 0 AND (d.ino IS NULL OR d.version != ${VERSION_SQL} OR d.words = ${LEFT_OUT}) LIMIT ?`,
      params: [limit],
    })
    const { rows: gone } = await q.execute<{ ino: number }>({
      sql: `SELECT d.ino AS ino FROM agentfs_search_doc d LEFT JOIN fs_inode i ON i.ino = d.ino WHERE i.ino IS NULL OR NOT ${REGULAR} OR i.nlink = 0 LIMIT ?`,
      params: [limit],
    })
    return {
      stale: rows.map((r) => ({ ...numbers(r), wanted: true })),
      gone: gone.map((r) => Number(r.ino)),
    }
  }
  // With globs a file's place decides: every regular file's path, compared with its doc row.
  const entries = await walkTree(q, ROOT_INO, { syscall: 'search' })
  const files = new Map<number, boolean>()
  for (const e of entries)
    if ((e.mode & S_IFMT) === S_IFREG)
      files.set(e.ino, (files.get(e.ino) ?? false) || filter(`/${e.rel}`))
  const { rows: docs } = await q.execute<{ ino: number; words: number; current: number | null }>({
    sql: `SELECT d.ino AS ino, d.words AS words, d.version = ${VERSION_SQL} AS current FROM agentfs_search_doc d LEFT JOIN fs_inode i ON i.ino = d.ino AND ${REGULAR} AND i.nlink > 0`,
  })
  const gone: number[] = []
  const seen = new Map<number, { current: boolean; words: number }>()
  for (const d of docs) {
    const ino = Number(d.ino)
    if (d.current === null || !files.has(ino)) {
      if (gone.length < limit) gone.push(ino)
    } else seen.set(ino, { current: Number(d.current) === 1, words: Number(d.words) })
  }
  const candidates: number[] = []
  for (const [ino, wanted] of files) {
    const doc = seen.get(ino)
    if (!doc?.current || (doc.words === LEFT_OUT) === wanted) candidates.push(ino)
  }
  const stale: Stale[] = []
  for (let i = 0; i < candidates.length && stale.length < limit; i += 500) {
    const batch = candidates.slice(i, Math.min(i + 500, i + limit - stale.length))
    const { rows } = await q.execute<{ ino: number; size: number }>({
      sql: `SELECT i.ino AS ino, i.size AS size FROM fs_inode i WHERE i.ino IN (${batch.map(() => '?').join(', ')}) AND ${REGULAR} AND i.nlink > 0`,
      params: batch,
    })
    for (const r of rows) stale.push({ ...numbers(r), wanted: files.get(Number(r.ino)) === true })
  }
  return { stale, gone }
}

const numbers = (r: { ino: number; size: number }) => ({
  ino: Number(r.ino),
  size: Number(r.size),
})

async function indexFile(
  tx: Queryable,
  store: IndexStore,
  chunkSize: number,
  settings: ResolvedSearchSettings,
  file: Stale,
): Promise<number> {
  let words: string[] | undefined
  let read = 0
  if (file.wanted && sizeOk(file.size) && file.size <= settings.maxFileSize) {
    const text = await textOrDamaged(tx, file.ino, file.size, chunkSize)
    read = file.size
    if (text !== undefined) words = tokenize(text)
  }
  // The version is the inode's, read by SQL (ns since the epoch does not fit a double).
  await tx.execute({
    sql: `INSERT INTO agentfs_search_doc (ino, version, words) SELECT i.ino, ${VERSION_SQL}, ? FROM fs_inode i WHERE i.ino = ?
ON CONFLICT(ino) DO UPDATE SET version = excluded.version, words = excluded.words`,
    params: [words ? words.length : file.wanted ? NOT_TEXT : LEFT_OUT, file.ino],
  })
  if (words) await store.add(tx, file.ino, words)
  else await store.remove(tx, file.ino)
  return read
}

const sizeOk = (size: number) => Number.isSafeInteger(size) && size >= 0

/**
 * A file's text; undefined when it is not text, or when its rows are damaged (a size or chunk
 * no file can have, as a crafted database or a sync peer may hold): such a file is left out of
 * the index, never the reason every search fails (fsck reports it).
 */
async function textOrDamaged(
  q: Executor,
  ino: number,
  size: number,
  chunkSize: number,
): Promise<string | undefined> {
  if (!sizeOk(size)) return undefined
  try {
    return textOf(await readInode(q, ino, size, chunkSize))
  } catch (error) {
    if (isFsError(error, 'EIO')) return undefined
    throw error
  }
}

/** Catch-up transactions one search runs at most before it searches what is indexed. */
const MAX_ROUNDS = 10_000

/**
 * Brings the index up to the files as they are, a batch per transaction. Returns false when the
 * database is read-only (nothing could be written).
 */
export async function catchUp(q: Queryable, chunkSize: number, deadline: number): Promise<boolean> {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    let done: boolean
    try {
      done = await q.transaction(async (tx) => {
        const settings = await readSettings(tx)
        const store = await openStore(tx, settings.store)
        const { stale, gone } = await staleFiles(tx, settings, BATCH_FILES)
        for (const ino of gone) {
          await store.remove(tx, ino)
          await tx.execute({ sql: 'DELETE FROM agentfs_search_doc WHERE ino = ?', params: [ino] })
        }
        let bytes = 0
        let indexed = 0
        for (const file of stale) {
          if (bytes >= BATCH_BYTES) break
          bytes += await indexFile(tx, store, chunkSize, settings, file)
          indexed++
        }
        return indexed === stale.length && stale.length < BATCH_FILES && gone.length < BATCH_FILES
      })
    } catch (error) {
      if (isAgentFsError(error, 'READONLY')) return false
      throw error
    }
    if (done) return true
    if (Date.now() > deadline) throw timedOut()
  }
  return true
}

const timedOut = () =>
  fsError('ETIMEDOUT', 'search', undefined, {
    hint: 'the search ran out of time; search below a narrower path, or raise timeoutMs',
  })

/** Files whose doc row is missing or out of date (what a read-only search cannot see). */
async function countBehind(q: Executor): Promise<number> {
  const { rows } = await q.execute<{ n: number }>({
    sql: `SELECT count(*) AS n FROM fs_inode i LEFT JOIN agentfs_search_doc d ON d.ino = i.ino
WHERE ${REGULAR} AND i.nlink > 0 AND (d.ino IS NULL OR d.version != ${VERSION_SQL})`,
  })
  return Number(rows[0]?.n ?? 0)
}

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
  const writable = await catchUp(q, chunkSize, deadline)
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
