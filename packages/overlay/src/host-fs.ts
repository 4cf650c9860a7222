import { type BigIntStats, constants, existsSync, type Dirent as NodeDirent } from 'node:fs'
import * as fsp from 'node:fs/promises'
import { Readable, Writable } from 'node:stream'
import {
  badEntryName,
  FsError,
  fsError,
  isFsError,
  joinPath,
  normalizePath,
  POSIX_ERRORS,
  type PosixCode,
} from '@agentfs/core'
import {
  type CpOptions,
  compareCodePoints,
  copyTree,
  Dirent,
  type Encoding,
  type FileSystem,
  type FsDir,
  type FsFileHandle,
  type GlobMatch,
  type GlobOptions,
  type GrepMatch,
  type GrepOptions,
  type MkdirOptions,
  type ReaddirOptions,
  type ReadStreamOptions,
  type RmOptions,
  rmDirectoryError,
  type StatFs,
  Stats,
  type TimeLike,
  type WriteData,
  type WriteFileOptions,
  type WriteStreamOptions,
  writeFileOptions,
} from '@agentfs/fs'
import { openListedDir, walkGlob, walkGrep } from './generic-search.js'

/** Options of {@link HostFileSystem}. */
export interface HostFileSystemOptions {
  /** The host directory that is `/` of this filesystem. */
  readonly root: string
  /** Allow changes (default false: every mutation is EROFS). */
  readonly writable?: boolean
  /**
   * Refuse every symlink met while resolving a path (ELOOP), instead of following those that
   * stay inside the root. Writers that must never be redirected (an overlay commit) set it.
   */
  readonly noFollow?: boolean
}

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
const PROC_FD = '/proc/self/fd'
const HAS_PROC_FD = process.platform === 'linux' && existsSync(PROC_FD)
const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_DIRECTORY, O_NOFOLLOW } =
  constants
const O_NONBLOCK = constants.O_NONBLOCK ?? 0
/** Links followed while resolving one path (Linux's limit). */
const MAX_HOPS = 40
/** Deepest directory nesting walked by `rm -r` and recursive `readdir`. */
const MAX_DEPTH = 2048

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

