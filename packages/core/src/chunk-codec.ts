import * as zlib from 'node:zlib'
import { decompress as fzstdDecompress } from 'fzstd'
import { AgentFsError, corruptError } from './errors.js'
import { MAX_CHUNK_SIZE } from './schema.js'

/**
 * Compression of `fs_data` chunks, chosen when a database is created and recorded as
 * `fs_config.compression` (see SPEC-EXTENSIONS.md, "Compressed chunks"). Absent: every chunk
 * holds its bytes as the spec says (the default).
 */
export type Compression = 'zstd'

/** The compressions this version reads and writes. */
export const COMPRESSIONS: readonly Compression[] = ['zstd']

/** The four bytes every zstd frame starts with (0xFD2FB528, little-endian). */
const MAGIC = [0x28, 0xb5, 0x2f, 0xfd] as const

/** Largest block of a raw zstd frame (the format's limit, 128 KiB). */
const RAW_BLOCK_MAX = 128 * 1024

/**
 * How a database stores its chunks: `size` is `fs_config.chunk_size` (what a read cuts by) and
 * `codec` the compression of `fs_config.compression` (null: plain chunks). Every reader and
 * writer of `fs_data` takes one, so none can forget how the bytes are stored.
 */
export interface ChunkFormat {
  readonly size: number
  readonly codec: ChunkCodec | null
}

/** Encodes chunks as stored and decodes them back. */
export interface ChunkCodec {
  readonly name: Compression
  /** What to store for a chunk of `bytes`: a zstd frame when smaller, else the bytes themselves. */
  encode(bytes: Uint8Array): Uint8Array
  /**
   * The bytes a stored chunk holds: a zstd frame is decompressed (at most `limit` bytes, the
   * chunk size), anything else is returned as stored. EIO for a frame that is not whole and
   * valid, that does not say its size or that says more than `limit`.
   */
  decode(stored: Uint8Array, limit: number, ino: number, syscall: string, path?: string): Uint8Array
}

/** The format of plain (uncompressed) chunks of `size` bytes. */
export function plainChunks(size: number): ChunkFormat {
  return { size, codec: null }
}

function isFrame(bytes: Uint8Array): boolean {
  return (
    bytes.byteLength >= 4 &&
    bytes[0] === MAGIC[0] &&
    bytes[1] === MAGIC[1] &&
    bytes[2] === MAGIC[2] &&
    bytes[3] === MAGIC[3]
  )
}

/**
 * The content size a zstd frame header declares (RFC 8878 §3.1.1.1), or undefined when the
 * header is cut short, names a dictionary, sets the reserved bit or leaves the size out: frames
 * this library writes always carry it.
 */
function declaredSize(frame: Uint8Array): number | undefined {
  if (frame.byteLength < 6) return undefined
  const descriptor = frame[4]!
  const fcsFlag = descriptor >> 6
  const singleSegment = (descriptor >> 5) & 1
  if (descriptor & 0b1000) return undefined
  if (descriptor & 0b11) return undefined
  const at = 5 + (singleSegment ? 0 : 1)
  const width = [singleSegment ? 1 : 0, 2, 4, 8][fcsFlag]!
  if (width === 0 || frame.byteLength < at + width) return undefined
  const view = new DataView(frame.buffer, frame.byteOffset + at, width)
  if (width === 1) return view.getUint8(0)
  if (width === 2) return view.getUint16(0, true) + 256
  if (width === 4) return view.getUint32(0, true)
  const size = view.getBigUint64(0, true)
  return size > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(size)
}

/**
 * `bytes` as one zstd frame of raw (uncompressed) blocks, with its content size: how a chunk
 * whose own bytes begin like a frame is stored where no compressor is at hand (Node.js 20).
 */
export function rawFrame(bytes: Uint8Array): Uint8Array {
  const blocks = Math.max(1, Math.ceil(bytes.byteLength / RAW_BLOCK_MAX))
  const out = new Uint8Array(9 + blocks * 3 + bytes.byteLength)
  out.set(MAGIC, 0)
  out[4] = 0b1010_0000 // a 4-byte content size, one segment, no checksum, no dictionary
  new DataView(out.buffer).setUint32(5, bytes.byteLength, true)
  let at = 9
  for (let block = 0; block < blocks; block++) {
    const from = block * RAW_BLOCK_MAX
    const size = Math.min(RAW_BLOCK_MAX, bytes.byteLength - from)
    const header = (size << 3) | (block === blocks - 1 ? 1 : 0) // block type 0: raw
    out[at] = header & 0xff
    out[at + 1] = (header >> 8) & 0xff
    out[at + 2] = (header >> 16) & 0xff
    out.set(bytes.subarray(from, from + size), at + 3)
    at += 3 + size
  }
  return out
}

