import type * as fsp from 'node:fs/promises'
import { Readable, Writable } from 'node:stream'
import { FsError, isFsError, POSIX_ERRORS, type PosixCode } from '@agentfs/core'
import type { FsFileHandle, ReadStreamOptions, WriteStreamOptions } from '@agentfs/fs'

function toFsError(error: unknown, syscall: string, path: string): Error {
  if (isFsError(error)) return error
  const code = (error as { code?: string }).code
  if (code !== undefined && code in POSIX_ERRORS)
    return new FsError({ code: code as PosixCode, syscall, path, cause: error })
  return error as Error
}

/**
 * The host file handle a stream opens in `construct` and closes in `destroy` (if it is still
 * open then), shared by both kinds of stream.
 */
function streamHandle(open: () => Promise<FsFileHandle>) {
  let handle: fsp.FileHandle | undefined
  return {
    get current() {
      return handle
    },
    /** The handle, now the caller's to close. */
    take(): fsp.FileHandle | undefined {
      const taken = handle
      handle = undefined
      return taken
    },
    construct(callback: (error?: Error | null) => void): void {
      open().then(
        (h) => {
          handle = h as unknown as fsp.FileHandle
          callback()
        },
        (error: Error) => callback(error),
      )
    },
    destroy(error: Error | null, callback: (error?: Error | null) => void): void {
      const done = () => callback(error)
      if (handle) handle.close().then(done, done)
      else done()
    },
  }
}

/** A readable stream over a host file handle that `open` gives on the first read. */
export function readStream(
  open: () => Promise<FsFileHandle>,
  path: string,
  options: ReadStreamOptions,
): Readable {
  const file = streamHandle(open)
  let position = options.start ?? 0
  const end = options.end ?? Number.POSITIVE_INFINITY
  const size = options.highWaterMark ?? 1 << 16
  const stream = new Readable({
    highWaterMark: size,
    construct: (callback) => file.construct(callback),
    read: () => {
      const want = Math.min(size, end - position + 1)
      const handle = file.current
      if (want <= 0 || !handle) return void stream.push(null)
      handle.read(Buffer.allocUnsafe(want), 0, want, position).then(
        ({ bytesRead, buffer }) => {
          position += bytesRead
          stream.push(bytesRead === 0 ? null : buffer.subarray(0, bytesRead))
        },
        (error: unknown) => stream.destroy(toFsError(error, 'read', path)),
      )
    },
    destroy: (error, callback) => file.destroy(error, callback),
  })
  if (options.encoding) stream.setEncoding(options.encoding)
  return stream
}

/**
 * A writable stream into a host file handle that `open` gives before the first write; `finish`
 * comes after the file is closed, so the bytes are in the file by then.
 */
export function writeStream(
  open: () => Promise<FsFileHandle>,
  path: string,
  options: WriteStreamOptions,
): Writable {
  const file = streamHandle(open)
  let position: number | null = options.start ?? null
  return new Writable({
    ...(options.highWaterMark === undefined ? {} : { highWaterMark: options.highWaterMark }),
    construct: (callback) => file.construct(callback),
    write: (chunk: Buffer, _encoding, callback) => {
      file.current!.write(chunk, 0, chunk.length, position).then(
        ({ bytesWritten }) => {
          if (position !== null) position += bytesWritten
          callback()
        },
        (error: unknown) => callback(toFsError(error, 'write', path)),
      )
    },
    final: (callback) => {
      const h = file.take()
      if (!h) return callback()
      h.close().then(
        () => callback(),
        (error: unknown) => callback(toFsError(error, 'close', path)),
      )
    },
    destroy: (error, callback) => file.destroy(error, callback),
  })
}
