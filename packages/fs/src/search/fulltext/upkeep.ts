import {
  AgentFsError,
  type ChunkFormat,
  type Executor,
  fsError,
  isAgentFsError,
  isFsError,
  placeholders,
  type Queryable,
  ROOT_INO,
  readInode,
  S_IFMT,
  S_IFREG,
  textOf,
  tokenize,
} from '@agentfs/core'
import { walkTree } from '../walk.js'
import { clearIndex, membership, type ResolvedSearchSettings, readSettings } from './settings.js'
import { type IndexStore, openStore } from './store.js'

// Keeping the index up to date: off the write path, brought up to the files as they are by
// each search (see catchUp), a batch per transaction.

/** Files and bytes one catch-up transaction indexes at most (others run after it). */
const BATCH_FILES = 500
const BATCH_BYTES = 32 << 20
export const VERSION_SQL = 'i.ctime * 1000000000 + i.ctime_nsec'
export const REGULAR = `(i.mode & ${S_IFMT}) = ${S_IFREG}`
/** `words` of a doc row: not text, or larger than the size limit. */
const NOT_TEXT = -1
/** `words` of a doc row: left out by the include/exclude globs. */
const LEFT_OUT = -2

export interface Stale {
  readonly ino: number
  readonly size: number
  /** False: the globs leave it out. */
  readonly wanted: boolean
}

/**
 * The rows that say which version of each file an index holds: the full-text index's, or the
 * vectors' of one model (`model` set: the table has a `model` column).
 */
export interface DocTable {
  readonly table: 'agentfs_search_doc' | 'agentfs_embedding_doc'
  /** The column that is {@link LEFT_OUT} for a file the globs leave out. */
  readonly count: 'words' | 'chunks'
  readonly model?: string
}

const SEARCH_DOCS: DocTable = { table: 'agentfs_search_doc', count: 'words' }

