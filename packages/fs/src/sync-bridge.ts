import type { MessagePort } from 'node:worker_threads'
import { receiveMessageOnPort } from 'node:worker_threads'
import { type Actor, currentActor, FsError, withActor } from '@agentfs/core'
import type { SyncBridge } from './node-fs.js'
import { Dirent, Stats } from './stats.js'
import type { FileSystem, FsFileHandle } from './types.js'

/** Descriptors of the worker's files start here, apart from the caller's own (callback) ones. */
export const SYNC_FD_BASE = 0x100000

/** How long one synchronous call may take before it fails with ETIMEDOUT (default 60 s). */
export const SYNC_TIMEOUT_MS = 60_000

interface Request {
  readonly method: string
  readonly args: readonly unknown[]
  readonly actor: Actor | undefined
}

type Reply = { readonly value: unknown } | { readonly error: Record<string, unknown> }

/**
 * The caller's side of a synchronous bridge: each call is posted to a worker thread (which runs
 * it on its own connection to the same database, see {@link serveSync}) and waited for with
 * `Atomics.wait`, so `readFileSync` really returns the file. Results are rebuilt as `Stats`,
 * `Dirent`s, Buffers; errors keep their class, code, syscall and path. The change feed
 * attributes a call to the caller's session and tool call.
 */
export function portSyncBridge(
  port: MessagePort,
  shared: SharedArrayBuffer,
  timeoutMs = SYNC_TIMEOUT_MS,
): SyncBridge {
  const flag = new Int32Array(shared)
  return {
    call(method: string, args: readonly unknown[]): unknown {
      Atomics.store(flag, 0, 0)
      port.postMessage({ method, args: args.map(plain), actor: currentActor() } satisfies Request)
      if (Atomics.wait(flag, 0, 0, timeoutMs) === 'timed-out')
        throw new FsError({
          code: 'ETIMEDOUT',
          syscall: method,
          hint: `the synchronous call took over ${timeoutMs} ms (an unfinished asynchronous change on the same database holds it?)`,
        })
      const reply = receiveMessageOnPort(port)?.message as Reply | undefined
      if (!reply)
        throw new FsError({ code: 'EIO', syscall: method, hint: 'the sync worker sent no reply' })
      if ('error' in reply) throw reviveError(reply.error)
      return revive(reply.value)
    },
  }
}

/**
 * The worker's side of a synchronous bridge: answers each request on `port` by running it on
 * `fs` (through `promises`, the `node:fs/promises` shape), under the caller's actor, then wakes
 * the caller. Descriptors opened here are numbered from {@link SYNC_FD_BASE}.
 */
