import { type BigIntStats, constants, existsSync, type Stats as NodeStats } from 'node:fs'
import * as fsp from 'node:fs/promises'
import {
  FsError,
  fsError,
  isFsError,
  type PathSteps,
  POSIX_ERRORS,
  type PosixCode,
  parsePath,
  resolvePath,
} from '@agentfs/core'
import { type FsFileHandle, Stats } from '@agentfs/fs'

const NS = 1_000_000_000n

/** Our Stats from node's bigint stats: nanosecond times, and a version token from ctime. */
export function statsFromNode(s: BigIntStats): Stats {
  const split = (ns: bigint) => ({ sec: Number(ns / NS), nsec: Number(ns % NS) })
  const a = split(s.atimeNs)
  const m = split(s.mtimeNs)
  const c = split(s.ctimeNs)
  return new Stats(
    {
      ino: Number(s.ino),
      mode: Number(s.mode),
      nlink: Number(s.nlink),
      uid: Number(s.uid),
      gid: Number(s.gid),
      size: Number(s.size),
      atime: a.sec,
      mtime: m.sec,
      ctime: c.sec,
      rdev: Number(s.rdev),
      atime_nsec: a.nsec,
      mtime_nsec: m.nsec,
      ctime_nsec: c.nsec,
    },
    { blksize: Number(s.blksize), dev: Number(s.dev) },
  )
}

/** `/proc/self/fd/N/name` names `name` inside the directory open as fd N (Linux): openat. */
export const PROC_FD = '/proc/self/fd'
export const HAS_PROC_FD = process.platform === 'linux' && existsSync(PROC_FD)
export const {
  O_RDONLY,
  O_WRONLY,
  O_RDWR,
  O_CREAT,
  O_EXCL,
  O_TRUNC,
  O_APPEND,
  O_DIRECTORY,
  O_NOFOLLOW,
} = constants
export const O_NONBLOCK = constants.O_NONBLOCK ?? 0

const FLAGS: Record<string, number> = {
  r: O_RDONLY,
  rs: O_RDONLY,
  'r+': O_RDWR,
  'rs+': O_RDWR,
  w: O_WRONLY | O_CREAT | O_TRUNC,
  wx: O_WRONLY | O_CREAT | O_TRUNC | O_EXCL,
  'w+': O_RDWR | O_CREAT | O_TRUNC,
  'wx+': O_RDWR | O_CREAT | O_TRUNC | O_EXCL,
  a: O_WRONLY | O_CREAT | O_APPEND,
  ax: O_WRONLY | O_CREAT | O_APPEND | O_EXCL,
  as: O_WRONLY | O_CREAT | O_APPEND,
  'a+': O_RDWR | O_CREAT | O_APPEND,
  'ax+': O_RDWR | O_CREAT | O_APPEND | O_EXCL,
  'as+': O_RDWR | O_CREAT | O_APPEND,
}

/** Node's flag strings as numbers; an unknown string is EINVAL. */
export function numericFlags(flags: string | number, syscall: string, path: string): number {
  if (typeof flags === 'number') return flags
  const value = FLAGS[flags]
  if (value === undefined)
    throw new FsError({ code: 'EINVAL', syscall, path, hint: `unknown flags ${flags}` })
  return value
}

/** A host error as ours, naming the path inside the filesystem (never the host path). */
export function hostError(error: unknown, syscall: string, path: string, dest?: string): FsError {
  if (isFsError(error)) return error
  const code = (error as { code?: string }).code
  const known = code !== undefined && code in POSIX_ERRORS
  return new FsError({
    code: known ? (code as PosixCode) : 'EIO',
    syscall: (error as { syscall?: string }).syscall ?? syscall,
    path,
    ...(dest === undefined ? {} : { dest }),
    ...(known ? {} : { hint: String((error as Error).message ?? error) }),
    cause: error,
  })
}

/** Opens a directory without following a link; one swapped in between two steps is EACCES. */
export async function openDir(at: string, syscall: string, path: string): Promise<fsp.FileHandle> {
  try {
    return await fsp.open(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code === 'ELOOP' || code === 'ENOTDIR')
      throw fsError('EACCES', syscall, path, {
        hint: 'a directory on the path was replaced by a link or a file while it was resolved',
      })
    throw hostError(error, syscall, path)
  }
}

/** A directory reached by a walk: held open (Linux) so later steps cannot be redirected. */
interface DirRef {
  /** How the directory is named for the next system call: `/proc/self/fd/N` or a host path. */
  readonly at: string
  readonly handle: fsp.FileHandle | undefined
  /** Its path inside this filesystem, `''` for the root. */
  readonly logical: string
}

/** Where a path led: the directory that holds its last component, and that component. */
export interface HostResolution {
  /** Undefined when the path is a directory reached as a whole (`/`, a trailing `..`). */
  readonly name: string | undefined
  /** The entry's lstat, when it exists. */
  readonly stats: NodeStats | undefined
  /** `dir/name` (or the directory itself when `name` is undefined): what to hand the system call. */
  readonly target: string
  /** The resolved path inside this filesystem. */
  readonly logical: string
  /** Closes the directories held open for the call. */
  close(): Promise<void>
}

/** How {@link HostWalker.resolve} treats the last component. */
export interface HostResolveOptions {
  readonly follow: boolean
  readonly allowMissing?: boolean
}

