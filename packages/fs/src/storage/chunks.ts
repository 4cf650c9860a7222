import {
  type ChunkFormat,
  chunkBytes,
  corruptError,
  decodeChunk,
  type Executor,
  encodeChunk,
  executeDeferred,
  fsError,
  placeholders,
} from '@agentfs/core'
import { isDir } from './inode.js'

/**
 * Largest file size, in bytes: 16 TiB (ext4's limit with 4 KiB blocks). Writes, truncates and
 * handle positions beyond it are EFBIG; a stored size beyond it is damage (EIO).
 */
export const MAX_FILE_SIZE = 2 ** 44

/** Largest file `readFile` returns in one buffer (Node's limit); stream anything larger. */
export const MAX_READ_FILE = 2 ** 31 - 1

/** EFBIG unless `end` (a file size) is within {@link MAX_FILE_SIZE}. */
export function checkFileEnd(end: number, syscall: string, path?: string): void {
  if (!(end <= MAX_FILE_SIZE))
    throw fsError('EFBIG', syscall, path, {
      hint: `files are limited to ${MAX_FILE_SIZE} bytes (16 TiB)`,
    })
}

/** EIO when a stored size cannot be a file's (damage or a crafted row). */
export function checkStoredSize(size: unknown, ino: number, syscall: string, path?: string): void {
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0 || size > MAX_FILE_SIZE)
    throw corruptError(syscall, path, `inode ${ino} has the impossible size ${String(size)}`)
}

/** The chunk's bytes, or EIO when the row holds something other than a BLOB (core's check). */
export { chunkBytes }

/** Chunks inserted per statement when writing many (bounded statement size, few round trips). */
const BATCH = 32

/**
 * The insert of 1 to {@link BATCH} chunks, built once each: the driver's statement cache then
 * finds it by a string whose hash is already known (a string built per call is hashed anew).
 */
const INSERT_SQL = Array.from(
  { length: BATCH + 1 },
  (_, rows) =>
    `INSERT OR REPLACE INTO fs_data (ino, chunk_index, data) VALUES ${Array.from({ length: rows }, () => '(?, ?, ?)').join(', ')}`,
)
const insertSql = (rows: number) => INSERT_SQL[rows]!

/**
 * Bytes a write may leave queued for the transaction's next request (see `Executor.defer`);
 * larger writes go at once, so one request never carries a whole large file.
 */
const DEFER_BYTES = 64 * 1024

/** Writes `chunks` (index → bytes) for `ino`, batched, stored as `format` says. */
export async function putChunks(
  q: Executor,
  ino: number,
  format: ChunkFormat,
  chunks: Array<[number, Uint8Array]>,
): Promise<void> {
  for (let i = 0; i < chunks.length; i += BATCH) {
    const slice = chunks.slice(i, i + BATCH)
    const params: Array<number | Uint8Array> = []
    let bytes = 0
    for (const [index, data] of slice) {
      const stored = encodeChunk(format, data)
      params.push(ino, index, stored)
      bytes += stored.byteLength
    }
    const statement = { sql: insertSql(slice.length), params }
    if (chunks.length <= BATCH && bytes <= DEFER_BYTES) await executeDeferred(q, statement)
    else await q.execute(statement)
  }
}

/** Reads bytes `[offset, offset + length)` of a file of `size` bytes (clamped to the size). */
export async function readRange(
  q: Executor,
  ino: number,
  size: number,
  format: ChunkFormat,
  offset: number,
  length: number,
): Promise<Uint8Array> {
  const chunkSize = format.size
  const end = Math.min(size, offset + length)
  if (end <= offset) return new Uint8Array(0)
  const first = Math.floor(offset / chunkSize)
  const last = Math.floor((end - 1) / chunkSize)
  // Values bound through subqueries (ARCHITECTURE.md, "Statement shapes").
  const { rows } = await q.execute<{ chunk_index: number; data: unknown }>({
    sql: 'SELECT chunk_index, data FROM fs_data WHERE ino = (SELECT ?) AND chunk_index >= (SELECT ?) AND chunk_index <= (SELECT ?) ORDER BY chunk_index',
    params: [ino, first, last],
  })
  return assemble(rows, format, offset, end, ino)
}

/**
 * The bytes `[offset, end)` from the chunks covering them (in order): a view of the chunk when
 * one covers it all, otherwise one copy. Absent chunks (holes) and the missing tail of a short
 * chunk read as zeros; bytes a damaged chunk holds beyond `chunkSize` are ignored, so a read
 * always agrees with the size. A chunk that is not a BLOB, or a damaged compressed one, is EIO.
 */
