import { createHash } from 'node:crypto'
import { type Executor, executeDeferred } from '../driver/driver.js'
import { AgentFsError, corruptError } from '../errors.js'
import type { ChunkFormat } from './chunk-codec.js'

/** Bytes of one chunk hash (SHA-256) in `agentfs_snap_inode.chunks`. */
export const HASH_BYTES = 32

/** The hashes a `chunks` column holds, in chunk order. */
export function hashesOf(chunks: Uint8Array | null): Uint8Array[] {
  if (!chunks) return []
  if (chunks.byteLength % HASH_BYTES !== 0)
    throw new AgentFsError(
      'CORRUPT',
      `agentfs_snap_inode.chunks has ${chunks.byteLength} bytes, not a whole number of hashes; run fsck`,
    )
  const out: Uint8Array[] = []
  for (let at = 0; at < chunks.byteLength; at += HASH_BYTES)
    out.push(chunks.subarray(at, at + HASH_BYTES))
  return out
}

/** Chunks read per query: memory stays bounded for files of any size. */
const PAGE = 256

/**
 * Calls `each` with the chunks of inode `ino` as a read of the file returns them (cut at the
 * size, holes as zeros), in order, each with its SHA-256; returns the hashes concatenated.
 */
async function eachChunk(
  q: Executor,
  ino: number,
  size: number,
  format: ChunkFormat,
  each?: (hash: Uint8Array, bytes: Uint8Array) => Promise<void>,
): Promise<Uint8Array> {
  const chunkSize = format.size
  const count = Math.ceil(size / chunkSize)
  const out = new Uint8Array(count * HASH_BYTES)
  for (let start = 0; start < count; start += PAGE) {
    // Values bound through subqueries (ARCHITECTURE.md, "Statement shapes").
    const { rows } = await q.execute<{ chunk_index: number; data: unknown }>({
      sql: 'SELECT chunk_index, data FROM fs_data WHERE ino = (SELECT ?) AND chunk_index >= (SELECT ?) AND chunk_index < (SELECT ?)',
      params: [ino, start, Math.min(count, start + PAGE)],
    })
    const stored = new Map(
      rows.map((r) => [r.chunk_index, decodeChunk(format, r.data, ino, 'read')] as const),
    )
    for (let index = start; index < Math.min(count, start + PAGE); index++) {
      const length = Math.min(chunkSize, size - index * chunkSize)
      const data = stored.get(index) ?? new Uint8Array(0)
      let bytes = data
      if (data.byteLength !== length) {
        bytes = new Uint8Array(length)
        bytes.set(data.subarray(0, length))
      }
      const hash = createHash('sha256').update(bytes).digest()
      out.set(hash, index * HASH_BYTES)
      await each?.(hash, bytes)
    }
  }
  return out
}

/**
 * Stores the chunks of inode `ino` (as they are in `fs_data` now) in the blob store, one
 * reference each, and returns their hashes concatenated. A chunk already stored only gains a
 * reference: unchanged content costs no bytes. A hole (a missing chunk index) is stored as
 * zeros of the chunk size, the way a read sees it.
 */
export async function captureChunks(
  q: Executor,
  ino: number,
  size: number,
  format: ChunkFormat,
): Promise<Uint8Array> {
  return eachChunk(q, ino, size, format, (hash, bytes) => addRef(q, hash, bytes))
}

/**
 * The chunk hashes of inode `ino` as {@link captureChunks} would store them, without storing
 * anything: to compare a live file with a snapshot's.
 */
export async function hashChunks(
  q: Executor,
  ino: number,
  size: number,
  format: ChunkFormat,
): Promise<Uint8Array> {
  return eachChunk(q, ino, size, format)
}

/**
 * Content-defined chunking (a gear hash, as FastCDC): a cut where the hash of the last 32 bytes
 * has its top 13 bits clear — about every 8 KiB, at least 2 KiB and at most 64 KiB apart. A cut
 * depends only on the bytes just before it, so an edit that shifts the rest of a file moves the
 * cuts with it: the next version of a file shares every chunk but the edited one or two (fixed
 * size chunks share none past a length-changing edit).
 */
const CDC_MIN = 2048
const CDC_MAX = 65536
const CDC_MASK = 0xfff80000
const GEAR = (() => {
  const table = new Uint32Array(256)
  for (let i = 0; i < 256; i++)
    table[i] = createHash('sha256').update(`agentfs-gear-${i}`).digest().readUInt32BE(0)
  return table
})()

/** `bytes` cut at content-defined boundaries (see above); views, not copies. */
export function contentChunks(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = []
  let start = 0
  while (start < bytes.length) {
    const end = Math.min(bytes.length, start + CDC_MAX)
    let cut = end
    let h = 0
    for (let i = Math.min(end, start + CDC_MIN); i < end; i++) {
      h = ((h << 1) + GEAR[bytes[i]!]!) >>> 0
      if ((h & CDC_MASK) === 0) {
        cut = i + 1
        break
      }
    }
    out.push(bytes.subarray(start, cut))
    start = cut
  }
  return out
}

