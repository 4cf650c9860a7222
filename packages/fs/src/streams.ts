import { Readable, Writable } from 'node:stream'
import type { FileHandle } from './file-handle.js'
import type { SqlFileSystem } from './sql-file-system.js'

/** Options of `createReadStream`. */
export interface ReadStreamOptions {
  /** First byte to read (default 0). */
  readonly start?: number
  /** Last byte to read, inclusive (Node's convention; default: end of file). */
  readonly end?: number
  /** Bytes per read (default 64 KiB). */
  readonly highWaterMark?: number
  readonly encoding?: BufferEncoding
}

/** Options of `createWriteStream`. */
export interface WriteStreamOptions {
  /** Open flags (default `w`). */
  readonly flags?: string
  /** Write from this byte on instead of the cursor. */
  readonly start?: number
  readonly mode?: number
  /** Bytes buffered before backpressure (default 1 MiB). */
  readonly highWaterMark?: number
}

/**
 * A readable stream over a byte range. It reads `highWaterMark` bytes at a time, only when the
 * consumer asks, so memory stays bounded whatever the file size.
 */
export function createReadStream(
  fs: SqlFileSystem,
  path: string,
  options: ReadStreamOptions = {},
): Readable {
  const size = options.highWaterMark ?? 64 * 1024
  const start = options.start ?? 0
  const end = options.end ?? Number.POSITIVE_INFINITY
  if (start < 0 || end < start - 1 || !Number.isInteger(size) || size <= 0) {
    throw new RangeError(
      'createReadStream: start, end and highWaterMark must describe a valid range',
    )
  }
  async function* chunks() {
    const handle = await fs.open(path, 'r')
    try {
      let position = start
      while (position <= end) {
        const length = Math.min(size, end - position + 1)
        const { bytesRead, buffer } = await handle.read(
          Buffer.allocUnsafe(length),
          0,
          length,
          position,
        )
        if (bytesRead === 0) return
        position += bytesRead
        yield buffer.subarray(0, bytesRead)
      }
    } finally {
      await handle.close()
    }
  }
  const stream = Readable.from(chunks(), { objectMode: false, highWaterMark: size })
  if (options.encoding) stream.setEncoding(options.encoding)
  return stream
}

/**
 * A writable stream into a file. Buffered chunks are written together, one transaction per
 * batch; memory is bounded by `highWaterMark`. Each batch is atomic; the stream as a whole is
 * not (use `writeFile` for all-or-nothing).
 */
export function createWriteStream(
  fs: SqlFileSystem,
  path: string,
  options: WriteStreamOptions = {},
): Writable {
  let handle: FileHandle | undefined
  let position = options.start
  const put = async (data: Uint8Array) => {
    await handle!.write(data, 0, data.byteLength, position ?? null)
    if (position !== undefined) position += data.byteLength
  }
  return new Writable({
    highWaterMark: options.highWaterMark ?? 1024 * 1024,
    construct(callback) {
      fs.open(path, options.flags ?? (options.start === undefined ? 'w' : 'r+'), options.mode).then(
        (opened) => {
          handle = opened
          callback()
        },
        callback,
      )
    },
    write(chunk: Buffer, _encoding, callback) {
      put(chunk).then(() => callback(), callback)
    },
    writev(chunks, callback) {
      put(Buffer.concat(chunks.map((c) => c.chunk as Buffer))).then(() => callback(), callback)
    },
    final(callback) {
      handle!.close().then(() => callback(), callback)
    },
    destroy(error, callback) {
      const done = () => callback(error)
      if (handle) handle.close().then(done, done)
      else done()
    },
  })
}
