import { FsError } from '@agentfs/core'
import type { FsFileHandle } from '../types.js'
import { fdArg, modeArg } from './node-args.js'
import { SYNC_FD_BASE } from './sync-bridge.js'

/** Open files of the callback API, by descriptor. */
export type FdTable = Map<number, FsFileHandle>

type Callback = (error: Error | null, ...results: unknown[]) => void
type Promised = (...args: unknown[]) => Promise<unknown>

/** Splits Node's trailing callback off the arguments (a TypeError when it is missing). */
function withCallback(args: unknown[]): [unknown[], Callback] {
  const callback = args[args.length - 1]
  if (typeof callback !== 'function') {
    const error = new TypeError(
      `The "cb" argument must be of type function. Received ${typeof callback}`,
    ) as TypeError & { code: string }
    error.code = 'ERR_INVALID_ARG_TYPE'
    throw error
  }
  return [args.slice(0, -1), callback as Callback]
}

/** Runs `promise` and reports to `callback` on a later tick, as Node's callbacks are called. */
function report(promise: Promise<unknown>, callback: Callback, spread = false): void {
  promise.then(
    (value) =>
      process.nextTick(() =>
        spread ? callback(null, ...(value as unknown[])) : callback(null, value),
      ),
    (error: Error) => process.nextTick(() => callback(error)),
  )
}

/**
 * Node's callback API over a `promises` object: every method with a trailing `(err, result)`
 * callback, `exists` with its boolean one, and the descriptor calls (`open`, `read`, `write`,
 * `close`, `fstat`, …) on handles kept in `fds`.
 */
export function callbackApi(
  promises: Record<string, unknown>,
  fds: FdTable,
  /** The `…Sync` calls, when they run on a bridge: descriptors from `openSync` are theirs. */
  sync?: Record<string, (...args: unknown[]) => unknown>,
): Record<string, (...args: unknown[]) => void> {
  const api: Record<string, (...args: unknown[]) => void> = {}
  for (const [name, method] of Object.entries(promises)) {
    if (typeof method !== 'function' || name === 'open' || name === 'watch') continue
    api[name] = (...all: unknown[]) => {
      const [args, callback] = withCallback(all)
      report((method as Promised)(...args), callback)
    }
  }
  api.exists = (...all: unknown[]) => {
    const [args, callback] = withCallback(all)
    ;(promises.access as Promised)(args[0]).then(
      () => process.nextTick(() => (callback as unknown as (b: boolean) => void)(true)),
      () => process.nextTick(() => (callback as unknown as (b: boolean) => void)(false)),
    )
  }
  const handle = (fd: unknown, syscall: string): FsFileHandle => {
    const found = typeof fd === 'number' ? fds.get(fd) : undefined
    if (!found) throw new FsError({ code: 'EBADF', syscall })
    return found
  }
  const onFd =
    (syscall: string, run: (h: FsFileHandle, args: unknown[]) => Promise<unknown>) =>
    (...all: unknown[]) => {
      const [args, callback] = withCallback(all)
      fdArg(args[0])
      // A descriptor from openSync lives on the bridge's side: the call goes there.
      if (sync && typeof args[0] === 'number' && args[0] >= SYNC_FD_BASE) {
        report(
          (async () => {
            const value = sync[`${syscall}Sync`]!(...args)
            return syscall === 'read' || syscall === 'write' ? [value, args[1]] : value
          })(),
          callback,
          syscall === 'read' || syscall === 'write',
        )
        return
      }
      report(
        (async () => run(handle(args[0], syscall), args.slice(1)))(),
        callback,
        syscall === 'read' || syscall === 'write',
      )
    }
  api.open = (...all: unknown[]) => {
    const [args, callback] = withCallback(all)
    report(
      (promises.open as Promised)(args[0], args[1] ?? 'r', args[2]).then((h) => {
        const opened = h as FsFileHandle
        fds.set(opened.fd, opened)
        return opened.fd
      }),
      callback,
    )
  }
  const closeFd = onFd('close', async (h) => {
    fds.delete(h.fd)
    await h.close()
  })
  // The callback is optional for close, as Node's: without one a failure is thrown.
  api.close = (...all: unknown[]) =>
    typeof all[all.length - 1] === 'function'
      ? closeFd(...all)
      : closeFd(...all, (error: Error | null) => {
          if (error) throw error
        })
  api.read = onFd('read', async (h, args) => {
    const [first, offset, length, position] = args
    const o =
      first instanceof Uint8Array
        ? { buffer: first, offset, length, position }
        : ((first ?? {}) as {
            buffer?: Uint8Array
            offset?: number
            length?: number
            position?: number | null
          })
    const buffer = o.buffer ?? Buffer.alloc(16384)
    const at = (o.offset as number | undefined) ?? 0
    const r = await h.read(
      buffer,
      at,
      (o.length as number | undefined) ?? buffer.byteLength - at,
      (o.position as number | null | undefined) ?? null,
    )
    return [r.bytesRead, buffer]
  })
  api.write = onFd('write', async (h, args) => {
    const [data, a, b, c] = args
    if (typeof data === 'string') {
      const r = await h.write(data, (a as number | null | undefined) ?? null, b as never)
      return [r.bytesWritten, data]
    }
    const bytes = data as Uint8Array
    const offset = typeof a === 'object' && a !== null ? a : undefined
    const r = offset
      ? await h.write(bytes, offset as never)
      : await h.write(
          bytes,
          (a as number | undefined) ?? 0,
          (b as number | undefined) ?? bytes.byteLength - ((a as number | undefined) ?? 0),
          (c as number | null | undefined) ?? null,
        )
    return [r.bytesWritten, bytes]
  })
  api.fstat = onFd('fstat', (h) => h.stat())
  api.ftruncate = onFd('ftruncate', (h, [len]) => h.truncate((len as number | undefined) ?? 0))
  api.fsync = onFd('fsync', (h) => h.sync())
  api.fdatasync = onFd('fdatasync', (h) => h.sync())
  api.fchmod = onFd('fchmod', (h, [mode]) =>
    (h as unknown as { chmod(m: number): Promise<void> }).chmod(modeArg(mode)!),
  )
  api.fchown = onFd('fchown', (h, [uid, gid]) =>
    (h as unknown as { chown(u: unknown, g: unknown): Promise<void> }).chown(uid, gid),
  )
  api.futimes = onFd('futimes', (h, [atime, mtime]) =>
    (h as unknown as { utimes(a: unknown, m: unknown): Promise<void> }).utimes(atime, mtime),
  )
  return api
}
