import {
  type BigIntStats,
  constants,
  createReadStream,
  createWriteStream,
  type Dirent as NodeDirent,
} from 'node:fs'
import * as fsp from 'node:fs/promises'
import { join, relative, sep } from 'node:path'
import type { Readable, Writable } from 'node:stream'
import { FsError, joinPath, normalizePath, POSIX_ERRORS, type PosixCode } from '@agentfs/core'
import {
  type CpOptions,
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

/**
 * A host directory as a {@link FileSystem}: read-only unless `writable`. Paths are confined to
 * the root — `..` stops at it, and a symlink that leads outside it is refused with EACCES — and
 * errors name the path inside this filesystem, never the host path.
 */
export class HostFileSystem implements FileSystem {
  readonly root: string
  readonly writable: boolean

  constructor(options: HostFileSystemOptions) {
    this.root = options.root
    this.writable = options.writable ?? false
  }

  #host(path: string, syscall: string): string {
    const normal = normalizePath(path, syscall)
    return normal === '/' ? this.root : join(this.root, ...normal.slice(1).split('/'))
  }

  /** The host path, after checking that following links stays inside the root. */
  async #followed(path: string, syscall: string): Promise<string> {
    const host = this.#host(path, syscall)
    const real = await fsp
      .realpath(host)
      .catch((error: unknown) => this.#rethrow(error, syscall, path))
    const root = await fsp.realpath(this.root)
    if (real !== root && !real.startsWith(root + sep)) {
      throw new FsError({
        code: 'EACCES',
        syscall,
        path,
        hint: 'a symbolic link leads outside the host directory',
      })
    }
    return host
  }

  #rethrow(error: unknown, syscall: string, path: string, dest?: string): never {
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

  async #run<T>(syscall: string, path: string, fn: () => Promise<T>, dest?: string): Promise<T> {
    try {
      return await fn()
    } catch (error) {
      if (error instanceof FsError) throw error
      this.#rethrow(error, syscall, path, dest)
    }
  }

  readFile(path: string): Promise<Buffer>
  readFile(path: string, options: Encoding | { encoding: Encoding }): Promise<string>
  async readFile(
    path: string,
    options?: Encoding | { encoding?: Encoding },
  ): Promise<Buffer | string> {
    const host = await this.#followed(path, 'open')
    const encoding = typeof options === 'string' ? options : options?.encoding
    return this.#run<Buffer | string>('open', path, () =>
      encoding ? fsp.readFile(host, encoding) : fsp.readFile(host),
    )
  }

  async writeFile(
    path: string,
    data: WriteData,
    options?: WriteFileOptions | Encoding,
  ): Promise<void> {
    this.#mutable('open', path)
    const opts = writeFileOptions(options)
    await this.#run('open', path, () =>
      fsp.writeFile(this.#host(path, 'open'), data, {
        ...(opts.flag ? { flag: opts.flag } : {}),
        ...(opts.mode === undefined ? {} : { mode: opts.mode }),
        ...(opts.encoding ? { encoding: opts.encoding } : {}),
      }),
    )
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
    await this.#run('open', path, () => fsp.truncate(this.#host(path, 'open'), length))
  }

  async unlink(path: string): Promise<void> {
    this.#mutable('unlink', path)
    await this.#run('unlink', path, () => fsp.unlink(this.#host(path, 'unlink')))
  }

  async rename(from: string, to: string): Promise<void> {
    this.#mutable('rename', from)
    await this.#run(
      'rename',
      from,
      () => fsp.rename(this.#host(from, 'rename'), this.#host(to, 'rename')),
      to,
    )
  }

  async link(existing: string, newPath: string): Promise<void> {
    this.#mutable('link', existing)
    await this.#run(
      'link',
      existing,
      () => fsp.link(this.#host(existing, 'link'), this.#host(newPath, 'link')),
      newPath,
    )
  }

  async symlink(target: string, path: string): Promise<void> {
    this.#mutable('symlink', path)
    await this.#run('symlink', path, () => fsp.symlink(target, this.#host(path, 'symlink')))
  }

  async readlink(path: string): Promise<string> {
    return this.#run('readlink', path, () => fsp.readlink(this.#host(path, 'readlink')))
  }

  async realpath(path: string): Promise<string> {
    const host = await this.#followed(path, 'realpath')
    const real = await fsp.realpath(host)
    const rel = relative(await fsp.realpath(this.root), real)
    return rel === '' ? '/' : `/${rel.split(sep).join('/')}`
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
    const host = await this.#followed(path, 'access')
    if (!this.writable && mode & constants.W_OK)
      throw new FsError({ code: 'EROFS', syscall: 'access', path })
    await this.#run('access', path, () => fsp.access(host, mode))
  }

  async mkdir(path: string, options?: MkdirOptions | number): Promise<string | undefined> {
    this.#mutable('mkdir', path)
    const opts = typeof options === 'number' ? { mode: options } : (options ?? {})
    const made = await this.#run('mkdir', path, () => fsp.mkdir(this.#host(path, 'mkdir'), opts))
    if (made === undefined) return undefined
    const rel = relative(this.root, made)
    return `/${rel.split(sep).join('/')}`
  }

  async rmdir(path: string): Promise<void> {
    this.#mutable('rmdir', path)
    if (normalizePath(path) === '/') throw new FsError({ code: 'EPERM', syscall: 'rmdir', path })
    await this.#run('rmdir', path, () => fsp.rmdir(this.#host(path, 'rmdir')))
  }

  async rm(path: string, options: RmOptions = {}): Promise<void> {
    this.#mutable('rm', path)
    if (normalizePath(path) === '/') throw new FsError({ code: 'EPERM', syscall: 'rm', path })
    await this.#run('rm', path, () => fsp.rm(this.#host(path, 'rm'), options))
  }

  readdir(path: string): Promise<string[]>
  readdir(path: string, options: ReaddirOptions & { withFileTypes: true }): Promise<Dirent[]>
  readdir(path: string, options: ReaddirOptions): Promise<string[] | Dirent[]>
  async readdir(path: string, options: ReaddirOptions = {}): Promise<string[] | Dirent[]> {
    const base = normalizePath(path, 'scandir')
    const host = await this.#followed(path, 'scandir')
    const entries = await this.#run('scandir', path, () =>
      fsp.readdir(host, { withFileTypes: true, recursive: options.recursive ?? false }),
    )
    const items = (entries as NodeDirent[]).map((entry) => {
      const parentRel = relative(host, (entry as { parentPath?: string }).parentPath ?? host)
      const parent = parentRel === '' ? base : joinPath(base, parentRel.split(sep).join('/'))
      const mode = entry.isDirectory()
        ? 0o040000
        : entry.isSymbolicLink()
          ? 0o120000
          : entry.isFile()
            ? 0o100000
            : 0o010000
      return new Dirent(entry.name, parent, mode)
    })
    items.sort((a, b) => {
      const x = joinPath(a.parentPath, a.name)
      const y = joinPath(b.parentPath, b.name)
      return x < y ? -1 : x > y ? 1 : 0
    })
    if (options.withFileTypes) return items
    return items.map((d) => {
      const full = joinPath(d.parentPath, d.name)
      return base === '/' ? full.slice(1) : full.slice(base.length + 1)
    })
  }

  async stat(path: string): Promise<Stats> {
    const host = await this.#followed(path, 'stat')
    return statsFromNode(await this.#run('stat', path, () => fsp.stat(host, { bigint: true })))
  }

  async lstat(path: string): Promise<Stats> {
    return statsFromNode(
      await this.#run('lstat', path, () => fsp.lstat(this.#host(path, 'lstat'), { bigint: true })),
    )
  }

  async chmod(path: string, mode: number): Promise<void> {
    this.#mutable('chmod', path)
    await this.#run('chmod', path, async () => fsp.chmod(await this.#followed(path, 'chmod'), mode))
  }

  async chown(path: string, uid: number, gid: number): Promise<void> {
    this.#mutable('chown', path)
    await this.#run('chown', path, async () =>
      fsp.chown(await this.#followed(path, 'chown'), uid, gid),
    )
  }

  async lchown(path: string, uid: number, gid: number): Promise<void> {
    this.#mutable('lchown', path)
    await this.#run('lchown', path, () => fsp.lchown(this.#host(path, 'lchown'), uid, gid))
  }

  async utimes(path: string, atime: TimeLike, mtime: TimeLike): Promise<void> {
    this.#mutable('utime', path)
    await this.#run('utime', path, async () =>
      fsp.utimes(await this.#followed(path, 'utime'), atime, mtime),
    )
  }

  async lutimes(path: string, atime: TimeLike, mtime: TimeLike): Promise<void> {
    this.#mutable('lutime', path)
    await this.#run('lutime', path, () => fsp.lutimes(this.#host(path, 'lutime'), atime, mtime))
  }

  async copyFile(src: string, dest: string, mode = 0): Promise<void> {
    this.#mutable('copyfile', dest)
    const from = await this.#followed(src, 'copyfile')
    await this.#run(
      'copyfile',
      src,
      () => fsp.copyFile(from, this.#host(dest, 'copyfile'), mode),
      dest,
    )
  }

  async cp(src: string, dest: string, options: CpOptions = {}): Promise<void> {
    this.#mutable('cp', dest)
    await this.#run(
      'cp',
      src,
      () =>
        fsp.cp(this.#host(src, 'cp'), this.#host(dest, 'cp'), {
          ...options,
          verbatimSymlinks: true,
        }),
      dest,
    )
  }

  async mknod(path: string): Promise<void> {
    throw new FsError({ code: this.writable ? 'ENOSYS' : 'EROFS', syscall: 'mknod', path })
  }

  async statfs(path: string): Promise<StatFs> {
    const s = await this.#run('statfs', path, () => fsp.statfs(this.root))
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
    const readOnly = flags === 'r' || flags === constants.O_RDONLY
    if (!readOnly) this.#mutable('open', path)
    const host = readOnly ? await this.#followed(path, 'open') : this.#host(path, 'open')
    const handle = await this.#run('open', path, () => fsp.open(host, flags, mode))
    return handle as unknown as FsFileHandle
  }

  /** Lists the directory once, then iterates the listing. */
  async opendir(path: string): Promise<FsDir> {
    return openListedDir(this, path)
  }

  createReadStream(path: string, options: ReadStreamOptions = {}): Readable {
    return createReadStream(this.#host(path, 'open'), options)
  }

  createWriteStream(path: string, options: WriteStreamOptions = {}): Writable {
    this.#mutable('open', path)
    return createWriteStream(this.#host(path, 'open'), options as object)
  }

  glob(pattern: string, options?: GlobOptions): Promise<GlobMatch[]> {
    return walkGlob(this, pattern, options)
  }

  grep(pattern: string | RegExp, options?: GrepOptions): Promise<GrepMatch[]> {
    return walkGrep(this, pattern, options)
  }
}