export function assemble(
  rows: readonly { chunk_index: number | null; data: unknown }[],
  format: ChunkFormat,
  offset: number,
  end: number,
  ino: number,
  syscall = 'read',
  path?: string,
): Uint8Array {
  const chunkSize = format.size
  if (format.codec) rows = decodeRows(rows, format, ino, syscall, path)
  const only = rows.length === 1 ? rows[0] : undefined
  if (
    only?.data instanceof Uint8Array &&
    only.chunk_index === Math.floor(offset / chunkSize) &&
    only.chunk_index === Math.floor((end - 1) / chunkSize)
  ) {
    const start = offset - only.chunk_index * chunkSize
    if (start + (end - offset) <= Math.min(only.data.byteLength, chunkSize))
      return only.data.subarray(start, start + (end - offset))
  }
  const out = Buffer.allocUnsafe(end - offset)
  fill(rows, chunkSize, offset, end, ino, syscall, path, out, 0)
  return out
}

/**
 * Writes the bytes `[offset, end)` of the file from `rows` (decoded chunks) into `out` at `at`.
 * Chunks in increasing index order are disjoint: when the bytes they copied add up to the length,
 * every byte was written and nothing needed zeroing. Otherwise (holes, short chunks, rows out of
 * order or repeated, as a damaged database could give) the range is zeroed and the bytes copied
 * again, so no byte of what `out` held before is ever left in it.
 */
function fill(
  rows: readonly { chunk_index: number | null; data: unknown }[],
  chunkSize: number,
  offset: number,
  end: number,
  ino: number,
  syscall: string,
  path: string | undefined,
  out: Uint8Array,
  at: number,
): void {
  const copyInto = () => {
    let copied = 0
    let last = -1
    for (const { chunk_index, data } of rows) {
      if (chunk_index === null) continue
      if (chunk_index <= last) copied = Number.NaN
      last = chunk_index
      const bytes = chunkBytes(data, ino, syscall, path)
      const chunkStart = chunk_index * chunkSize
      const from = Math.max(offset, chunkStart)
      const to = Math.min(end, chunkStart + Math.min(bytes.byteLength, chunkSize))
      if (to > from) {
        out.set(bytes.subarray(from - chunkStart, to - chunkStart), at + from - offset)
        copied += to - from
      }
    }
    return copied
  }
  if (copyInto() === end - offset) return
  out.fill(0, at, at + (end - offset))
  copyInto()
}

/** `rows` with each chunk's stored bytes decoded (compressed databases). */
function decodeRows(
  rows: readonly { chunk_index: number | null; data: unknown }[],
  format: ChunkFormat,
  ino: number,
  syscall: string,
  path: string | undefined,
): { chunk_index: number | null; data: unknown }[] {
  return rows.map((row) =>
    row.chunk_index === null
      ? row
      : { chunk_index: row.chunk_index, data: decodeChunk(format, row.data, ino, syscall, path) },
  )
}

/**
 * A positional read by inode in one statement, into `out` at `at`: the inode's mode and size
 * together with the chunks covering `[offset, offset + length)`, clamped to the size, copied
 * straight into the caller's buffer (no buffer of its own). Returns the mode, the size and the
 * bytes read; nothing is read from a directory. Undefined when the inode is gone. (Open handles
 * read this way: one look-up per read instead of two.) No ORDER BY: the chunks are placed by
 * their index, and sorting the joined rows would cost a temporary b-tree.
 */
export function readAt(
  q: Executor,
  ino: number,
  format: ChunkFormat,
  offset: number,
  length: number,
  out: Uint8Array,
  at: number,
): ReadAt | undefined | Promise<ReadAt | undefined> {
  const chunkSize = format.size
  const statement = {
    sql: READ_AT_SQL,
    params: [
      Math.floor(offset / chunkSize),
      Math.floor((offset + Math.max(length, 1) - 1) / chunkSize),
      ino,
    ],
  }
  // A free in-process connection answers at once: no promise of ours (W6's read).
  const now = q.executeNow?.<ReadAtRow>(statement)
  if (now !== undefined) return readAtRows(now.rows, ino, format, offset, length, out, at)
  return q
    .execute<ReadAtRow>(statement)
    .then(({ rows }) => readAtRows(rows, ino, format, offset, length, out, at))
}

/** What {@link readAt} read: the inode's mode and size, and how many bytes it copied. */
export interface ReadAt {
  readonly mode: number
  readonly size: number
  readonly bytesRead: number
}

type ReadAtRow = { mode: number; size: number; chunk_index: number | null; data: unknown }

// The values come in through the one-row start (ARCHITECTURE.md, "Statement shapes").
const READ_AT_SQL =
  'SELECT i.mode AS mode, i.size AS size, d.chunk_index AS chunk_index, d.data AS data FROM (SELECT ? AS lo, ? AS hi, ? AS ino) s JOIN fs_inode i ON i.ino = s.ino LEFT JOIN fs_data d ON d.ino = i.ino AND d.chunk_index >= s.lo AND d.chunk_index <= s.hi'

