import {
  type ChunkFormat,
  type Executor,
  parsePath,
  ROOT_INO,
  readThen,
  type Statement,
} from '@agentfs/core'
import { assembleChunks, assembleWhole, MAX_READ_FILE } from './chunks.js'
import { type InodeRow, inodeOf } from './inode.js'
import { CHAIN_MAX, chainSql, HEAD_DEPTH } from './resolver.js'

// A whole file by its path in one statement (two when it is larger than a chunk): the common
// case of `readFile`, beside the general resolver.

/** {@link readRegularFile}'s statement per path length, built once (see {@link chainSql}). */
const wholeCache = new Map<number, string>()

/**
 * The chunks of a file after the first, in order, as values, while its inode's ctime is still
 * the one given: (ino, last chunk index, ino, ctime, ctime_nsec). Integer indices only, so that
 * a count of `last` values means chunks 1 to `last`, each once. Values bound through subqueries
 * (ARCHITECTURE.md, "Statement shapes").
 */
const REST_SQL =
  "SELECT data FROM fs_data WHERE ino = (SELECT ?) AND chunk_index > 0 AND chunk_index <= (SELECT ?) AND typeof(chunk_index) = 'integer' AND EXISTS (SELECT 1 FROM fs_inode WHERE ino = (SELECT ?) AND ctime = (SELECT ?) AND ctime_nsec = (SELECT ?)) ORDER BY chunk_index"

/**
 * The common case of reading a whole file: a path without `..` of at most 16 components that
 * resolves, without links, to a regular file — its inode row and first chunk in one statement,
 * the other chunks (a file larger than one chunk) in a second one checked against the first.
 * Undefined whenever anything else is the case (links, directories, missing entries, `..`,
 * deep paths, a file changed between the two statements); the caller then takes the general
 * path, which reports errors precisely. The chunks come in any order ({@link assembleWhole}
 * places each by its index): sorting them would build a temporary b-tree of the whole file.
 */
export async function readRegularFile(
  q: Executor,
  path: string,
  syscall: string,
  format: ChunkFormat,
  touch?: (node: InodeRow) => Statement | undefined,
): Promise<
  { node: InodeRow; bytes: Uint8Array; touched: boolean; touchError?: unknown } | undefined
> {
  const parsed = parsePath(path, syscall)
  const parts = parsed.parts
  if (
    parts.length === 0 ||
    parts.length > CHAIN_MAX ||
    parsed.trailingSlash ||
    parts.includes('..')
  )
    return undefined
  // One array row: the inode's columns, depth, parent (the chain's), then the first chunk.
  let sql = wholeCache.get(parts.length)
  if (sql === undefined) {
    sql = `SELECT r.*, d.chunk_index AS chunk_index, d.data AS data FROM (${chainSql(parts.length)}) r LEFT JOIN fs_data d ON d.ino = r.ino AND d.chunk_index = 0`
    wholeCache.set(parts.length, sql)
  }
  const statement: Statement = { sql, params: [ROOT_INO, ...parts], arrays: true, first: true }
  let head: readonly unknown[] | undefined
  let node: InodeRow | undefined
  let touched = false
  let touchError: unknown
  if (touch === undefined) {
    head = (await q.execute<unknown[]>(statement)).rows[0]
    node = regularHead(head, parts.length)
  } else {
    // A file of one chunk is read and its access time set in one transaction (one lock
    // cycle); for a larger one the caller sets it after reading the rest.
    const done = await readThen<unknown[]>(q, statement, (result) => {
      head = result.rows[0]
      node = regularHead(head, parts.length)
      return node !== undefined && node.size <= format.size ? touch(node) : undefined
    })
    touched = done.followed
    touchError = done.followError
  }
  if (head === undefined || node === undefined) return undefined
  // A LEFT JOIN row without a chunk means the file has no first chunk (empty, or a hole).
  const index = head[HEAD_DEPTH + 2] as number | null
  const first = index === null ? [] : [{ chunk_index: index, data: head[HEAD_DEPTH + 3] }]
  if (node.size <= format.size)
    return {
      node,
      bytes: assembleWhole(first, format, node.size, node.ino, 'read', path),
      touched,
      ...(touchError === undefined ? {} : { touchError }),
    }
  const last = Math.floor((node.size - 1) / format.size)
  if (index === 0) {
    // Every other chunk as a bare value, in order, read only while the inode's ctime (which
    // moves on every change) is the one the first row saw: as many values as chunks means none
    // is missing (a hole, a change in between, damage: the general read below).
    const { rows: rest } = await q.execute<unknown>({
      sql: REST_SQL,
      params: [node.ino, last, node.ino, node.ctime, node.ctime_nsec],
      pluck: true,
    })
    if (rest.length === last)
      return {
        node,
        bytes: assembleChunks(
          head[HEAD_DEPTH + 3],
          rest,
          format,
          node.size,
          node.ino,
          'read',
          path,
        ),
        touched,
        ...(touchError === undefined ? {} : { touchError }),
      }
  }
  // The other chunks as bare rows (a join would repeat the inode's columns on each), in the
  // same state: each row also carries the inode's ctime, which moves on every change, and a
  // changed (or vanished) ctime gives up (undefined: the caller reads afresh). The one-row
  // start keeps a row even when the inode or the chunks are gone, and brings the values in
  // (ARCHITECTURE.md, "Statement shapes").
  const { rows: found } = await q.execute<{
    c: number | null
    n: number | null
    chunk_index: number | null
    data: unknown
  }>({
    sql: "SELECT i.ctime AS c, i.ctime_nsec AS n, d.chunk_index AS chunk_index, d.data AS data FROM (SELECT ? AS ino, ? AS last) s LEFT JOIN fs_inode i ON i.ino = s.ino LEFT JOIN fs_data d ON d.ino = s.ino AND d.chunk_index > 0 AND d.chunk_index <= s.last AND typeof(d.chunk_index) = 'integer'",
    params: [node.ino, last],
  })
  const stamp = found[0]!
  if (stamp.c !== node.ctime || stamp.n !== node.ctime_nsec) return undefined
  const rest = found.length === 1 && stamp.chunk_index === null ? [] : found
  return {
    node,
    bytes: assembleWhole([...first, ...rest], format, node.size, node.ino, 'read', path),
    touched,
  }
}

/**
 * The inode of {@link readRegularFile}'s first row when the whole path resolved to a regular
 * file of a size it reads at once; undefined for anything else (the general path then).
 */
function regularHead(head: readonly unknown[] | undefined, depth: number): InodeRow | undefined {
  if (!head || head[HEAD_DEPTH] !== depth) return undefined
  const node = inodeOf(head)
  if ((node.mode & 0o170000) !== 0o100000) return undefined
  // Huge or impossible sizes take the general path, which reports them precisely.
  if (!(node.size >= 0 && node.size <= MAX_READ_FILE)) return undefined
  return node
}
