import { constants } from 'node:fs'
import { FsError } from '@agentfs/core'
import {
  createReadStream,
  createWriteStream,
  type ReadStream,
  type WriteStream,
} from '../sql/streams.js'
import { Dirent, Stats } from '../stats.js'
import type { FileSystem, FsFileHandle } from '../types.js'
import { mkdtemp, modeArg, pathArg } from './node-args.js'
import { callbackApi, type FdTable } from './node-callbacks.js'
import { syncApi } from './node-sync.js'
import { watchApi } from './node-watch.js'

/**
 * Runs the synchronous calls of {@link toNodeFs}: `call('readFile', args)` does what
 * `fs.promises.readFile(...args)` does and returns its result synchronously (the SDK's
 * `agent.nodeFs()` gives one that runs them on a worker thread).
 */
export interface SyncBridge {
  call(method: string, args: readonly unknown[]): unknown
}

/** Options of {@link toNodeFs}. */
export interface NodeFsOptions {
  /** Runs the `…Sync` calls; without it they fail with ENOSYS, saying what to use instead. */
  readonly sync?: SyncBridge
  /** Why there is no bridge, for the ENOSYS message of the `…Sync` calls. */
  readonly noSync?: string
}

/** The methods of `fs.promises` that take a path first (and a mode where noted). */
const PATH_METHODS = [
  'access',
  'appendFile',
  'chmod',
  'chown',
  'lchown',
  'lstat',
  'lutimes',
  'mkdir',
  'opendir',
  'readdir',
  'readFile',
  'readlink',
  'realpath',
  'rm',
  'rmdir',
  'stat',
  'statfs',
  'truncate',
  'unlink',
  'utimes',
  'writeFile',
] as const
/** Node's syscall names where they differ from the method's (errors name them). */
const SYSCALLS: Readonly<Record<string, string>> = { readFile: 'open', readdir: 'scandir' }

/** The methods that take two paths. */
const TWO_PATH_METHODS = ['copyFile', 'cp', 'link', 'rename'] as const

// biome-ignore lint/suspicious/noExplicitAny: Node's fs functions take many argument shapes
type AnyFunction = (...args: any[]) => any

const FD_METHODS = [
  'open',
  'close',
  'read',
  'write',
  'fstat',
  'ftruncate',
  'fsync',
  'fdatasync',
] as const
type PromiseName =
  | (typeof PATH_METHODS)[number]
  | (typeof TWO_PATH_METHODS)[number]
  | 'symlink'
  | 'open'
  | 'mkdtemp'
  | 'mkdtempDisposable'
  | 'exists'
  | 'lchmod'
type CallbackName =
  | Exclude<PromiseName, 'open' | 'mkdtempDisposable'>
  | (typeof FD_METHODS)[number]
  | 'watch'
  | 'watchFile'
  | 'unwatchFile'
  | 'fchmod'
  | 'fchown'
  | 'futimes'
type SyncName =
  `${Exclude<PromiseName, 'lchmod'> | (typeof FD_METHODS)[number] | 'fchmod' | 'fchown' | 'futimes'}Sync`

/** Node-shaped `fs` of a filesystem: what {@link toNodeFs} returns. */
export type NodeFs = { readonly [K in CallbackName | SyncName]: AnyFunction } & {
  /** The `node:fs/promises` API (and `watch` when the filesystem has it). */
  readonly promises: { readonly [K in PromiseName]: AnyFunction } & {
    readonly constants: typeof constants
    readonly watch?: AnyFunction
  }
  readonly constants: typeof constants
  readonly Stats: typeof Stats
  readonly Dirent: typeof Dirent
  createReadStream(path: unknown, options?: object | string): ReadStream
  createWriteStream(path: unknown, options?: object): WriteStream
}

/**
 * A `node:fs`-shaped object over any AgentFS filesystem, for libraries that take an `fs`
 * (isomorphic-git, unionfs, memfs-style consumers): `promises` (the `node:fs/promises` API),
 * the callback API, `createReadStream`/`createWriteStream`, `constants`, `Stats`, `Dirent`, and
 * the `…Sync` calls when a {@link SyncBridge} is given. Paths may be strings, Buffers or `file:`
 * URLs (relative ones start at `/`); modes may be numbers or octal strings.
 */