/**
 * Stores `bytes` in the blob store cut at content-defined boundaries ({@link contentChunks}),
 * one reference per chunk, and returns the hashes concatenated: for file versions, where
 * consecutive versions then share all but the chunks an edit touched.
 */
export async function captureContent(q: Executor, bytes: Uint8Array): Promise<Uint8Array> {
  const chunks = contentChunks(bytes)
  const out = new Uint8Array(chunks.length * HASH_BYTES)
  for (const [i, chunk] of chunks.entries()) {
    const hash = createHash('sha256').update(chunk).digest()
    out.set(hash, i * HASH_BYTES)
    await addRef(q, hash, chunk)
  }
  return out
}

/** A stored chunk's bytes, or CORRUPT (EIO) when the row holds something other than a BLOB. */
export function chunkBytes(data: unknown, ino: number, syscall: string, path?: string): Uint8Array {
  if (data instanceof Uint8Array) return data
  throw corruptError(
    syscall,
    path,
    `a chunk of inode ${ino} holds ${data === null ? 'NULL' : typeof data === 'string' ? 'TEXT' : typeof data} instead of a BLOB`,
  )
}

/**
 * The bytes a stored chunk holds, in a database whose chunks are stored as `format` says:
 * decompressed when the database compresses them. Every reader of `fs_data` goes through here.
 * CORRUPT (EIO) when the row is not a BLOB or holds a damaged frame.
 */
export function decodeChunk(
  format: ChunkFormat,
  data: unknown,
  ino: number,
  syscall: string,
  path?: string,
): Uint8Array {
  const bytes = chunkBytes(data, ino, syscall, path)
  return format.codec ? format.codec.decode(bytes, format.size, ino, syscall, path) : bytes
}

/** What to store for a chunk of `bytes` in a database whose chunks are stored as `format` says. */
export function encodeChunk(format: ChunkFormat, bytes: Uint8Array): Uint8Array {
  return format.codec ? format.codec.encode(bytes) : bytes
}

/**
 * The bytes of inode `ino` as a read returns them (holes as zeros), for files of bounded size.
 * A chunk that is not a BLOB (damage, or a row a sync peer crafted) is CORRUPT (EIO).
 */
export async function readInode(
  q: Executor,
  ino: number,
  size: number,
  format: ChunkFormat,
): Promise<Uint8Array> {
  const chunkSize = format.size
  const out = new Uint8Array(size)
  const { rows } = await q.execute<{ chunk_index: number; data: unknown }>({
    sql: 'SELECT chunk_index, data FROM fs_data WHERE ino = (SELECT ?) AND chunk_index >= 0 AND chunk_index < (SELECT ?)',
    params: [ino, Math.ceil(size / chunkSize)],
  })
  for (const r of rows) {
    const data = decodeChunk(format, r.data, ino, 'read')
    const at = r.chunk_index * chunkSize
    out.set(data.subarray(0, Math.max(0, Math.min(data.byteLength, size - at))), at)
  }
  return out
}

/** One more reference to a chunk, storing its bytes when it is new. */
export async function addRef(q: Executor, hash: Uint8Array, bytes: Uint8Array): Promise<void> {
  await executeDeferred(q, {
    sql: 'INSERT INTO agentfs_blob (hash, data, refs) VALUES (?, ?, 1) ON CONFLICT(hash) DO UPDATE SET refs = refs + 1',
    params: [hash, bytes],
  })
}

/** Drops one reference to each chunk of `chunks`, deleting chunks nothing refers to. */
export async function dropRefs(q: Executor, chunks: Uint8Array | null): Promise<void> {
  for (const hash of hashesOf(chunks)) {
    await executeDeferred(q, {
      sql: 'UPDATE agentfs_blob SET refs = refs - 1 WHERE hash = ?',
      params: [hash],
    })
    await executeDeferred(q, {
      sql: 'DELETE FROM agentfs_blob WHERE hash = ? AND refs <= 0',
      params: [hash],
    })
  }
}

/** The content the stored chunks `chunks` (hashes) make up, cut at `size`. */
export async function readChunks(
  q: Executor,
  chunks: Uint8Array | null,
  size: number,
): Promise<Buffer> {
  const parts: Uint8Array[] = []
  for (const hash of hashesOf(chunks)) parts.push(await readBlob(q, hash))
  const bytes = Buffer.concat(parts)
  return bytes.byteLength === size ? bytes : bytes.subarray(0, size)
}

/** The bytes of one stored chunk (CORRUPT when the store lost it). */
export async function readBlob(q: Executor, hash: Uint8Array): Promise<Uint8Array> {
  const { rows } = await q.execute<{ data: Uint8Array }>({
    sql: 'SELECT data FROM agentfs_blob WHERE hash = ?',
    params: [hash],
  })
  const row = rows[0]
  if (!row)
    throw new AgentFsError(
      'CORRUPT',
      `snapshot chunk ${Buffer.from(hash).toString('hex')} is missing from agentfs_blob; run fsck`,
    )
  return row.data
}
