import { decodeChunk, encodeChunk } from '../content/blob-store.js'
import { type ChunkFormat, frameSql } from '../content/chunk-codec.js'
import type { Queryable } from '../driver/guard-driver.js'
import { readChunkFormat } from '../schema/meta.js'
import type { Check, FindRow } from './check.js'

/** Chunks read per query while checking: memory stays bounded for any database size. */
const PAGE = 256

/** A stored chunk that is a zstd frame (in a compressed database; plain ones have none). */
export const FRAME = frameSql('f.data')

/** True in a database whose chunks may be compressed: the plain chunk rules skip frames there. */
export const COMPRESSED = "EXISTS (SELECT 1 FROM fs_config WHERE key = 'compression')"

interface FrameRow {
  readonly ino: number
  readonly chunk_index: number
  readonly size: number
  readonly data: unknown
}

/** Each frame of a compressed database with its file's size, a page at a time. */
async function* frames(q: Queryable): AsyncGenerator<FrameRow & { format: ChunkFormat }> {
  const format = await readChunkFormat(q)
  if (!format.codec) return
  let after: [number, number] = [0, -1]
  for (;;) {
    const { rows } = await q.execute<FrameRow>({
      sql: `SELECT f.ino AS ino, f.chunk_index AS chunk_index, i.size AS size, f.data AS data FROM fs_data f JOIN fs_inode i ON i.ino = f.ino
WHERE typeof(f.data) = 'blob' AND ${FRAME} AND (f.ino > ? OR (f.ino = ? AND f.chunk_index > ?)) ORDER BY f.ino, f.chunk_index LIMIT ${PAGE}`,
      params: [after[0], after[0], after[1]],
    })
    for (const row of rows) yield { ...row, format }
    if (rows.length < PAGE) return
    const last = rows.at(-1)!
    after = [last.ino, last.chunk_index]
  }
}

/** What a decoded chunk should hold: its bytes within the file's size, all but the last full. */
function expectedLength(row: FrameRow, chunkSize: number): number {
  return Math.max(0, Math.min(chunkSize, Number(row.size) - row.chunk_index * chunkSize))
}

/**
 * The misfit frames found by the pass that found the broken ones, kept for the next rule
 * (`chunk-frame-size` runs right after `chunk-frame`): each frame is decoded once per check.
 */
const MISFITS = new WeakMap<object, FindRow[]>()

/** Frames that do not decode; the ones that decode to the wrong length are kept for the next rule. */
async function badFrames(q: Queryable): Promise<FindRow[]> {
  const found: FindRow[] = []
  const misfits: FindRow[] = []
  for await (const row of frames(q)) {
    let bytes: Uint8Array
    try {
      bytes = decodeChunk(row.format, row.data, row.ino, 'fsck')
    } catch (error) {
      found.push({ ino: row.ino, detail: `${row.chunk_index}: ${(error as Error).message}` })
      continue
    }
    const misfit = misfitOf(row, bytes)
    if (misfit !== undefined) misfits.push(misfit)
  }
  MISFITS.set(q, misfits)
  return found
}

/** The finding of a frame that decodes to another length than the file's size gives it. */
function misfitOf(row: FrameRow & { format: ChunkFormat }, bytes: Uint8Array): FindRow | undefined {
  const want = expectedLength(row, row.format.size)
  if (bytes.byteLength === want || (bytes.byteLength < want && isLast(row, row.format.size)))
    return undefined
  return { ino: row.ino, detail: `${row.chunk_index} holds ${bytes.byteLength} of ${want}` }
}

/** Frames that decode but not to the length the file's size gives the chunk. */
async function misfitFrames(q: Queryable): Promise<FindRow[]> {
  // Taken once: a later check (after a repair) decodes afresh.
  const kept = MISFITS.get(q)
  if (kept !== undefined) {
    MISFITS.delete(q)
    return kept
  }
  const found: FindRow[] = []
  for await (const row of frames(q)) {
    let bytes: Uint8Array
    try {
      bytes = decodeChunk(row.format, row.data, row.ino, 'fsck')
    } catch {
      continue // chunk-frame's finding
    }
    const misfit = misfitOf(row, bytes)
    if (misfit !== undefined) found.push(misfit)
  }
  return found
}

const isLast = (row: FrameRow, chunkSize: number) =>
  (row.chunk_index + 1) * chunkSize >= Number(row.size)

/** Cuts what lies past the file's end, pads a short chunk that is not the last (as reads see it). */
async function refitFrames(q: Queryable): Promise<void> {
  const fixes: Array<[number, number, Uint8Array | null]> = []
  for await (const row of frames(q)) {
    let bytes: Uint8Array
    try {
      bytes = decodeChunk(row.format, row.data, row.ino, 'fsck')
    } catch {
      continue
    }
    const want = expectedLength(row, row.format.size)
    if (want === 0) fixes.push([row.ino, row.chunk_index, null])
    else if (bytes.byteLength > want)
      fixes.push([row.ino, row.chunk_index, encodeChunk(row.format, bytes.subarray(0, want))])
    else if (bytes.byteLength < want && !isLast(row, row.format.size)) {
      const padded = new Uint8Array(want)
      padded.set(bytes)
      fixes.push([row.ino, row.chunk_index, encodeChunk(row.format, padded)])
    }
  }
  for (const [ino, index, data] of fixes)
    await q.execute(
      data === null
        ? { sql: 'DELETE FROM fs_data WHERE ino = ? AND chunk_index = ?', params: [ino, index] }
        : {
            sql: 'UPDATE fs_data SET data = ? WHERE ino = ? AND chunk_index = ?',
            params: [data, ino, index],
          },
    )
}

/**
 * Compressed chunks (`fs_config.compression`): every frame decodes to at most a chunk (not
 * repairable: the bytes are lost; restore the file from a snapshot or a backup), and to the
 * length the file's size gives it (repaired as the plain rules repair: cut or zero-padded).
 */
export const CHUNK_FRAME_CHECKS: readonly Check[] = [
  {
    rule: 'chunk-frame',
    repairable: false,
    find: badFrames,
    message: (r) => `inode ${r.ino}, chunk ${r.detail}`,
  },
  {
    rule: 'chunk-frame-size',
    repairable: true,
    find: misfitFrames,
    message: (r) =>
      `inode ${r.ino}, compressed chunk ${r.detail} bytes the file's size gives it (reads cut or pad it)`,
    fix: refitFrames,
  },
]