type Zstd = {
  zstdCompressSync?: (buf: Uint8Array, options?: object) => Buffer
  zstdDecompressSync?: (buf: Uint8Array, options?: object) => Buffer
  constants: Record<string, number>
}
const node = zlib as unknown as Zstd

/** True when this Node.js compresses with zstd itself (22.15 and later, 23.8 and later). */
export function canCompress(): boolean {
  return typeof node.zstdCompressSync === 'function'
}

/**
 * Level 1: on 4 KiB chunks, within 3% of the default level's size at three quarters of its
 * time (measured on source text); the cost of a call is mostly the call.
 */
const LEVEL = 1

function compress(bytes: Uint8Array): Uint8Array | undefined {
  if (!node.zstdCompressSync) return undefined
  return node.zstdCompressSync(bytes, {
    params: { [node.constants.ZSTD_c_compressionLevel!]: LEVEL },
    pledgedSrcSize: bytes.byteLength,
  })
}

/**
 * The decompressors, by engine: Node.js's zstd where it has one, else `fzstd` (pure
 * JavaScript). Neither returns more than `size` bytes, so memory stays bounded by the chunk
 * size whatever a frame holds. Node's refuses a frame that holds more or less than it declares;
 * `fzstd` fills exactly `size` bytes (cutting what a lying frame holds past it). (Exported for
 * tests.)
 */
export const DECOMPRESSORS = {
  node: node.zstdDecompressSync
    ? (frame: Uint8Array, size: number): Uint8Array =>
        node.zstdDecompressSync!(frame, { maxOutputLength: Math.max(1, size) })
    : undefined,
  fzstd: (frame: Uint8Array, size: number): Uint8Array =>
    fzstdDecompress(frame, new Uint8Array(size)),
}

const decompress = DECOMPRESSORS.node ?? DECOMPRESSORS.fzstd

/** The zstd codec: Node.js's zstd where it has one; reading only, with `fzstd`, elsewhere. */
export const zstdCodec: ChunkCodec = {
  name: 'zstd',
  encode(bytes) {
    const frame = compress(bytes)
    if (frame && frame.byteLength < bytes.byteLength) return frame
    // Stored as it is, unless its bytes would be taken for a frame.
    if (!isFrame(bytes)) return bytes
    return frame ?? rawFrame(bytes)
  },
  decode(stored, limit, ino, syscall, path) {
    return decodeFrame(decompress, stored, limit, ino, syscall, path)
  },
}

/** {@link ChunkCodec.decode} with the decompressor `engine` (see {@link DECOMPRESSORS}). */
export function decodeFrame(
  engine: (frame: Uint8Array, size: number) => Uint8Array,
  stored: Uint8Array,
  limit: number,
  ino: number,
  syscall: string,
  path?: string,
): Uint8Array {
  if (!isFrame(stored)) return stored
  const size = declaredSize(stored)
  const bad = (why: string) =>
    corruptError(syscall, path, `a compressed chunk of inode ${ino} ${why}`)
  if (size === undefined) throw bad('has no valid zstd frame header')
  // The chunk size a crafted database claims is no bound: no chunk is ever more than 16 MiB.
  const most = Math.min(limit, MAX_CHUNK_SIZE)
  if (size > most) throw bad(`says it holds ${size} bytes, more than a chunk (${most})`)
  let bytes: Uint8Array
  try {
    bytes = engine(stored, size)
  } catch {
    throw bad('is not a whole, valid zstd frame')
  }
  if (bytes.byteLength !== size)
    throw bad(`holds ${bytes.byteLength} bytes, not the ${size} it says`)
  return bytes
}

/**
 * The codec of `fs_config.compression` (null when absent). UNSUPPORTED_LAYOUT for a value this
 * version does not know: its chunks would read as stored bytes, so the database is refused.
 */
export function codecOf(value: unknown): ChunkCodec | null {
  if (value === undefined || value === null) return null
  if (value === 'zstd') return zstdCodec
  throw new AgentFsError(
    'UNSUPPORTED_LAYOUT',
    `This database stores file content compressed as ${JSON.stringify(String(value)).slice(0, 40)} (fs_config.compression), which this version cannot read; upgrade AgentFS`,
  )
}

/** The trigger of a compressed database that stops readers which do not know compression. */
export const COMPRESSION_GUARD = 'agentfs_compressed_guard'

/** INVALID_ARGUMENT unless `value` is a compression this version knows. */
export function checkCompression(value: unknown): Compression {
  if (!COMPRESSIONS.includes(value as Compression))
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `compression must be ${COMPRESSIONS.map((c) => `"${c}"`).join(' or ')}, not ${JSON.stringify(value)}`,
    )
  return value as Compression
}

/** INVALID_ARGUMENT when this Node.js cannot compress (creating a compressed database). */
export function needCompressor(): void {
  if (!canCompress())
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `creating a zstd-compressed database needs Node.js 22.15 or later (this is ${process.version}); on this version compressed databases open and take writes, storing new chunks uncompressed`,
    )
}
