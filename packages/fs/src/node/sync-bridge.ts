import type { MessagePort } from 'node:worker_threads'
import { receiveMessageOnPort } from 'node:worker_threads'
import { type Actor, currentActor, FsError, withActor } from '@agentfs/core'
import { Dirent, Stats } from '../stats.js'
import type { FileSystem, FsFileHandle } from '../types.js'
import type { SyncBridge } from './node-fs.js'

/** Descriptors of the worker's files start here, apart from the caller's own (callback) ones. */
export const SYNC_FD_BASE = 0x100000

/** How long one synchronous call may take before it fails with ETIMEDOUT (default 60 s). */
export const SYNC_TIMEOUT_MS = 60_000

/**
 * The shared words of a bridge (an `Int32Array` over its `SharedArrayBuffer`, 8 bytes at least):
 * [REPLY] the id of the request whose reply was posted last; [STATE] the current request's id
 * and phase, so that caller and worker decide with one compare-and-swap who wins a race
 * between a time-out and the call taking effect (no phase of one request is ever mistaken for
 * another's).
 */
const REPLY = 0
const STATE = 1
/** Bytes the bridge's `SharedArrayBuffer` needs. */
export const SYNC_SHARED_BYTES = 8

/** Phases of a request, the low two bits of [STATE]. */
const PENDING = 0
const RUNNING = 1
const COMMITTING = 2
const CANCELLED = 3
const word = (id: number, phase: number) => (id << 2) | phase | 0
/** Ids wrap below 2^29, so id and phase fit one 32-bit word; 0 is never an id. */
const MAX_ID = 2 ** 29 - 1

/**
 * The calls that change the tree by path: the worker runs each in a transaction of its own and
 * takes it back unless the caller is still waiting at the commit, so a call reported as timed
 * out never takes effect. Descriptor writes (`fd.*`) and reads cannot be taken back (a read has
 * no effect to take back).
 */
export const SYNC_TRANSACTIONAL = new Set([
  'writeFile',
  'appendFile',
  'mkdir',
  'mkdtemp',
  'rmdir',
  'rm',
  'unlink',
  'rename',
  'copyFile',
  'cp',
  'symlink',
  'link',
  'chmod',
  'lchmod',
  'chown',
  'lchown',
  'utimes',
  'lutimes',
  'truncate',
])

/** Calls that read only: a timed-out one has changed nothing. */
const READS = new Set([
  'exists',
  'access',
  'stat',
  'lstat',
  'readFile',
  'readdir',
  'readlink',
  'realpath',
  'opendir',
  'fd.read',
  'fd.fstat',
])

interface Request {
  readonly id: number
  readonly method: string
  readonly args: readonly unknown[]
  readonly actor: Actor | undefined
}

type Reply = { readonly id: number } & (
  | { readonly value: unknown }
  | { readonly error: Record<string, unknown> }
)

/** Options of {@link portSyncBridge}. */
export interface SyncBridgeOptions {
  /** How long one call may wait for its answer before it fails with ETIMEDOUT. */
  readonly timeoutMs?: number
  /**
   * Asked before each call: a reason the call cannot run now (it would wait on the caller
   * itself, e.g. the caller's own database holds a transaction open), or undefined. A reason
   * fails the call at once with EDEADLK, before anything is sent.
   */
  readonly blocked?: () => string | undefined
}

/**
 * The caller's side of a synchronous bridge: each call is posted to a worker thread (which runs
 * it on its own connection to the same database, see {@link serveSync}) and waited for with
 * `Atomics.wait`, so `readFileSync` really returns the file. Results are rebuilt as `Stats`,
 * `Dirent`s, Buffers; errors keep their class, code, syscall and path. The change feed
 * attributes a call to the caller's session and tool call.
 *
 * Requests and replies are matched by id: a reply that comes after its call gave up is dropped,
 * never taken for the next call's. A call that times out says what became of it: not run, taken
 * back (the calls in {@link SYNC_TRANSACTIONAL}), nothing to take back (reads), or — for
 * descriptor writes only — that it may still take effect.
 */