export function toNodeFs(fs: FileSystem, options: NodeFsOptions = {}): NodeFs {
  const promises: Record<string, unknown> = { constants }
  for (const name of PATH_METHODS) {
    const method = (fs[name] as (...a: unknown[]) => Promise<unknown>).bind(fs)
    // Async, as Node's: a bad argument is a rejected promise, never a throw.
    const syscall = SYSCALLS[name] ?? name
    promises[name] = async (path: unknown, ...rest: unknown[]) => {
      const call = method(pathArg(path, 'path', syscall), ...normalizeOptions(name, rest))
      // `throwIfNoEntry: false` (Node's statSync option, taken by every form here): a missing
      // entry is undefined instead of an error.
      const options = rest[0] as { throwIfNoEntry?: boolean } | undefined
      if ((name !== 'stat' && name !== 'lstat') || options?.throwIfNoEntry !== false) return call
      return call.catch((error: unknown) => {
        const code = (error as { code?: string }).code
        if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
        throw error
      })
    }
  }
  for (const name of TWO_PATH_METHODS) {
    const method = (fs[name] as (...a: unknown[]) => Promise<unknown>).bind(fs)
    promises[name] = async (from: unknown, to: unknown, ...rest: unknown[]) =>
      method(pathArg(from, 'src'), pathArg(to, 'dest'), ...rest)
  }
  promises.symlink = async (target: unknown, path: unknown) =>
    fs.symlink(typeof target === 'string' ? target : pathArg(target, 'target'), pathArg(path))
  promises.open = async (path: unknown, flags?: string | number, mode?: unknown) =>
    fs.open(pathArg(path), flags ?? 'r', modeArg(mode))
  promises.mkdtemp = async (prefix: unknown) => mkdtemp(fs, prefix)
  promises.mkdtempDisposable = async (prefix: unknown) => {
    const path = await mkdtemp(fs, prefix)
    const remove = () => fs.rm(path, { recursive: true, force: true })
    return { path, remove, [Symbol.asyncDispose]: remove }
  }
  promises.exists = async (path: unknown) => fs.exists(pathArg(path))
  promises.lchmod = async () => {
    throw new FsError({ code: 'ENOSYS', syscall: 'lchmod', hint: 'lchmod exists only on macOS' })
  }
  if (typeof (fs as { watch?: unknown }).watch === 'function')
    promises.watch = (path: unknown, opts?: object) =>
      (fs as unknown as { watch(p: string, o?: object): unknown }).watch(pathArg(path), opts)
  const fds: FdTable = new Map<number, FsFileHandle>()
  const sync = syncApi(
    options.sync,
    [...PATH_METHODS, 'mkdtemp'],
    [...TWO_PATH_METHODS, 'symlink'],
    options.noSync,
  )
  return {
    ...callbackApi(promises, fds, options.sync ? sync : undefined),
    ...watchApi(
      promises,
      options.sync
        ? (p) => sync.statSync!(p, { throwIfNoEntry: false }) as Stats | undefined
        : undefined,
    ),
    ...sync,
    promises,
    constants,
    Stats,
    Dirent,
    createReadStream: (path: unknown, opts?: object | string) =>
      createReadStream(
        fs,
        pathArg(path),
        typeof opts === 'string' ? { encoding: opts as BufferEncoding } : (opts ?? {}),
      ),
    createWriteStream: (path: unknown, opts?: { mode?: unknown } & object) =>
      createWriteStream(fs, pathArg(path), {
        ...(opts ?? {}),
        ...(opts?.mode === undefined ? {} : { mode: modeArg(opts.mode)! }),
      } as object),
  } as unknown as NodeFs
}

/** Modes as numbers, in whichever argument or option carries one. */
function normalizeOptions(name: string, rest: unknown[]): unknown[] {
  if (name === 'chmod') return [modeArg(rest[0])]
  if (name === 'mkdir') {
    const o = rest[0]
    if (typeof o === 'number' || typeof o === 'string') return [{ mode: modeArg(o) }]
    if (o && typeof o === 'object' && 'mode' in o)
      return [{ ...(o as object), mode: modeArg((o as { mode: unknown }).mode) }]
    return rest
  }
  if (name === 'writeFile' || name === 'appendFile') {
    const o = rest[1]
    if (o && typeof o === 'object' && 'mode' in o)
      return [rest[0], { ...(o as object), mode: modeArg((o as { mode: unknown }).mode) }]
  }
  return rest
}
