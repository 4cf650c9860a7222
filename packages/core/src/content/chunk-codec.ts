import * as zlib from 'node:zlib'
import { AgentFsError, corruptError } from '../errors.js'
import { MAX_CHUNK_SIZE } from '../schema/schema.js'

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

/** SQL true for a stored chunk `column` that begins like a zstd frame (as {@link isFrame}). */
export const frameSql = (column: string): string =>
  `substr(${column}, 1, 4) = X'${Buffer.from(MAGIC).toString('hex').toUpperCase()}'`

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

type NodeZstd = {
  zstdCompressSync?: (buf: Uint8Array, options?: object) => Buffer
  zstdDecompressSync?: (buf: Uint8Array, options?: object) => Buffer
  constants: Record<string, number>
}
const node = zlib as unknown as NodeZstd

/** A zstd implementation: compress at a level, decompress a frame of at most `size` bytes. */
export interface ZstdEngine {
  compress(bytes: Uint8Array): Uint8Array
  /** The frame's content, never more than `size` bytes; throws on a frame that holds more. */
  decompress(frame: Uint8Array, size: number): Uint8Array
}

/**
 * Level 1: on 4 KiB chunks, within 3% of the default level's size at three quarters of its
 * time (measured on source text); the cost of a call is mostly the call.
 */
const LEVEL = 1

/** Node.js's own zstd (zlib, from 22.15 and 23.8), or undefined on older versions. */
const nodeEngine: ZstdEngine | undefined =
  node.zstdCompressSync && node.zstdDecompressSync
    ? {
        compress: (bytes) =>
          node.zstdCompressSync!(bytes, {
            params: { [node.constants.ZSTD_c_compressionLevel!]: LEVEL },
            pledgedSrcSize: bytes.byteLength,
          }),
        decompress: (frame, size) =>
          node.zstdDecompressSync!(frame, { maxOutputLength: Math.max(1, size) }),
      }
    : undefined

let wasmEngine: ZstdEngine | undefined
let wasmLoading: Promise<ZstdEngine> | undefined

/**
 * zstd compiled to WebAssembly (`@hpcc-js/wasm-zstd`, built from zstd's own C sources): what
 * Node.js 20 and 22 before 22.15 use. Loaded once, on the first compressed database.
 */
export function loadWasmZstd(): Promise<ZstdEngine> {
  wasmLoading ??= import('@hpcc-js/wasm-zstd').then(async ({ Zstd }) => {
    const zstd = await Zstd.load()
    wasmEngine = {
      compress: (bytes) => zstd.compress(bytes, LEVEL),
      // Its decompressor writes into a buffer of the size the frame declares and refuses a
      // frame that holds more or less.
      decompress: (frame) => zstd.decompress(frame),
    }
    return wasmEngine
  })
  return wasmLoading
}

/** The engine in use: Node.js's zstd where it has one, else the WebAssembly build once loaded. */
function engine(): ZstdEngine | undefined {
  return nodeEngine ?? wasmEngine
}

/**
 * Makes zstd ready on this Node.js (nothing to do from 22.15; the WebAssembly build before).
 * `openDatabase` calls it for every compressed database, before any chunk is read or written.
 */
export async function loadCompressor(): Promise<void> {
  if (!engine()) await loadWasmZstd()
}

/** True when zstd is ready: always on Node.js 22.15+, after {@link loadCompressor} before. */
export function canCompress(): boolean {
  return engine() !== undefined
}

/** The engines available now, by name (for tests that hold both to the same answers). */
export function zstdEngines(): Record<string, ZstdEngine> {
  return {
    ...(nodeEngine ? { node: nodeEngine } : {}),
    ...(wasmEngine ? { wasm: wasmEngine } : {}),
  }
}

function ready(): ZstdEngine {
  const found = engine()
  if (!found)
    throw new AgentFsError(
      'MISUSE',
      `zstd is not loaded on this Node.js (${process.version}): open compressed databases with openDatabase, or await loadCompressor() first`,
    )
  return found
}

/** The zstd codec: Node.js's zstd, or its WebAssembly build on versions without it. */
export const zstdCodec: ChunkCodec = {
  name: 'zstd',
  encode(bytes) {
    const frame = ready().compress(bytes)
    if (frame.byteLength < bytes.byteLength) return frame
    // Stored as it is, unless its bytes would be taken for a frame.
    return isFrame(bytes) ? frame : bytes
  },
  decode(stored, limit, ino, syscall, path) {
    return isFrame(stored)
      ? decodeFrame(ready().decompress, stored, limit, ino, syscall, path)
      : stored
  },
}

/** {@link ChunkCodec.decode} with the decompressor `engine` (one of {@link zstdEngines}). */
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