export function portSyncBridge(
  port: MessagePort,
  shared: SharedArrayBuffer,
  options: SyncBridgeOptions | number = {},
): SyncBridge {
  const { timeoutMs = SYNC_TIMEOUT_MS, blocked } =
    typeof options === 'number' ? { timeoutMs: options } : options
  const words = new Int32Array(shared)
  let lastId = 0
  /** Waits until the reply of `id` is posted or `ms` pass; true when it was posted. */
  const waitFor = (id: number, ms: number): boolean => {
    const until = Date.now() + ms
    for (;;) {
      const seen = Atomics.load(words, REPLY)
      if (seen === id) return true
      const left = until - Date.now()
      if (left <= 0) return false
      Atomics.wait(words, REPLY, seen, left)
    }
  }
  /** The reply of `id` from the port; replies of calls that gave up earlier are dropped. */
  const replyOf = (id: number): Reply | undefined => {
    for (;;) {
      const message = receiveMessageOnPort(port)?.message as Reply | undefined
      if (message === undefined || message.id === id) return message
    }
  }
  const timedOut = (method: string, outcome: string) =>
    new FsError({
      code: 'ETIMEDOUT',
      syscall: method,
      hint: `the synchronous call took over ${timeoutMs} ms (an unfinished change on the same database, by this agent or another process, holds it?); ${outcome}`,
    })
  return {
    call(method: string, args: readonly unknown[]): unknown {
      const reason = blocked?.()
      if (reason !== undefined)
        throw new FsError({ code: 'EDEADLK', syscall: method, hint: reason })
      const id = lastId >= MAX_ID ? 1 : lastId + 1
      lastId = id
      Atomics.store(words, STATE, word(id, PENDING))
      port.postMessage({
        id,
        method,
        args: args.map(plain),
        actor: currentActor(),
      } satisfies Request)
      if (!waitFor(id, timeoutMs)) {
        // Whoever moves the state first decides: the worker (running, committing) or the caller.
        const pending = word(id, PENDING)
        if (Atomics.compareExchange(words, STATE, pending, word(id, CANCELLED)) === pending)
          throw timedOut(method, 'it was not run')
        const running = word(id, RUNNING)
        if (Atomics.compareExchange(words, STATE, running, word(id, CANCELLED)) === running)
          throw timedOut(
            method,
            SYNC_TRANSACTIONAL.has(method)
              ? 'it was taken back and has no effect'
              : READS.has(method)
                ? 'it changed nothing'
                : 'it had started and may still take effect',
          )
        // The worker is committing it: its answer is on the way.
        if (!waitFor(id, timeoutMs))
          throw timedOut(method, 'it was being committed and has taken effect or will')
      }
      const reply = replyOf(id)
      if (!reply)
        throw new FsError({ code: 'EIO', syscall: method, hint: 'the sync worker sent no reply' })
      if ('error' in reply) throw reviveError(reply.error)
      return revive(reply.value)
    },
  }
}

/** What {@link serveSync} runs requests on. */
export interface SyncTarget {
  readonly fs: FileSystem
  /** `fs` in the `node:fs/promises` shape. */
  readonly promises: Record<string, unknown>
  /**
   * Runs `fn` in one transaction of the database, on the `node:fs/promises` shape of a
   * filesystem bound to it; rolled back when `fn` throws. Without it, the calls in
   * {@link SYNC_TRANSACTIONAL} run as they are (and cannot be taken back after a time-out).
   */
  readonly transaction?: <T>(fn: (promises: Record<string, unknown>) => Promise<T>) => Promise<T>
}

/**
 * The worker's side of a synchronous bridge: answers each request on `port` by running it on
 * `fs` (through `promises`, the `node:fs/promises` shape), under the caller's actor, then wakes
 * the caller. Descriptors opened here are numbered from {@link SYNC_FD_BASE}.
 */
export function serveSync(
  port: MessagePort,
  shared: SharedArrayBuffer,
  ready: Promise<SyncTarget>,
): void {
  const words = new Int32Array(shared)
  const fds = new Map<number, FsFileHandle>()
  let nextFd = SYNC_FD_BASE
  const handle = (fd: unknown, syscall: string): FsFileHandle => {
    const found = typeof fd === 'number' ? fds.get(fd) : undefined
    if (!found) throw new FsError({ code: 'EBADF', syscall })
    return found
  }
  const run = async (
    { method, args }: Request,
    fs: FileSystem,
    promises: Record<string, unknown>,
  ): Promise<unknown> => {
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
  /** Runs a request unless its caller gave up first; a transactional one commits only while
   * its caller still waits. */
  const answer = async (request: Request): Promise<unknown> => {
    const { id, method } = request
    const target = await ready
    const pending = word(id, PENDING)
    if (Atomics.compareExchange(words, STATE, pending, word(id, RUNNING)) !== pending)
      throw new FsError({ code: 'ECANCELED', syscall: method, hint: 'the caller gave up' })
    if (!target.transaction || !SYNC_TRANSACTIONAL.has(method))
      return run(request, target.fs, target.promises)
    return target.transaction(async (promises) => {
      const value = await run(request, target.fs, promises)
      const running = word(id, RUNNING)
      if (Atomics.compareExchange(words, STATE, running, word(id, COMMITTING)) !== running)
        throw new FsError({ code: 'ECANCELED', syscall: method, hint: 'the caller gave up' })
      return value
    })
  }
  port.on('message', (request: Request) => {
    withActor(request.actor ?? {}, () => answer(request))
      .then(
        (value) => ({ id: request.id, value: plain(value) }),
        (error: unknown) => ({ id: request.id, error: plainError(error) }),
      )
      .then((reply: Reply) => {
        port.postMessage(reply)
        // Only the call the caller waits for moves the reply word: a late reply (its caller
        // gave up and went on) is left in the port, where the caller drops it, so it can never
        // hide the current call's reply by overwriting the word after it.
        if (Atomics.load(words, STATE) >> 2 !== request.id) return
        Atomics.store(words, REPLY, request.id)
        Atomics.notify(words, REPLY)
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