export function serveSync(
  port: MessagePort,
  shared: SharedArrayBuffer,
  ready: Promise<{ fs: FileSystem; promises: Record<string, unknown> }>,
): void {
  const flag = new Int32Array(shared)
  const fds = new Map<number, FsFileHandle>()
  let nextFd = SYNC_FD_BASE
  const handle = (fd: unknown, syscall: string): FsFileHandle => {
    const found = typeof fd === 'number' ? fds.get(fd) : undefined
    if (!found) throw new FsError({ code: 'EBADF', syscall })
    return found
  }
  const run = async ({ method, args }: Request): Promise<unknown> => {
    const { fs, promises } = await ready
    const [first, ...rest] = args
    switch (method) {
      case 'exists':
        return fs.exists(first as string)
      case 'fd.open': {
        const opened = (await (promises.open as (...a: unknown[]) => Promise<FsFileHandle>)(
          ...args,
        )) as FsFileHandle
        const fd = nextFd++
        fds.set(fd, opened)
        return fd
      }
      case 'fd.close':
        await handle(first, 'close').close()
        fds.delete(first as number)
        return undefined
      case 'fd.read': {
        const [length, position] = rest as [number, number | null]
        const buffer = Buffer.alloc(length)
        const r = await handle(first, 'read').read(buffer, 0, length, position)
        return buffer.subarray(0, r.bytesRead)
      }
      case 'fd.write': {
        const [data, position, encoding] = rest as [Uint8Array | string, number | null, string]
        const h = handle(first, 'write')
        const r =
          typeof data === 'string'
            ? await h.write(data, position, encoding as never)
            : await h.write(data, 0, data.byteLength, position)
        return r.bytesWritten
      }
      case 'fd.fstat':
        return handle(first, 'fstat').stat()
      case 'fd.ftruncate':
        return handle(first, 'ftruncate').truncate((rest[0] as number | undefined) ?? 0)
      case 'fd.fsync':
      case 'fd.fdatasync':
        return handle(first, 'fsync').sync()
      case 'fd.fchmod':
      case 'fd.fchown':
      case 'fd.futimes': {
        const name = method.slice(4) as 'fchmod' | 'fchown' | 'futimes'
        const target = handle(first, name) as unknown as Record<
          string,
          (...a: unknown[]) => Promise<unknown>
        >
        return target[name.slice(1)]!(...rest)
      }
      case 'mkdir':
        return (promises.mkdir as (...a: unknown[]) => Promise<unknown>)(...args).catch(
          (error: unknown) => {
            // Node's mkdirSync reports a dangling link in the way as ENOENT of the path asked
            // for; its promise form (what ran) names the link with ENOTDIR.
            const e = error as { code?: string; path?: string }
            if (e.code === 'ENOTDIR' && e.path !== first)
              throw new FsError({ code: 'ENOENT', syscall: 'mkdir', path: first as string })
            throw error
          },
        )
      default: {
        const fn = promises[method]
        if (typeof fn !== 'function')
          throw new FsError({
            code: 'ENOSYS',
            syscall: method,
            hint: `${method}Sync is not offered`,
          })
        return (fn as (...a: unknown[]) => Promise<unknown>)(...args)
      }
    }
  }
  port.on('message', (request: Request) => {
    withActor(request.actor ?? {}, () => run(request))
      .then(
        (value) => ({ value: plain(value) }),
        (error: unknown) => ({ error: plainError(error) }),
      )
      .then((reply: Reply) => {
        port.postMessage(reply)
        Atomics.store(flag, 0, 1)
        Atomics.notify(flag, 0)
      })
  })
}

/** A value as it crosses threads: Stats and Dirents tagged, so the other side rebuilds them. */
function plain(value: unknown): unknown {
  if (value instanceof Stats) return { $stats: { ...value } }
  if (value instanceof Dirent)
    return {
      $dirent: {
        name: value.name,
        parentPath: value.parentPath,
        mode: value.isDirectory()
          ? 0o040000
          : value.isSymbolicLink()
            ? 0o120000
            : value.isFile()
              ? 0o100000
              : value.isFIFO()
                ? 0o010000
                : value.isSocket()
                  ? 0o140000
                  : value.isCharacterDevice()
                    ? 0o020000
                    : 0o060000,
      },
    }
  if (Array.isArray(value)) return value.map(plain)
  return value
}

function revive(value: unknown): unknown {
  if (value instanceof Uint8Array)
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  if (Array.isArray(value)) return value.map(revive)
  if (value && typeof value === 'object') {
    if ('$stats' in value) return Object.assign(Object.create(Stats.prototype), value.$stats)
    if ('$dirent' in value) {
      const d = value.$dirent as { name: string; parentPath: string; mode: number }
      return new Dirent(d.name, d.parentPath, d.mode)
    }
  }
  return value
}

const ERROR_KINDS = { FsError, TypeError, RangeError, Error } as const

function plainError(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { kind: 'Error', message: String(error) }
  const kind =
    error instanceof FsError ? 'FsError' : error.name in ERROR_KINDS ? error.name : 'Error'
  return { ...error, kind, name: error.name, message: error.message, stack: error.stack }
}

function reviveError(fields: Record<string, unknown>): Error {
  const kind = ERROR_KINDS[fields.kind as keyof typeof ERROR_KINDS] ?? Error
  const error = new Error(fields.message as string)
  Object.setPrototypeOf(error, kind.prototype)
  const { kind: _kind, stack: _stack, name: _name, ...rest } = fields
  return Object.assign(error, rest)
}