function numericFlags(flags: string | number, syscall: string, path: string): number {
  if (typeof flags === 'number') return flags
  const value = FLAGS[flags]
  if (value === undefined)
    throw new FsError({ code: 'EINVAL', syscall, path, hint: `unknown flags ${flags}` })
  return value
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
interface Resolution {
  readonly dir: DirRef
  /** Undefined when the path is a directory reached as a whole (`/`, a trailing `..`). */
  readonly name: string | undefined
  /** The entry's lstat, when it exists. */
  readonly stats: import('node:fs').Stats | undefined
  /** `dir.at/name` (or `dir.at` when `name` is undefined): what to hand the system call. */
  readonly target: string
  /** The resolved path inside this filesystem. */
  readonly logical: string
  close(): Promise<void>
}

/**
 * A host directory as a {@link FileSystem}: read-only unless `writable`. Every path is resolved
 * here, one component at a time, openat-style: each directory is opened with O_NOFOLLOW and
 * the next name is looked up inside that open directory (`/proc/self/fd/N/name` on Linux), and
 * the last component is opened with O_NOFOLLOW. A symlink is followed only while it stays in
 * the root (absolute targets must lie below the root's real path; `..` never climbs above it);
 * any other is EACCES. A link swapped in mid-walk makes the call fail, never land outside.
 * Reads and writes alike; errors name the path inside this filesystem, never the host path.
 */
export class HostFileSystem implements FileSystem {
  readonly root: string
  readonly writable: boolean
  readonly noFollow: boolean
  #realRoot: Promise<string> | undefined

  constructor(options: HostFileSystemOptions) {
    if (typeof options !== 'object' || options === null || typeof options.root !== 'string')
      throw new TypeError(
        `HostFileSystem takes { root: string, writable?: boolean }, got ${typeof options === 'string' ? `the string ${JSON.stringify(options)}: write new HostFileSystem({ root: ${JSON.stringify(options)} })` : String(options)}`,
      )
    this.root = options.root
    this.writable = options.writable ?? false
    this.noFollow = options.noFollow ?? false
  }

  #rethrow(error: unknown, syscall: string, path: string, dest?: string): never {
    if (isFsError(error)) throw error
    const code = (error as { code?: string }).code
    const known = code !== undefined && code in POSIX_ERRORS
    throw new FsError({
      code: known ? (code as PosixCode) : 'EIO',
      syscall: (error as { syscall?: string }).syscall ?? syscall,
      path,
      ...(dest === undefined ? {} : { dest }),
      ...(known ? {} : { hint: String((error as Error).message ?? error) }),
      cause: error,
    })
  }

  #mutable(syscall: string, path: string): void {
    if (!this.writable)
      throw new FsError({ code: 'EROFS', syscall, path, hint: 'the base directory is read-only' })
  }

  async #openDir(at: string, syscall: string, path: string): Promise<fsp.FileHandle> {
    try {
      return await fsp.open(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
    } catch (error) {
      // A directory replaced by a link (or anything else) between two steps.
      const code = (error as { code?: string }).code
      if (code === 'ELOOP' || code === 'ENOTDIR')
        throw fsError('EACCES', syscall, path, {
          hint: 'a directory on the path was replaced by a link or a file while it was resolved',
        })
      this.#rethrow(error, syscall, path)
    }
  }

  async #dir(handle: fsp.FileHandle | undefined, hostPath: string, logical: string) {
    return { at: handle ? `${PROC_FD}/${handle.fd}` : hostPath, handle, logical }
  }

  /**
   * Resolves `path` from the root, component by component (see the class comment). `follow`
   * follows a link in the last component; `allowMissing` lets the last component be absent.
   */
  async #resolve(
    path: string,
    syscall: string,
    options: { follow: boolean; allowMissing?: boolean },
  ): Promise<Resolution> {
    const normal = normalizePath(path, syscall)
    const queue = normal === '/' ? [] : normal.slice(1).split('/')
    const root = HAS_PROC_FD ? await this.#openDir(this.root, syscall, path) : undefined
    const stack: DirRef[] = [await this.#dir(root, this.root, '')]
    const close = async () => {
      for (const d of stack.splice(0)) await d.handle?.close().catch(() => undefined)
    }
    const outside = () =>
      fsError('EACCES', syscall, path, { hint: 'a symbolic link leads outside the host directory' })
    let hops = 0
    try {
      while (queue.length > 0) {
        const name = queue.shift()!
        if (name === '' || name === '.') continue
        if (name === '..') {
          // Only a link's target can hold `..` here (the input is normalized): never above the root.
          if (stack.length === 1) throw outside()
          await stack.pop()!.handle?.close()
          continue
        }
        const top = stack.at(-1)!
        const at = `${top.at}/${name}`
        const stats = await fsp.lstat(at).catch((error: unknown) => {
          if ((error as { code?: string }).code === 'ENOENT') return undefined
          return this.#rethrow(error, syscall, path)
        })
        const last = queue.length === 0
        const logical = `${top.logical}/${name}`
        if (!stats) {
          if (last && options.allowMissing)
            return { dir: top, name, stats: undefined, target: at, logical, close }
          throw fsError('ENOENT', syscall, path)
        }
        if (stats.isSymbolicLink() && (!last || options.follow)) {
          if (this.noFollow)
            throw fsError('ELOOP', syscall, path, {
              hint: `${logical} is a symbolic link, and this filesystem follows none`,
            })
          if (++hops > MAX_HOPS) throw fsError('ELOOP', syscall, path)
          const target = await fsp.readlink(at)
          if (target.startsWith('/')) {
            const real = await this.#realRootPath()
            if (target !== real && !target.startsWith(`${real}/`)) throw outside()
            while (stack.length > 1) await stack.pop()!.handle?.close()
            queue.unshift(...target.slice(real.length).split('/'))
          } else queue.unshift(...target.split('/'))
          continue
        }
        if (last) return { dir: top, name, stats, target: at, logical, close }
        if (!stats.isDirectory()) throw fsError('ENOTDIR', syscall, path)
        const handle = HAS_PROC_FD ? await this.#openDir(at, syscall, path) : undefined
        stack.push(await this.#dir(handle, at, logical))
      }
      const top = stack.at(-1)!
      // The directory itself (held open): `stat` through the descriptor, not the magic link.
      const stats = await fsp.stat(top.at)
      return {
        dir: top,
        name: undefined,
        stats,
        target: top.at,
        logical: top.logical || '/',
        close,
      }
    } catch (error) {
      await close()
      this.#rethrow(error, syscall, path)
    }
  }

  #realRootPath(): Promise<string> {
    this.#realRoot ??= fsp.realpath(this.root)
    return this.#realRoot
  }

  /** Runs `fn` on where `path` leads; the directories held open are closed afterwards. */
  async #at<T>(
    path: string,
    syscall: string,
    options: { follow: boolean; allowMissing?: boolean },
    fn: (r: Resolution) => Promise<T>,
    dest?: string,
  ): Promise<T> {
    const r = await this.#resolve(path, syscall, options)
    try {
      return await fn(r)
    } catch (error) {
      this.#rethrow(error, syscall, path, dest)
    } finally {
      await r.close()
    }
  }

  /** Opens the entry `r` names without following a link (a swapped-in link is ELOOP). */
  async #openAt(r: Resolution, flags: number, mode?: number): Promise<fsp.FileHandle> {
    // A directory reached as a whole is named by its held descriptor: open through it.
    if (r.name === undefined) return fsp.open(r.target, flags & ~(O_CREAT | O_TRUNC), mode)
    return fsp.open(r.target, flags | O_NOFOLLOW, mode)
  }

  /** lstat of what `r` names (stat for a directory reached as a whole, named by descriptor). */
  #lstat(r: Resolution) {
    return r.name === undefined
      ? fsp.stat(r.target, { bigint: true })
      : fsp.lstat(r.target, { bigint: true })
  }

  readFile(path: string): Promise<Buffer>
  readFile(path: string, options: Encoding | { encoding: Encoding }): Promise<string>
  async readFile(
    path: string,
    options?: Encoding | { encoding?: Encoding },
  ): Promise<Buffer | string> {
    const encoding = typeof options === 'string' ? options : options?.encoding
    return this.#at(path, 'open', { follow: true }, async (r) => {
      const handle = await this.#openAt(r, O_RDONLY)
      try {
        return encoding ? await handle.readFile(encoding) : await handle.readFile()
      } finally {
        await handle.close()
      }
    })
  }

  async writeFile(
    path: string,
    data: WriteData,
    options?: WriteFileOptions | Encoding,
  ): Promise<void> {
    this.#mutable('open', path)
    const opts = writeFileOptions(options)
    const flags = numericFlags(opts.flag ?? 'w', 'open', path)
    await this.#at(path, 'open', { follow: true, allowMissing: true }, async (r) => {
      const handle = await this.#openAt(r, flags, opts.mode ?? 0o666)
      try {
        await handle.writeFile(data, opts.encoding ? { encoding: opts.encoding } : {})
      } finally {
        await handle.close()
      }
    })
  }

  async appendFile(
    path: string,
    data: WriteData,
    options?: WriteFileOptions | Encoding,
  ): Promise<void> {
    const opts = writeFileOptions(options)
    await this.writeFile(path, data, { ...opts, flag: 'a' })
  }

  async truncate(path: string, length = 0): Promise<void> {
    this.#mutable('open', path)
    await this.#at(path, 'open', { follow: true }, async (r) => {
      const handle = await this.#openAt(r, O_WRONLY)
      try {
        await handle.truncate(length)
      } finally {
        await handle.close()
      }
    })
  }

  async unlink(path: string): Promise<void> {
    this.#mutable('unlink', path)
    await this.#at(path, 'unlink', { follow: false }, (r) => fsp.unlink(r.target))
  }

  /** Two paths resolved together (rename, link); both held open for the call. */
  async #two<T>(
    from: string,
    to: string,
    syscall: string,
    fn: (a: Resolution, b: Resolution) => Promise<T>,
  ): Promise<T> {
    return this.#at(from, syscall, { follow: false }, (a) =>
      this.#at(to, syscall, { follow: false, allowMissing: true }, (b) => fn(a, b), to),
    )
  }

  async rename(from: string, to: string): Promise<void> {
    this.#mutable('rename', from)
    await this.#two(from, to, 'rename', (a, b) => fsp.rename(a.target, b.target))
  }

  async link(existing: string, newPath: string): Promise<void> {
    this.#mutable('link', existing)
    await this.#two(existing, newPath, 'link', (a, b) => fsp.link(a.target, b.target))
  }

  async symlink(target: string, path: string): Promise<void> {
    this.#mutable('symlink', path)
    await this.#at(path, 'symlink', { follow: false, allowMissing: true }, (r) =>
      fsp.symlink(target, r.target),
    )
  }

  async readlink(path: string): Promise<string> {
    return this.#at(path, 'readlink', { follow: false }, (r) => fsp.readlink(r.target))
  }

  async realpath(path: string): Promise<string> {
    return this.#at(path, 'realpath', { follow: true }, async (r) => r.logical)
  }

  async exists(path: string): Promise<boolean> {
    try {
      await this.stat(path)
      return true
    } catch {
      return false
    }
  }

  async access(path: string, mode = 0): Promise<void> {
    if (!this.writable && mode & constants.W_OK)
      throw new FsError({ code: 'EROFS', syscall: 'access', path })
    await this.#at(path, 'access', { follow: true }, (r) => fsp.access(r.target, mode))
  }

  async mkdir(path: string, options?: MkdirOptions | number): Promise<string | undefined> {
    this.#mutable('mkdir', path)
    const opts = typeof options === 'number' ? { mode: options } : (options ?? {})
    const mode = opts.mode ?? 0o777
    if (!opts.recursive) {
      await this.#at(path, 'mkdir', { follow: false, allowMissing: true }, async (r) => {
        if (r.stats) throw fsError('EEXIST', 'mkdir', path)
        await fsp.mkdir(r.target, { mode })
      })
      return undefined
    }
    const normal = normalizePath(path, 'mkdir')
    const parts = normal === '/' ? [] : normal.slice(1).split('/')
    let first: string | undefined
    for (let i = 1; i <= parts.length; i++) {
      const prefix = `/${parts.slice(0, i).join('/')}`
      await this.#at(prefix, 'mkdir', { follow: true, allowMissing: true }, async (r) => {
        if (r.stats) {
          if (!r.stats.isDirectory())
            throw fsError(i === parts.length ? 'EEXIST' : 'ENOTDIR', 'mkdir', path)
          return
        }
        await fsp.mkdir(r.target, { mode })
        first ??= prefix
      })
    }
    return first
  }

  async rmdir(path: string): Promise<void> {
    this.#mutable('rmdir', path)
    if (normalizePath(path) === '/') throw new FsError({ code: 'EPERM', syscall: 'rmdir', path })
    await this.#at(path, 'rmdir', { follow: false }, (r) => fsp.rmdir(r.target))
  }

  async rm(path: string, options: RmOptions = {}): Promise<void> {
    this.#mutable('rm', path)
    if (normalizePath(path) === '/') throw new FsError({ code: 'EPERM', syscall: 'rm', path })
    let r: Resolution
    try {
      r = await this.#resolve(path, 'rm', { follow: false })
    } catch (error) {
      if (options.force && (error as { code?: string }).code === 'ENOENT') return
      throw error
    }
    try {
      if (!r.stats?.isDirectory()) return await fsp.unlink(r.target)
      if (!options.recursive) throw rmDirectoryError(path)
      await this.#removeTree(r.target, path, 0)
    } catch (error) {
      this.#rethrow(error, 'rm', path)
    } finally {
      await r.close()
    }
  }

  /** Empties and removes the directory at `at`, never following a link inside it. */
  async #removeTree(at: string, path: string, depth: number): Promise<void> {
    if (depth > MAX_DEPTH) throw fsError('ELOOP', 'rm', path)
    const handle = HAS_PROC_FD ? await this.#openDir(at, 'rm', path) : undefined
    const dir = handle ? `${PROC_FD}/${handle.fd}` : at
    try {
      for (const entry of await fsp.readdir(dir, { withFileTypes: true })) {
        const child = `${dir}/${entry.name}`
        if (entry.isDirectory()) await this.#removeTree(child, path, depth + 1)
        else await fsp.unlink(child)
      }
    } finally {
      await handle?.close()
    }
    await fsp.rmdir(at)
  }

  readdir(path: string): Promise<string[]>
  readdir(path: string, options: ReaddirOptions & { withFileTypes: true }): Promise<Dirent[]>
  readdir(path: string, options: ReaddirOptions): Promise<string[] | Dirent[]>
  async readdir(path: string, options: ReaddirOptions = {}): Promise<string[] | Dirent[]> {
    const base = normalizePath(path, 'scandir')
    const items: Dirent[] = []
    await this.#at(path, 'scandir', { follow: true }, async (r) => {
      if (r.stats && !r.stats.isDirectory()) throw fsError('ENOTDIR', 'scandir', path)
      await this.#list(r.target, base, options.recursive === true, items, path, 0, !r.name)
    })
    items.sort((a, b) =>
      compareCodePoints(joinPath(a.parentPath, a.name), joinPath(b.parentPath, b.name)),
    )
    if (options.withFileTypes) return items
    return items.map((d) => {
      const full = joinPath(d.parentPath, d.name)
      return base === '/' ? full.slice(1) : full.slice(base.length + 1)
    })
  }

  /** Lists the directory at `at` (inside this filesystem: `logical`), descending without links. */
  async #list(
    at: string,
    logical: string,
    recursive: boolean,
    out: Dirent[],
    path: string,
    depth: number,
    held = false,
  ): Promise<void> {
    if (depth > MAX_DEPTH) throw fsError('ELOOP', 'scandir', path)
    // `held`: `at` already names a descriptor this call holds open.
    const handle = HAS_PROC_FD && !held ? await this.#openDir(at, 'scandir', path) : undefined
    const dir = handle ? `${PROC_FD}/${handle.fd}` : at
    try {
      const entries = (await fsp.readdir(dir, { withFileTypes: true })) as NodeDirent[]
      for (const entry of entries) {
        if (badEntryName(entry.name) !== undefined) continue
        out.push(new Dirent(entry.name, logical, modeOf(entry)))
        if (recursive && entry.isDirectory())
          await this.#list(
            `${dir}/${entry.name}`,
            joinPath(logical, entry.name),
            true,
            out,
            path,
            depth + 1,
          )
      }
    } finally {
      await handle?.close()
    }
  }

  async stat(path: string): Promise<Stats> {
    return this.#at(path, 'stat', { follow: true }, async (r) =>
      statsFromNode(await this.#lstat(r)),
    )
  }

  async lstat(path: string): Promise<Stats> {
    return this.#at(path, 'lstat', { follow: false }, async (r) =>
      statsFromNode(await this.#lstat(r)),
    )
  }

  /** Runs `fn` on the entry opened without following links (metadata changes by descriptor). */
  async #byHandle(
    path: string,
    syscall: string,
    fn: (handle: fsp.FileHandle) => Promise<void>,
  ): Promise<void> {
    this.#mutable(syscall, path)
    await this.#at(path, syscall, { follow: true }, async (r) => {
      const handle = await this.#openAt(r, O_RDONLY | O_NONBLOCK)
      try {
        await fn(handle)
      } finally {
        await handle.close()
      }
    })
  }

  async chmod(path: string, mode: number): Promise<void> {
    await this.#byHandle(path, 'chmod', (h) => h.chmod(mode))
  }

  async chown(path: string, uid: number, gid: number): Promise<void> {
    await this.#byHandle(path, 'chown', (h) => h.chown(uid, gid))
  }

  async lchown(path: string, uid: number, gid: number): Promise<void> {
    this.#mutable('lchown', path)
    await this.#at(path, 'lchown', { follow: false }, (r) => fsp.lchown(r.target, uid, gid))
  }

  async utimes(path: string, atime: TimeLike, mtime: TimeLike): Promise<void> {
    await this.#byHandle(path, 'utime', (h) => h.utimes(atime, mtime))
  }

  async lutimes(path: string, atime: TimeLike, mtime: TimeLike): Promise<void> {
    this.#mutable('lutime', path)
    await this.#at(path, 'lutime', { follow: false }, (r) => fsp.lutimes(r.target, atime, mtime))
  }

  async copyFile(src: string, dest: string, mode = 0): Promise<void> {
    this.#mutable('copyfile', dest)
    await this.#at(
      src,
      'copyfile',
      { follow: true },
      async (a) => {
        if (a.stats?.isDirectory()) throw fsError('EISDIR', 'copyfile', src)
        const input = await this.#openAt(a, O_RDONLY)
        try {
          const perm = (await input.stat()).mode & 0o7777
          const exclusive = mode & constants.COPYFILE_EXCL ? O_EXCL : 0
          await this.#at(dest, 'copyfile', { follow: true, allowMissing: true }, async (b) => {
            const output = await this.#openAt(b, O_WRONLY | O_CREAT | O_TRUNC | exclusive, perm)
            try {
              const buffer = Buffer.allocUnsafe(1 << 16)
              for (;;) {
                const { bytesRead } = await input.read(buffer, 0, buffer.length, null)
                if (bytesRead === 0) break
                await output.write(buffer, 0, bytesRead)
              }
            } finally {
              await output.close()
            }
          })
        } finally {
          await input.close()
        }
      },
      dest,
    )
  }

  async cp(src: string, dest: string, options: CpOptions = {}): Promise<void> {
    this.#mutable('cp', dest)
    await copyTree(this, src, dest, options)
  }

  async mknod(path: string): Promise<void> {
    throw new FsError({ code: this.writable ? 'ENOSYS' : 'EROFS', syscall: 'mknod', path })
  }

  async statfs(path: string): Promise<StatFs> {
    let s: import('node:fs').StatsFs
    try {
      s = await fsp.statfs(this.root)
    } catch (error) {
      this.#rethrow(error, 'statfs', path)
    }
    return {
      type: s.type,
      bsize: s.bsize,
      blocks: s.blocks,
      bfree: s.bfree,
      bavail: s.bavail,
      files: s.files,
      ffree: s.ffree,
    }
  }

  async open(path: string, flags: string | number = 'r', mode = 0o666): Promise<FsFileHandle> {
    const numeric = numericFlags(flags, 'open', path)
    const readOnly = (numeric & 3) === O_RDONLY && !(numeric & (O_CREAT | O_TRUNC | O_APPEND))
    if (!readOnly) this.#mutable('open', path)
    const handle = await this.#at(
      path,
      'open',
      { follow: true, allowMissing: (numeric & O_CREAT) !== 0 },
      (r) => this.#openAt(r, numeric, mode),
    )
    return handle as unknown as FsFileHandle
  }

  /** Lists the directory once, then iterates the listing. */
  async opendir(path: string): Promise<FsDir> {
    return openListedDir(this, path)
  }

  /** A readable stream of the file; it is opened (safely, as `open`) when first read. */
  createReadStream(path: string, options: ReadStreamOptions = {}): Readable {
    let handle: fsp.FileHandle | undefined
    let position = options.start ?? 0
    const end = options.end ?? Number.POSITIVE_INFINITY
    const size = options.highWaterMark ?? 1 << 16
    const stream = new Readable({
      highWaterMark: size,
      construct: (callback) => {
        this.open(path, 'r').then(
          (h) => {
            handle = h as unknown as fsp.FileHandle
            callback()
          },
          (error: Error) => callback(error),
        )
      },
      read: () => {
        const want = Math.min(size, end - position + 1)
        if (want <= 0 || !handle) return void stream.push(null)
        handle.read(Buffer.allocUnsafe(want), 0, want, position).then(
          ({ bytesRead, buffer }) => {
            position += bytesRead
            stream.push(bytesRead === 0 ? null : buffer.subarray(0, bytesRead))
          },
          (error: unknown) => stream.destroy(toFsError(error, 'read', path)),
        )
      },
      destroy: (error, callback) => {
        const done = () => callback(error)
        if (handle) handle.close().then(done, done)
        else done()
      },
    })
    if (options.encoding) stream.setEncoding(options.encoding)
    return stream
  }

  /**
   * A writable stream into the file, opened (safely, as `open`) before the first write; its
   * `finish` comes after the file is closed, so the bytes are in the file by then.
   */
  createWriteStream(path: string, options: WriteStreamOptions = {}): Writable {
    this.#mutable('open', path)
    let handle: fsp.FileHandle | undefined
    let position: number | null = options.start ?? null
    return new Writable({
      ...(options.highWaterMark === undefined ? {} : { highWaterMark: options.highWaterMark }),
      construct: (callback) => {
        this.open(path, options.flags ?? 'w', options.mode ?? 0o666).then(
          (h) => {
            handle = h as unknown as fsp.FileHandle
            callback()
          },
          (error: Error) => callback(error),
        )
      },
      write: (chunk: Buffer, _encoding, callback) => {
        handle!.write(chunk, 0, chunk.length, position).then(
          ({ bytesWritten }) => {
            if (position !== null) position += bytesWritten
            callback()
          },
          (error: unknown) => callback(toFsError(error, 'write', path)),
        )
      },
      final: (callback) => {
        const h = handle
        handle = undefined
        if (!h) return callback()
        h.close().then(
          () => callback(),
          (error: unknown) => callback(toFsError(error, 'close', path)),
        )
      },
      destroy: (error, callback) => {
        const done = () => callback(error)
        if (handle) handle.close().then(done, done)
        else done()
      },
    })
  }

  glob(pattern: string, options?: GlobOptions): Promise<GlobMatch[]> {
    return walkGlob(this, pattern, options)
  }

  grep(pattern: string | RegExp, options?: GrepOptions): Promise<GrepMatch[]> {
    return walkGrep(this, pattern, options)
  }
}

function toFsError(error: unknown, syscall: string, path: string): Error {
  if (isFsError(error)) return error
  const code = (error as { code?: string }).code
  if (code !== undefined && code in POSIX_ERRORS)
    return new FsError({ code: code as PosixCode, syscall, path, cause: error })
  return error as Error
}

const modeOf = (entry: NodeDirent): number =>
  entry.isDirectory()
    ? 0o040000
    : entry.isSymbolicLink()
      ? 0o120000
      : entry.isFile()
        ? 0o100000
        : 0o010000