/** Up to `limit` files whose doc row is missing or out of date, and doc rows of gone files. */
export async function staleFiles(
  q: Queryable,
  settings: ResolvedSearchSettings,
  limit: number,
  docs: DocTable = SEARCH_DOCS,
): Promise<{ stale: Stale[]; gone: number[] }> {
  const { table, count } = docs
  const byModel = docs.model === undefined ? '' : ' AND d.model = ?'
  const model = docs.model === undefined ? [] : [docs.model]
  const filter = membership(settings)
  if (!filter) {
    const { rows } = await q.execute<{ ino: number; size: number }>({
      sql: `SELECT i.ino AS ino, i.size AS size FROM fs_inode i LEFT JOIN ${table} d ON d.ino = i.ino${byModel}
WHERE ${REGULAR} AND i.nlink > 0 AND (d.ino IS NULL OR d.version != ${VERSION_SQL} OR d.${count} = ${LEFT_OUT}) LIMIT ?`,
      params: [...model, limit],
    })
    const { rows: gone } = await q.execute<{ ino: number }>({
      sql: `SELECT d.ino AS ino FROM ${table} d LEFT JOIN fs_inode i ON i.ino = d.ino WHERE (i.ino IS NULL OR NOT ${REGULAR} OR i.nlink = 0)${byModel} LIMIT ?`,
      params: [...model, limit],
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
  const { rows: docRows } = await q.execute<{ ino: number; n: number; current: number | null }>({
    sql: `SELECT d.ino AS ino, d.${count} AS n, d.version = ${VERSION_SQL} AS current FROM ${table} d LEFT JOIN fs_inode i ON i.ino = d.ino AND ${REGULAR} AND i.nlink > 0${docs.model === undefined ? '' : ' WHERE d.model = ?'}`,
    params: model,
  })
  const gone: number[] = []
  const seen = new Map<number, { current: boolean; n: number }>()
  for (const d of docRows) {
    const ino = Number(d.ino)
    if (d.current === null || !files.has(ino)) {
      if (gone.length < limit) gone.push(ino)
    } else seen.set(ino, { current: Number(d.current) === 1, n: Number(d.n) })
  }
  const candidates: number[] = []
  for (const [ino, wanted] of files) {
    const doc = seen.get(ino)
    if (!doc?.current || (doc.n === LEFT_OUT) === wanted) candidates.push(ino)
  }
  const stale: Stale[] = []
  for (let i = 0; i < candidates.length && stale.length < limit; i += 500) {
    const batch = candidates.slice(i, Math.min(i + 500, i + limit - stale.length))
    const { rows } = await q.execute<{ ino: number; size: number }>({
      sql: `SELECT i.ino AS ino, i.size AS size FROM fs_inode i WHERE i.ino IN (${placeholders(batch.length)}) AND ${REGULAR} AND i.nlink > 0`,
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
  format: ChunkFormat,
  settings: ResolvedSearchSettings,
  file: Stale,
): Promise<number> {
  let words: string[] | undefined
  let read = 0
  if (file.wanted && sizeOk(file.size) && file.size <= settings.maxFileSize) {
    const text = await textOrDamaged(tx, file.ino, file.size, format)
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
export async function textOrDamaged(
  q: Executor,
  ino: number,
  size: number,
  format: ChunkFormat,
): Promise<string | undefined> {
  if (!sizeOk(size)) return undefined
  try {
    return textOf(await readInode(q, ino, size, format))
  } catch (error) {
    if (isFsError(error, 'EIO')) return undefined
    throw error
  }
}

/** Catch-up transactions one search runs at most before it searches what is indexed. */
const MAX_ROUNDS = 10_000

/** What one upkeep pass did. */
export interface Upkeep {
  /** False when the database is read-only (nothing could be written). */
  readonly writable: boolean
  /** Files looked at again (indexed, or found not text, too large or left out). */
  readonly files: number
  /** Index rows of files that are gone, dropped. */
  readonly dropped: number
}

/**
 * Brings the index up to the files as they are, a batch per transaction. A read-only database
 * is left as it is (`writable: false`).
 */
export async function catchUp(
  q: Queryable,
  format: ChunkFormat,
  deadline: number,
): Promise<Upkeep> {
  let files = 0
  let dropped = 0
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
          bytes += await indexFile(tx, store, format, settings, file)
          indexed++
        }
        files += indexed
        dropped += gone.length
        return indexed === stale.length && stale.length < BATCH_FILES && gone.length < BATCH_FILES
      })
    } catch (error) {
      if (isAgentFsError(error, 'READONLY')) return { writable: false, files, dropped }
      throw error
    }
    if (done) break
    if (Date.now() > deadline) throw timedOut()
  }
  return { writable: true, files, dropped }
}

/**
 * Brings the index up to date now (a search does it anyway): before a database is handed to
 * readers that cannot write (a read-only copy, evidence), or with `rebuild` from nothing.
 * Refused (READONLY) on a read-only database.
 */
export async function updateIndex(
  q: Queryable,
  format: ChunkFormat,
  options: { rebuild?: boolean; timeoutMs?: number } = {},
): Promise<Upkeep> {
  const timeoutMs = options.timeoutMs ?? 600_000
  if (!(timeoutMs > 0))
    throw fsError('EINVAL', 'search', undefined, { hint: 'timeoutMs must be a positive number' })
  if (options.rebuild) await q.transaction((tx) => clearIndex(tx))
  const done = await catchUp(q, format, Date.now() + timeoutMs)
  if (!done.writable)
    throw new AgentFsError(
      'READONLY',
      'the search index cannot be updated: the database is read-only; open it writable',
    )
  return done
}

export const timedOut = () =>
  fsError('ETIMEDOUT', 'search', undefined, {
    hint: 'the search ran out of time; search below a narrower path, or raise timeoutMs',
  })

/** Files whose doc row is missing or out of date (what a read-only search cannot see). */
export async function countBehind(q: Executor): Promise<number> {
  const { rows } = await q.execute<{ n: number }>({
    sql: `SELECT count(*) AS n FROM fs_inode i LEFT JOIN agentfs_search_doc d ON d.ino = i.ino
WHERE ${REGULAR} AND i.nlink > 0 AND (d.ino IS NULL OR d.version != ${VERSION_SQL})`,
  })
  return Number(rows[0]?.n ?? 0)
}
