import type { Executor } from '@agentfs/core'

/** Chunks inserted per statement when writing many (bounded statement size, few round trips). */
const BATCH = 32

const insertSql = (rows: number) =>
  `INSERT OR REPLACE INTO fs_data (ino, chunk_index, data) VALUES ${Array.from({ length: rows }, () => '(?, ?, ?)').join(', ')}`

/** Writes `chunks` (index → bytes) for `ino`, batched. */
export async function putChunks(
  q: Executor,
  ino: number,
  chunks: Array<[number, Uint8Array]>,
): Promise<void> {
  for (let i = 0; i < chunks.length; i += BATCH) {
    const slice = chunks.slice(i, i + BATCH)
    const params: Array<number | Uint8Array> = []
    for (const [index, data] of slice) params.push(ino, index, data)
    await q.execute({ sql: insertSql(slice.length), params })
  }
}

/** Reads bytes `[offset, offset + length)` of a file of `size` bytes (clamped to the size). */
export async function readRange(
  q: Executor,
  ino: number,
  size: number,
  chunkSize: number,
  offset: number,
  length: number,
): Promise<Uint8Array> {
  const end = Math.min(size, offset + length)
  if (end <= offset) return new Uint8Array(0)
  const first = Math.floor(offset / chunkSize)
  const last = Math.floor((end - 1) / chunkSize)
  const { rows } = await q.execute<{ chunk_index: number; data: Uint8Array }>({
    sql: 'SELECT chunk_index, data FROM fs_data WHERE ino = ? AND chunk_index >= ? AND chunk_index <= ? ORDER BY chunk_index',
    params: [ino, first, last],
  })
  return assemble(rows, chunkSize, offset, end)
}

/**
 * The bytes `[offset, end)` from the chunks covering them (in order): a view of the chunk when
 * one covers it all, otherwise one copy.
 */
function assemble(
  rows: readonly { chunk_index: number | null; data: Uint8Array | null }[],
  chunkSize: number,
  offset: number,
  end: number,
): Uint8Array {
  const only = rows.length === 1 ? rows[0] : undefined
  if (
    only?.data &&
    only.chunk_index === Math.floor(offset / chunkSize) &&
    only.chunk_index === Math.floor((end - 1) / chunkSize)
  ) {
    const start = offset - only.chunk_index * chunkSize
    return only.data.subarray(start, start + (end - offset))
  }
  const out = new Uint8Array(end - offset)
  for (const { chunk_index, data } of rows) {
    if (data === null || chunk_index === null) continue
    const chunkStart = chunk_index * chunkSize
    const from = Math.max(offset, chunkStart)
    const to = Math.min(end, chunkStart + data.byteLength)
    if (to > from) out.set(data.subarray(from - chunkStart, to - chunkStart), from - offset)
  }
  return out
}

/**
 * A positional read by inode in one statement: the inode's mode and size together with the
 * chunks covering `[offset, offset + length)`, clamped to the size. Undefined when the inode is
 * gone. (Open handles read this way: one look-up per read instead of two.)
 */
export async function readAt(
  q: Executor,
  ino: number,
  chunkSize: number,
  offset: number,
  length: number,
): Promise<{ mode: number; size: number; bytes: Uint8Array } | undefined> {
  const first = Math.floor(offset / chunkSize)
  const last = Math.floor((offset + Math.max(length, 1) - 1) / chunkSize)
  const { rows } = await q.execute<{
    mode: number
    size: number
    chunk_index: number | null
    data: Uint8Array | null
  }>({
    sql: 'SELECT i.mode AS mode, i.size AS size, d.chunk_index AS chunk_index, d.data AS data FROM fs_inode i LEFT JOIN fs_data d ON d.ino = i.ino AND d.chunk_index >= ? AND d.chunk_index <= ? WHERE i.ino = ? ORDER BY d.chunk_index',
    params: [first, last, ino],
  })
  const head = rows[0]
  if (!head) return undefined
  const end = Math.min(head.size, offset + length)
  if (end <= offset || head.data === null)
    return { mode: head.mode, size: head.size, bytes: new Uint8Array(0) }
  return { mode: head.mode, size: head.size, bytes: assemble(rows, chunkSize, offset, end) }
}

