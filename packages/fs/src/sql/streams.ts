import { finished, Readable, Writable } from 'node:stream'
import type { FsFileHandle } from '../types.js'

/** Options of `createReadStream`. */
export interface ReadStreamOptions {
  /** First byte to read (default 0). */
  readonly start?: number
  /** Last byte to read, inclusive (Node's convention; default: end of file). */
  readonly end?: number
  /** Bytes per read (default 64 KiB). */
  readonly highWaterMark?: number
  readonly encoding?: BufferEncoding
  /** Close the file when the stream ends or fails (default true). */
  readonly autoClose?: boolean
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
  /** Close the file when the stream finishes or fails (default true). */
  readonly autoClose?: boolean
}

/**
 * A readable stream over a byte range of the file `open` gives, shaped like Node's
 * `fs.ReadStream` (`path`, `bytesRead`, `pending`, `fd`, `close(cb)`, `open` and `ready`
 * events). It reads `highWaterMark` bytes at a time, only when the consumer asks, so memory
 * stays bounded whatever the file size.
 */
export class ReadStream extends Readable {
  readonly path: string
  bytesRead = 0
  pending = true
  fd: number | null = null
  readonly #open: () => Promise<FsFileHandle>
  readonly #size: number
  readonly #end: number
  readonly #autoClose: boolean
  /** Where the next read starts; null reads at the file's cursor (a handle's stream, no start). */
  #position: number | null
  #offset: number
  #handle: FsFileHandle | undefined

  constructor(path: string, open: () => Promise<FsFileHandle>, options: ReadStreamOptions = {}) {
    const size = options.highWaterMark ?? 64 * 1024
    const start = options.start ?? 0
    const end = options.end ?? Number.POSITIVE_INFINITY
    if (start < 0 || end < start - 1 || !Number.isInteger(size) || size <= 0)
      throw new RangeError(
        'createReadStream: start, end and highWaterMark must describe a valid range',
      )
    super({ highWaterMark: size, ...(options.encoding ? { encoding: options.encoding } : {}) })
    this.path = path
    this.#open = open
    this.#size = size
    this.#end = end
    this.#position = options.start ?? null
    this.#offset = start
    this.#autoClose = options.autoClose !== false
  }

  override _construct(callback: (error?: Error | null) => void): void {
    opened(
      this,
      this.#open,
      (handle) => {
        this.#handle = handle
      },
      callback,
    )
  }

  override _read(): void {
    if (this.#offset > this.#end) {
      this.push(null)
      return
    }
    const length = Math.min(this.#size, this.#end - this.#offset + 1)
    this.#handle!.read(Buffer.allocUnsafe(length), 0, length, this.#position).then(
      ({ bytesRead, buffer }) => {
        if (bytesRead === 0) {
          this.push(null)
          return
        }
        if (this.#position !== null) this.#position += bytesRead
        this.#offset += bytesRead
        this.bytesRead += bytesRead
        this.push(Buffer.from(buffer.buffer, buffer.byteOffset, bytesRead))
      },
      (error: Error) => this.destroy(error),
    )
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    closeHandle(this.#autoClose ? this.#handle : undefined, error, callback)
  }

  /**
   * Closes the stream (and the file); `callback` runs once it is closed, with
   * ERR_STREAM_PREMATURE_CLOSE when it had not been read to the end (as Node's).
   */
  close(callback?: (error?: Error | null) => void): void {
    if (callback) finished(this, (error) => callback(error ?? null))
    this.destroy()
  }
}

/**
 * A writable stream into the file `open` gives, shaped like Node's `fs.WriteStream` (`path`,
 * `bytesWritten`, `pending`, `fd`, `close(cb)`). Buffered chunks are written together, one
 * transaction per batch; memory is bounded by `highWaterMark`. Each batch is atomic; the stream
 * as a whole is not (use `writeFile` for all-or-nothing).
 */
export class WriteStream extends Writable {
  readonly path: string
  bytesWritten = 0
  pending = true
  fd: number | null = null
  readonly #open: () => Promise<FsFileHandle>
  readonly #autoClose: boolean
  #position: number | undefined
  #handle: FsFileHandle | undefined

  constructor(path: string, open: () => Promise<FsFileHandle>, options: WriteStreamOptions = {}) {
    super({ highWaterMark: options.highWaterMark ?? 1024 * 1024 })
    this.path = path
    this.#open = open
    this.#position = options.start
    this.#autoClose = options.autoClose !== false
  }

  override _construct(callback: (error?: Error | null) => void): void {
    opened(
      this,
      this.#open,
      (handle) => {
        this.#handle = handle
      },
      callback,
    )
  }

  async #put(data: Uint8Array): Promise<void> {
    await this.#handle!.write(data, 0, data.byteLength, this.#position ?? null)
    if (this.#position !== undefined) this.#position += data.byteLength
    this.bytesWritten += data.byteLength
  }

  override _write(chunk: Buffer, _encoding: string, callback: (error?: Error | null) => void) {
    this.#put(chunk).then(() => callback(), callback)
  }

  override _writev(
    chunks: Array<{ chunk: Buffer }>,
    callback: (error?: Error | null) => void,
  ): void {
    this.#put(Buffer.concat(chunks.map((c) => c.chunk))).then(() => callback(), callback)
  }

  override _final(callback: (error?: Error | null) => void): void {
    callback()
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    closeHandle(this.#autoClose ? this.#handle : undefined, error, callback)
  }

  /** Ends the stream (writing what is buffered) and closes the file; `callback` once closed. */
  close(callback?: (error?: Error | null) => void): void {
    if (callback) this.once('close', () => callback(this.errored))
    // Ending flushes what is buffered; the stream then destroys itself, closing the file.
    if (this.writableEnded || this.destroyed) this.destroy()
    else this.end()
  }
}

/** Opens a stream's file: records its descriptor, emits `open` and `ready` as Node's streams do. */
function opened(
  stream: ReadStream | WriteStream,
  open: () => Promise<FsFileHandle>,
  keep: (handle: FsFileHandle) => void,
  callback: (error?: Error | null) => void,
): void {
  open().then(
    (handle) => {
      keep(handle)
      stream.fd = handle.fd
      stream.pending = false
      stream.emit('open', handle.fd)
      stream.emit('ready')
      callback()
    },
    (error: Error) => callback(error),
  )
}

function closeHandle(
  handle: FsFileHandle | undefined,
  error: Error | null,
  callback: (error?: Error | null) => void,
): void {
  if (!handle) {
    callback(error)
    return
  }
  handle.close().then(
    () => callback(error),
    (closeError: Error) => callback(error ?? closeError),
  )
}

/** `fs.createReadStream(path)` on a filesystem: opens the file when the stream starts. */
export function createReadStream(
  fs: { open(path: string, flags?: string): Promise<FsFileHandle> },
  path: string,
  options: ReadStreamOptions = {},
): ReadStream {
  return new ReadStream(path, () => fs.open(path, 'r'), { start: 0, ...options })
}

/** `fs.createWriteStream(path)` on a filesystem: opens (`flags`, `mode`) when it starts. */
export function createWriteStream(
  fs: { open(path: string, flags?: string, mode?: number): Promise<FsFileHandle> },
  path: string,
  options: WriteStreamOptions = {},
): WriteStream {
  const flags = options.flags ?? (options.start === undefined ? 'w' : 'r+')
  return new WriteStream(path, () => fs.open(path, flags, options.mode), options)
}