function readAtRows(
  rows: readonly ReadAtRow[],
  ino: number,
  format: ChunkFormat,
  offset: number,
  length: number,
  out: Uint8Array,
  at: number,
): ReadAt | undefined {
  const head = rows[0]
  if (!head) return undefined
  checkStoredSize(head.size, ino, 'read')
  const end = Math.min(head.size, offset + length)
  if (end <= offset || isDir(head.mode)) return { mode: head.mode, size: head.size, bytesRead: 0 }
  const chunks = format.codec ? decodeRows(rows, format, ino, 'read', undefined) : rows
  fill(chunks, format.size, offset, end, ino, 'read', undefined, out, at)
  return { mode: head.mode, size: head.size, bytesRead: end - offset }
}

/**
 * Reads a whole file of `size` bytes: exactly `size` bytes, holes as zeros. EFBIG past what one
 * buffer can hold (stream it instead); EIO for an impossible size or a damaged chunk.
 */
export async function readAll(
  q: Executor,
  ino: number,
  size: number,
  format: ChunkFormat,
  syscall = 'read',
  path?: string,
): Promise<Uint8Array> {
  const chunkSize = format.size
  checkStoredSize(size, ino, syscall, path)
  if (size > MAX_READ_FILE)
    throw fsError('EFBIG', syscall, path, {
      hint: `the file is ${size} bytes, more than one buffer holds; read it with a stream or a handle`,
    })
  if (size === 0) return new Uint8Array(0)
  // Values bound through subqueries (ARCHITECTURE.md, "Statement shapes").
  const { rows } = await q.execute<{ chunk_index: number; data: unknown }>({
    sql: 'SELECT chunk_index, data FROM fs_data WHERE ino = (SELECT ?) AND chunk_index <= (SELECT ?) ORDER BY chunk_index',
    params: [ino, Math.floor((size - 1) / chunkSize)],
  })
  return assembleWhole(rows, format, size, ino, syscall, path)
}

/** A whole file from all its chunks: one view when a single chunk is the whole file. */
export function assembleWhole(
  rows: readonly { chunk_index: number | null; data: unknown }[],
  format: ChunkFormat,
  size: number,
  ino: number,
  syscall: string,
  path?: string,
): Uint8Array {
  const only = rows.length === 1 ? rows[0] : undefined
  if (
    !format.codec &&
    only?.chunk_index === 0 &&
    only.data instanceof Uint8Array &&
    only.data.byteLength === size
  )
    return only.data
  return assemble(rows, format, 0, size, ino, syscall, path)
}

/**
 * A whole file of `size` bytes from its chunks in order, every one present: `first` is chunk
 * 0's stored data, `rest[i]` chunk i + 1's (values, no row objects: a large file has tens of
 * thousands). A chunk cut short (damage) leaves zeros, as in {@link assemble}; a chunk that is
 * not a BLOB, or a damaged compressed one, is EIO.
 */
export function assembleChunks(
  first: unknown,
  rest: readonly unknown[],
  format: ChunkFormat,
  size: number,
  ino: number,
  syscall: string,
  path?: string,
): Uint8Array {
  const chunkSize = format.size
  const out = Buffer.allocUnsafe(size)
  const copyAll = () => {
    let copied = 0
    for (let i = -1; i < rest.length; i++) {
      const stored = i < 0 ? first : rest[i]
      const data = format.codec ? decodeChunk(format, stored, ino, syscall, path) : stored
      const bytes = chunkBytes(data, ino, syscall, path)
      const start = (i + 1) * chunkSize
      const end = Math.min(size, start + Math.min(bytes.byteLength, chunkSize))
      if (end > start) {
        out.set(bytes.subarray(0, end - start), start)
        copied += end - start
      }
    }
    return copied
  }
  // The chunks are disjoint: bytes copied adding up to the size means every byte was written.
  if (copyAll() === size) return out
  out.fill(0)
  copyAll()
  return out
}

/**
 * Writes `data` at `offset` into a file of `oldSize` bytes and returns the new size. A gap past
 * the old end becomes a hole: whole chunks inside it are not stored (they read as zeros), and
 * only the old last chunk is padded to full size, so every stored chunk but the last is exactly
 * `chunkSize`. Chunks covered completely are written from views of `data` (no copies);
 * partially covered ones are merged with their stored bytes. EFBIG past {@link MAX_FILE_SIZE}.
 */