/** Reads a whole file. */
export async function readAll(q: Executor, ino: number): Promise<Uint8Array> {
  const { rows } = await q.execute<{ data: Uint8Array }>({
    sql: 'SELECT data FROM fs_data WHERE ino = ? ORDER BY chunk_index',
    params: [ino],
  })
  if (rows.length === 1) return rows[0]!.data
  return Buffer.concat(rows.map((r) => r.data))
}

/**
 * Writes `data` at `offset` into a file of `oldSize` bytes and returns the new size. Keeps the
 * spec's rule (every chunk but the last exactly `chunkSize`): a gap past the old end is filled
 * with zero bytes. Chunks covered completely are written from views of `data` (no copies);
 * partially covered ones are merged with their stored bytes.
 */
export async function writeRange(
  q: Executor,
  ino: number,
  oldSize: number,
  chunkSize: number,
  offset: number,
  data: Uint8Array,
): Promise<number> {
  const writeEnd = offset + data.byteLength
  const newSize = Math.max(oldSize, writeEnd)
  // Region that changes: the write itself, plus zero fill from the old end up to the write.
  const start = Math.min(offset, oldSize)
  const end = Math.max(writeEnd, offset > oldSize ? offset : writeEnd)
  if (end <= start) return newSize
  const first = Math.floor(start / chunkSize)
  const last = Math.floor((Math.max(end, start + 1) - 1) / chunkSize)
  // Chunks that keep some old bytes must be read first.
  const needOld: number[] = []
  for (let index = first; index <= last; index++) {
    const chunkStart = index * chunkSize
    const chunkLen = Math.min(chunkSize, newSize - chunkStart)
    const oldLen = Math.max(0, Math.min(chunkSize, oldSize - chunkStart))
    const coveredFrom = Math.max(chunkStart, offset)
    const coveredTo = Math.min(chunkStart + chunkLen, writeEnd)
    const fullyCovered = coveredFrom <= chunkStart && coveredTo >= chunkStart + chunkLen
    if (!fullyCovered && oldLen > 0) needOld.push(index)
  }
  const old = new Map<number, Uint8Array>()
  if (needOld.length > 0) {
    const { rows } = await q.execute<{ chunk_index: number; data: Uint8Array }>({
      sql: `SELECT chunk_index, data FROM fs_data WHERE ino = ? AND chunk_index IN (${needOld.map(() => '?').join(', ')})`,
      params: [ino, ...needOld],
    })
    for (const row of rows) old.set(row.chunk_index, row.data)
  }
  let pending: Array<[number, Uint8Array]> = []
  for (let index = first; index <= last; index++) {
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
      if (previous) chunk.set(previous.subarray(0, Math.min(previous.byteLength, chunkLen)))
      if (coveredTo > coveredFrom) {
        chunk.set(data.subarray(coveredFrom - offset, coveredTo - offset), coveredFrom - chunkStart)
      }
    }
    pending.push([index, chunk])
    if (pending.length >= BATCH) {
      await putChunks(q, ino, pending)
      pending = []
    }
  }
  if (pending.length > 0) await putChunks(q, ino, pending)
  return newSize
}

/** Cuts or extends (with zeros) a file to `newSize`. */
export async function resize(
  q: Executor,
  ino: number,
  oldSize: number,
  chunkSize: number,
  newSize: number,
): Promise<void> {
  if (newSize === oldSize) return
  if (newSize > oldSize) {
    await writeRange(q, ino, oldSize, chunkSize, newSize, new Uint8Array(0))
    return
  }
  if (newSize === 0) {
    await q.execute({ sql: 'DELETE FROM fs_data WHERE ino = ?', params: [ino] })
    return
  }
  const lastIndex = Math.floor((newSize - 1) / chunkSize)
  await q.execute({
    sql: 'DELETE FROM fs_data WHERE ino = ? AND chunk_index > ?',
    params: [ino, lastIndex],
  })
  const keep = newSize - lastIndex * chunkSize
  await q.execute({
    sql: 'UPDATE fs_data SET data = substr(data, 1, ?) WHERE ino = ? AND chunk_index = ? AND length(data) > ?',
    params: [keep, ino, lastIndex, keep],
  })
}
