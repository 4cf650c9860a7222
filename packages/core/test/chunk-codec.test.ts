import { randomBytes } from 'node:crypto'
import { describe, expect, test } from 'vitest'
import {
  canCompress,
  checkCompression,
  codecOf,
  DECOMPRESSORS,
  decodeFrame,
  rawFrame,
  zstdCodec,
} from '../src/chunk-codec.js'
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

const engines = Object.entries(DECOMPRESSORS).filter(
  (e): e is [string, (frame: Uint8Array, size: number) => Uint8Array] => e[1] !== undefined,
)
const decode = (engine: (typeof engines)[number][1], stored: Uint8Array, limit = 4096) =>
  decodeFrame(engine, stored, limit, 7, 'read')

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

describe.each(engines)('decoding with %s', (_name, engine) => {
  test('a frame written by Node.js zstd', () => {
    expect(Buffer.from(decode(engine, FRAME))).toEqual(TEXT)
  })

  test('raw frames of every block count, as written where there is no compressor', () => {
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
    // two frames in one chunk: never more than the declared size (Node's zstd refuses the lie
    // and stops at the end of the first frame).
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
      if (_name === 'node' && stored === lying) expect(bytes).toBeUndefined()
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

  test.runIf(canCompress())('text is stored as a smaller frame that decodes back', () => {
    const stored = zstdCodec.encode(TEXT)
    expect(stored.byteLength).toBeLessThan(TEXT.byteLength / 10)
    for (const [, engine] of engines) expect(Buffer.from(decode(engine, stored))).toEqual(TEXT)
  })

  test.runIf(!canCompress())('without a compressor, text is stored as it is', () => {
    expect(zstdCodec.encode(TEXT)).toBe(TEXT)
    expect(() => checkCompression('zstd')).not.toThrow()
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
