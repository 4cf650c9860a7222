import { randomBytes } from 'node:crypto'
import { describe, expect, test } from 'vitest'
import {
  checkCompression,
  codecOf,
  decodeFrame,
  loadWasmZstd,
  type ZstdEngine,
  zstdCodec,
  zstdEngines,
} from '../src/content/chunk-codec.js'
import { isAgentFsError, isFsError } from '../src/index.js'

// "line of agent notes\n" × 200 (4,000 bytes) as Node.js 22's zstd writes it, with and without
// the content size in the header (a one-shot call writes it; a stream does not).
const TEXT = Buffer.from('line of agent notes\n'.repeat(200))
const FRAME = Buffer.from(
  '28b52ffd60a00ee50000a06c696e65206f66206167656e74206e6f7465730a0100127ffe6402',
  'hex',
)
const NO_SIZE = Buffer.from(
  '28b52ffd0058e50000a06c696e65206f66206167656e74206e6f7465730a0100127ffe6402',
  'hex',
)

/** `bytes` as one zstd frame of raw (uncompressed) blocks of at most 128 KiB, with its size. */
function rawFrame(bytes: Uint8Array): Uint8Array {
  const blocks = Math.max(1, Math.ceil(bytes.byteLength / (128 * 1024)))
  const out = new Uint8Array(9 + blocks * 3 + bytes.byteLength)
  out.set([0x28, 0xb5, 0x2f, 0xfd], 0)
  out[4] = 0b1010_0000 // a 4-byte content size, one segment, no checksum, no dictionary
  new DataView(out.buffer).setUint32(5, bytes.byteLength, true)
  let at = 9
  for (let block = 0; block < blocks; block++) {
    const from = block * (128 * 1024)
    const size = Math.min(128 * 1024, bytes.byteLength - from)
    const header = (size << 3) | (block === blocks - 1 ? 1 : 0) // block type 0: raw
    out[at] = header & 0xff
    out[at + 1] = (header >> 8) & 0xff
    out[at + 2] = (header >> 16) & 0xff
    out.set(bytes.subarray(from, from + size), at + 3)
    at += 3 + size
  }
  return out
}

// Node.js's zstd where this Node.js has it, and the WebAssembly build on every version.
await loadWasmZstd()
const engines = Object.entries(zstdEngines())
const decode = (engine: ZstdEngine, stored: Uint8Array, limit = 4096) =>
  decodeFrame((frame, size) => engine.decompress(frame, size), stored, limit, 7, 'read')

const eio = (fn: () => unknown, message: RegExp) => {
  let caught: unknown
  try {
    fn()
  } catch (error) {
    caught = error
  }
  expect(isFsError(caught, 'EIO'), String(caught)).toBe(true)
  expect((caught as Error).message).toMatch(message)
}

describe.each(engines)('zstd of %s', (_name, engine) => {
  test('a frame written by Node.js zstd', () => {
    expect(Buffer.from(decode(engine, FRAME))).toEqual(TEXT)
  })

  test('its frames declare their size and decode with every engine', () => {
    const frame = engine.compress(TEXT)
    expect(frame.byteLength).toBeLessThan(TEXT.byteLength / 10)
    for (const [, other] of engines) expect(Buffer.from(decode(other, frame))).toEqual(TEXT)
    const random = randomBytes(4096)
    expect(Buffer.from(decode(engine, engine.compress(random)))).toEqual(random)
  })

  test('frames of raw blocks, of every block count', () => {
    for (const size of [0, 1, 4096, 131072, 131073, 300_000]) {
      const bytes = randomBytes(size)
      expect(Buffer.from(decode(engine, rawFrame(bytes), 300_000))).toEqual(bytes)
    }
  })

  test('bytes that are not a frame are returned as stored', () => {
    const bytes = Buffer.from('plain chunk')
    expect(decode(engine, bytes)).toBe(bytes)
  })

  test('damaged and hostile frames are EIO, never bytes', () => {
    eio(() => decode(engine, FRAME, 1000), /says it holds 4000 bytes, more than a chunk \(1000\)/)
    eio(() => decode(engine, NO_SIZE), /no valid zstd frame header/)
    // A crafted fs_config.chunk_size is no licence: 32 MiB of zeros claimed by a 20-byte frame.
    const bomb = rawFrame(new Uint8Array(0))
    new DataView(bomb.buffer).setUint32(5, 32 * 2 ** 20, true)
    eio(
      () => decode(engine, bomb, 2 ** 40),
      /says it holds 33554432 bytes, more than a chunk \(16777216\)/,
    )
    eio(() => decode(engine, FRAME.subarray(0, 5)), /no valid zstd frame header/)
    eio(() => decode(engine, FRAME.subarray(0, FRAME.length - 6)), /not a whole, valid|holds/)
    // A header that names a dictionary, or sets the reserved bit.
    for (const descriptor of [0x61, 0x68]) {
      const bad = Buffer.from(FRAME)
      bad[4] = descriptor
      eio(() => decode(engine, bad), /no valid zstd frame header/)
    }
    // A frame that holds more than it says (4,000 bytes declared as 1,000: a bomb or a lie), or
    // two frames in one chunk: never more than the declared size; a lie is refused (Node's
    // zstd reads two frames as the first).
    const lying = Buffer.from(FRAME)
    lying.writeUInt16LE(1000 - 256, 5)
    for (const [stored, size] of [
      [lying, 1000],
      [Buffer.concat([FRAME, FRAME]), 4000],
    ] as const) {
      let bytes: Uint8Array | undefined
      try {
        bytes = decode(engine, stored, 8000)
      } catch (error) {
        expect(isFsError(error, 'EIO')).toBe(true)
      }
      expect(bytes === undefined || bytes.byteLength === size).toBe(true)
      if (stored === lying) expect(bytes).toBeUndefined()
    }
    // Noise after the magic.
    eio(
      () => decode(engine, Buffer.concat([FRAME.subarray(0, 4), randomBytes(64)])),
      /compressed chunk of inode 7/,
    )
  })
})

describe('encoding', () => {
  test('incompressible chunks are stored as they are; a chunk that begins like a frame is not', () => {
    const random = randomBytes(4096)
    expect(zstdCodec.encode(random)).toBe(random)
    const lookalike = Buffer.concat([FRAME.subarray(0, 4), randomBytes(4092)])
    const stored = zstdCodec.encode(lookalike)
    expect(stored).not.toBe(lookalike)
    expect(Buffer.from(zstdCodec.decode(stored, 4096, 1, 'read'))).toEqual(lookalike)
  })

  test('text is stored as a smaller frame that decodes back', () => {
    const stored = zstdCodec.encode(TEXT)
    expect(stored.byteLength).toBeLessThan(TEXT.byteLength / 10)
    expect(Buffer.from(zstdCodec.decode(stored, 4096, 1, 'read'))).toEqual(TEXT)
  })
})

test('an unknown compression is refused, not read as plain chunks', () => {
  expect(codecOf(undefined)).toBeNull()
  expect(codecOf('zstd')).toBe(zstdCodec)
  let caught: unknown
  try {
    codecOf('lz4')
  } catch (error) {
    caught = error
  }
  expect(isAgentFsError(caught, 'UNSUPPORTED_LAYOUT')).toBe(true)
  expect((caught as Error).message).toMatch(/compressed as "lz4".*upgrade AgentFS/)
  expect(() => checkCompression('gzip')).toThrow(/compression must be "zstd"/)
})