/**
 * Resolution inside a host directory with the shared resolver ({@link resolvePath}),
 * openat-style: each directory is opened with O_NOFOLLOW and the next name is looked up inside
 * that open directory (`/proc/self/fd/N/name` on Linux). A symlink is followed only while it
 * stays in the root (absolute targets must lie below the root's real path; `..` never climbs
 * above it); any other is EACCES. With `noFollow`, every link met is ELOOP.
 */
export class HostWalker {
  #realRoot: Promise<string> | undefined

  constructor(
    readonly root: string,
    readonly noFollow: boolean,
  ) {}

  #realRootPath(): Promise<string> {
    this.#realRoot ??= fsp.realpath(this.root)
    return this.#realRoot
  }

  /** Runs `fn` on where `path` leads; the directories held open are closed afterwards. */
  async at<T>(
    path: string,
    syscall: string,
    options: HostResolveOptions,
    fn: (r: HostResolution) => Promise<T>,
    dest?: string,
  ): Promise<T> {
    const r = await this.resolve(path, syscall, options)
    try {
      return await fn(r)
    } catch (error) {
      throw hostError(error, syscall, path, dest)
    } finally {
      await r.close()
    }
  }

  /** Resolves `path` from the root; the caller closes the result. */
  async resolve(
    path: string,
    syscall: string,
    options: HostResolveOptions,
  ): Promise<HostResolution> {
    const parsed = parsePath(path, syscall)
    const rootHandle = HAS_PROC_FD ? await openDir(this.root, syscall, path) : undefined
    const stack: DirRef[] = [
      {
        at: rootHandle ? `${PROC_FD}/${rootHandle.fd}` : this.root,
        handle: rootHandle,
        logical: '',
      },
    ]
    const close = async () => {
      for (const d of stack.splice(0)) await d.handle?.close().catch(() => undefined)
    }
    const outside = () =>
      fsError('EACCES', syscall, path, { hint: 'a symbolic link leads outside the host directory' })
    const steps: PathSteps<DirRef, NodeStats> = {
      root: async () => {
        while (stack.length > 1) await stack.pop()!.handle?.close()
        return stack[0]!
      },
      step: async (dir, names) => {
        const entry = await fsp.lstat(`${dir.at}/${names[0]}`).catch((error: unknown) => {
          if ((error as { code?: string }).code === 'ENOENT') return undefined
          throw hostError(error, syscall, path)
        })
        return { found: entry ? 1 : 0, entry, dir }
      },
      isDirectory: (entry) => entry.isDirectory(),
      isSymbolicLink: (entry) => entry.isSymbolicLink(),
      readlink: async (dir, name) => {
        if (this.noFollow)
          throw fsError('ELOOP', syscall, path, {
            hint: `${dir.logical}/${name} is a symbolic link, and this filesystem follows none`,
          })
        const target = await fsp.readlink(`${dir.at}/${name}`)
        if (!target.startsWith('/')) return target
        const real = await this.#realRootPath()
        if (target !== real && !target.startsWith(`${real}/`)) throw outside()
        return target.slice(real.length) || '/'
      },
      enter: async (dir, name) => {
        const at = `${dir.at}/${name}`
        const handle = HAS_PROC_FD ? await openDir(at, syscall, path) : undefined
        const ref = {
          at: handle ? `${PROC_FD}/${handle.fd}` : at,
          handle,
          logical: `${dir.logical}/${name}`,
        }
        stack.push(ref)
        return ref
      },
      parent: async (_dir, viaLink) => {
        // `..` of the path itself stays at the root (POSIX); a link's target never climbs above it.
        if (stack.length === 1) {
          if (viaLink) throw outside()
          return stack[0]!
        }
        await stack.pop()!.handle?.close()
        return stack.at(-1)!
      },
    }
    try {
      const r = await resolvePath(steps, parsed, {
        followLast: options.follow,
        syscall,
        allowMissing: options.allowMissing ?? false,
      })
      if (r.name === undefined) {
        // The directory itself (held open): `stat` through the descriptor, not the magic link.
        const stats = await fsp.stat(r.dir.at)
        return { name: undefined, stats, target: r.dir.at, logical: r.dir.logical || '/', close }
      }
      const target = `${r.dir.at}/${r.name}`
      return { name: r.name, stats: r.entry, target, logical: `${r.dir.logical}/${r.name}`, close }
    } catch (error) {
      await close()
      throw hostError(error, syscall, path)
    }
  }
}

/** Opens the entry `r` names without following a link (a swapped-in link is ELOOP). */
export function openAt(r: HostResolution, flags: number, mode?: number): Promise<fsp.FileHandle> {
  // A directory reached as a whole is named by its held descriptor: open through it.
  if (r.name === undefined) return fsp.open(r.target, flags & ~(O_CREAT | O_TRUNC), mode)
  return fsp.open(r.target, flags | O_NOFOLLOW, mode)
}

/** lstat of what `r` names (stat for a directory reached as a whole, named by descriptor). */
export function lstatAt(r: HostResolution): Promise<BigIntStats> {
  return r.name === undefined
    ? fsp.stat(r.target, { bigint: true })
    : fsp.lstat(r.target, { bigint: true })
}

/**
 * Node's handle as an {@link FsFileHandle}: its `stat()` answers as every one does (AgentFS
 * Stats, to the nanosecond) instead of with Node's Stats.
 */
export function asFsFileHandle(handle: fsp.FileHandle): FsFileHandle {
  const nodeStat = handle.stat.bind(handle)
  Object.defineProperty(handle, 'stat', {
    value: async () => statsFromNode(await nodeStat({ bigint: true })),
  })
  return handle as unknown as FsFileHandle
}