export async function writeRange(
  q: Executor,
  ino: number,
  oldSize: number,
  format: ChunkFormat,
  offset: number,
  data: Uint8Array,
): Promise<number> {
  const chunkSize = format.size
  const writeEnd = offset + data.byteLength
  checkFileEnd(writeEnd, 'write')
  const newSize = Math.max(oldSize, writeEnd)
  const indices: number[] = []
  // The old last chunk, when it is partial and the file grows past it, is padded with zeros.
  const oldLast = oldSize > 0 && oldSize % chunkSize !== 0 ? Math.floor(oldSize / chunkSize) : -1
  const first = data.byteLength > 0 ? Math.floor(offset / chunkSize) : -1
  const last = data.byteLength > 0 ? Math.floor((writeEnd - 1) / chunkSize) : -2
  if (oldLast !== -1 && newSize > oldSize && (oldLast < first || oldLast > last))
    indices.push(oldLast)
  for (let index = first; index >= 0 && index <= last; index++) indices.push(index)
  if (indices.length === 0) return newSize
  // Chunks that keep some old bytes must be read first.
  const needOld: number[] = []
  for (const index of indices) {
    const chunkStart = index * chunkSize
    const chunkLen = Math.min(chunkSize, newSize - chunkStart)
    const coveredFrom = Math.max(chunkStart, offset)
    const coveredTo = Math.min(chunkStart + chunkLen, writeEnd)
    const fullyCovered = coveredFrom <= chunkStart && coveredTo >= chunkStart + chunkLen
    if (!fullyCovered && chunkStart < oldSize) needOld.push(index)
  }
  const old = new Map<number, Uint8Array>()
  if (needOld.length > 0) {
    const { rows } = await q.execute<{ chunk_index: number; data: unknown }>({
      sql: `SELECT chunk_index, data FROM fs_data WHERE ino = (SELECT ?) AND chunk_index IN (${placeholders(needOld.length)})`,
      params: [ino, ...needOld],
    })
    for (const row of rows) old.set(row.chunk_index, decodeChunk(format, row.data, ino, 'write'))
  }
  let pending: Array<[number, Uint8Array]> = []
  for (const index of indices) {
    const chunkStart = index * chunkSize
    const chunkLen = Math.min(chunkSize, newSize - chunkStart)
    const coveredFrom = Math.max(chunkStart, offset)
    const coveredTo = Math.min(chunkStart + chunkLen, writeEnd)
    let chunk: Uint8Array
    if (coveredFrom <= chunkStart && coveredTo >= chunkStart + chunkLen) {
      chunk = data.subarray(chunkStart - offset, chunkStart - offset + chunkLen)
    } else {
      chunk = new Uint8Array(chunkLen)
      const previous = old.get(index)
      if (previous) {
        // Only the bytes that were inside the old size count (a damaged chunk may hold more).
        const keep = Math.max(0, Math.min(previous.byteLength, chunkLen, oldSize - chunkStart))
        chunk.set(previous.subarray(0, keep))
      }
      if (coveredTo > coveredFrom) {
        chunk.set(data.subarray(coveredFrom - offset, coveredTo - offset), coveredFrom - chunkStart)
      }
    }
    pending.push([index, chunk])
    if (pending.length >= BATCH) {
      await putChunks(q, ino, format, pending)
      pending = []
    }
  }
  if (pending.length > 0) await putChunks(q, ino, format, pending)
  return newSize
}

/** Cuts or extends (with zeros) a file to `newSize`. */
export async function resize(
  q: Executor,
  ino: number,
  oldSize: number,
  format: ChunkFormat,
  newSize: number,
): Promise<void> {
  const chunkSize = format.size
  if (newSize === oldSize) return
  checkFileEnd(newSize, 'truncate')
  if (newSize > oldSize) {
    await writeRange(q, ino, oldSize, format, newSize, new Uint8Array(0))
    return
  }
  if (newSize === 0) {
    await executeDeferred(q, { sql: 'DELETE FROM fs_data WHERE ino = ?', params: [ino] })
    return
  }
  const lastIndex = Math.floor((newSize - 1) / chunkSize)
  await executeDeferred(q, {
    sql: 'DELETE FROM fs_data WHERE ino = (SELECT ?) AND chunk_index > (SELECT ?)',
    params: [ino, lastIndex],
  })
  const keep = newSize - lastIndex * chunkSize
  if (format.codec) {
    // A compressed chunk cannot be cut in SQL: it is read, cut and stored again.
    const { rows } = await q.execute<{ data: unknown }>({
      sql: 'SELECT data FROM fs_data WHERE ino = ? AND chunk_index = ?',
      params: [ino, lastIndex],
    })
    const bytes = rows[0] ? decodeChunk(format, rows[0].data, ino, 'truncate') : undefined
    if (bytes && bytes.byteLength > keep)
      await putChunks(q, ino, format, [[lastIndex, bytes.subarray(0, keep)]])
    return
  }
  await executeDeferred(q, {
    sql: 'UPDATE fs_data SET data = substr(data, 1, ?) WHERE ino = (SELECT ?) AND chunk_index = (SELECT ?) AND length(data) > (SELECT ?)',
    params: [keep, ino, lastIndex, keep],
  })
}
