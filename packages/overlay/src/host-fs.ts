import { constants } from 'node:fs'
import * as fsp from 'node:fs/promises'
import type { Readable, Writable } from 'node:stream'
import { FsError, fsError, joinPath, normalizePath, twoPathErrors } from '@agentfs/core'
import {
  type CpOptions,
  compareCodePoints,
  copyTree,
  type Dirent,
  type Encoding,
  type FileSystem,
  type FsDir,
  type FsFileHandle,
  type GlobMatch,
  type GlobOptions,
  type GrepMatch,
  type GrepOptions,
  type MkdirOptions,
  mkdirOptions,
  type ReaddirOptions,
  type ReadStreamOptions,
  type RmOptions,
  rmDirectoryError,
  type StatFs,
  type Stats,
  type TimeLike,
  type WriteData,
  type WriteFileOptions,
  type WriteStreamOptions,
  writeFileOptions,
} from '@agentfs/fs'
import { openListedDir, walkGlob, walkGrep } from './generic-search.js'
import { copyHostFile, listTree, mkdirp, removeTree } from './host-tree.js'
import {
  asFsFileHandle,
  type HostResolution,
  HostWalker,
  hostError,
  lstatAt,
  numericFlags,
  O_APPEND,
  O_CREAT,
  O_NONBLOCK,
  O_RDONLY,
  O_TRUNC,
  O_WRONLY,
  openAt,
  statsFromNode,
} from './host-walk.js'
import { readStream, writeStream } from './streams.js'

export { statsFromNode }

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

/**
 * A host directory as a {@link FileSystem}: read-only unless `writable`. Every path is resolved
 * by {@link HostWalker} (the shared resolver), one component at a time, openat-style: each directory is opened with O_NOFOLLOW and
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
  readonly #walker: HostWalker

  constructor(options: HostFileSystemOptions) {
    if (typeof options !== 'object' || options === null || typeof options.root !== 'string')
      throw new TypeError(
        `HostFileSystem takes { root: string, writable?: boolean }, got ${typeof options === 'string' ? `the string ${JSON.stringify(options)}: write new HostFileSystem({ root: ${JSON.stringify(options)} })` : String(options)}`,
      )
    this.root = options.root
    this.writable = options.writable ?? false
    this.noFollow = options.noFollow ?? false
    this.#walker = new HostWalker(this.root, this.noFollow)
  }

  #mutable(syscall: string, path: string): void {
    if (!this.writable)
      throw new FsError({ code: 'EROFS', syscall, path, hint: 'the base directory is read-only' })
  }

  readFile(path: string): Promise<Buffer>
  readFile(path: string, options: Encoding | { encoding: Encoding }): Promise<string>
  async readFile(
    path: string,
    options?: Encoding | { encoding?: Encoding },
  ): Promise<Buffer | string> {
    const encoding = typeof options === 'string' ? options : options?.encoding
    return this.#walker.at(path, 'open', { follow: true }, async (r) => {
      const handle = await openAt(r, O_RDONLY)
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
    if (opts.idempotencyKey !== undefined)
      throw fsError('EINVAL', 'open', path, {
        hint: 'idempotencyKey needs a database filesystem (a host directory cannot record the key with the write)',
      })
    const flags = numericFlags(opts.flag ?? 'w', 'open', path)
    await this.#walker.at(path, 'open', { follow: true, allowMissing: true }, async (r) => {
      const handle = await openAt(r, flags, opts.mode ?? 0o666)
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
    await this.#walker.at(path, 'open', { follow: true }, async (r) => {
      const handle = await openAt(r, O_WRONLY)
      try {
        await handle.truncate(length)
      } finally {
        await handle.close()
      }
    })
  }

  async unlink(path: string): Promise<void> {
    this.#mutable('unlink', path)
    await this.#walker.at(path, 'unlink', { follow: false }, (r) => fsp.unlink(r.target))
  }

  /** Two paths resolved together (rename, link); both held open for the call. */
  async #two<T>(
    from: string,
    to: string,
    syscall: string,
    fn: (a: HostResolution, b: HostResolution) => Promise<T>,
  ): Promise<T> {
    const { wrap } = twoPathErrors(syscall, from, to)
    return wrap(
      this.#walker.at(from, syscall, { follow: false }, (a) =>
        this.#walker.at(to, syscall, { follow: false, allowMissing: true }, (b) => fn(a, b), to),
      ),
    )
  }

  async rename(from: string, to: string): Promise<void> {
    this.#mutable('rename', from)
    await this.#two(from, to, 'rename', async (a, b) => {
      // A directory reached as a whole (the root, or one named by `..`) is held by descriptor.
      if (a.name === undefined || b.name === undefined)
        throw new FsError({ code: 'EBUSY', syscall: 'rename', path: from, dest: to })
      await fsp.rename(a.target, b.target)
    })
  }

  async link(existing: string, newPath: string): Promise<void> {
    this.#mutable('link', existing)
    await this.#two(existing, newPath, 'link', (a, b) => fsp.link(a.target, b.target))
  }

  async symlink(target: string, path: string): Promise<void> {
    this.#mutable('symlink', path)
    await this.#walker.at(path, 'symlink', { follow: false, allowMissing: true }, (r) =>
      fsp.symlink(target, r.target),
    )
  }

  async readlink(path: string): Promise<string> {
    return this.#walker.at(path, 'readlink', { follow: false }, (r) => fsp.readlink(r.target))
  }

  async realpath(path: string): Promise<string> {
    return this.#walker.at(path, 'realpath', { follow: true }, async (r) => r.logical)
  }

  async exists(path: string): Promise<boolean> {
    return this.stat(path).then(
      () => true,
      () => false,
    )
  }

  async access(path: string, mode = 0): Promise<void> {
    if (!this.writable && mode & constants.W_OK)
      throw new FsError({ code: 'EROFS', syscall: 'access', path })
    await this.#walker.at(path, 'access', { follow: true }, (r) => fsp.access(r.target, mode))
  }

  async mkdir(path: string, options?: MkdirOptions | number): Promise<string | undefined> {
    this.#mutable('mkdir', path)
    const opts = mkdirOptions(options, path)
    const mode = opts.mode ?? 0o777
    if (!opts.recursive) {
      await this.#walker.at(path, 'mkdir', { follow: false, allowMissing: true }, async (r) => {
        if (r.stats) throw fsError('EEXIST', 'mkdir', path)
        await fsp.mkdir(r.target, { mode })
      })
      return undefined
    }
    return mkdirp(this.#walker, path, mode)
  }

  async rmdir(path: string): Promise<void> {
    this.#mutable('rmdir', path)
    if (normalizePath(path) === '/') throw new FsError({ code: 'EPERM', syscall: 'rmdir', path })
    await this.#walker.at(path, 'rmdir', { follow: false }, (r) => fsp.rmdir(r.target))
  }

  async rm(path: string, options: RmOptions = {}): Promise<void> {
    this.#mutable('rm', path)
    if (normalizePath(path) === '/') throw new FsError({ code: 'EPERM', syscall: 'rm', path })
    let r: HostResolution
    try {
      r = await this.#walker.resolve(path, 'rm', { follow: false })
    } catch (error) {
      if (options.force && (error as { code?: string }).code === 'ENOENT') return
      throw error
    }
    try {
      if (!r.stats?.isDirectory()) return await fsp.unlink(r.target)
      if (!options.recursive) throw rmDirectoryError(path)
      await removeTree(r.target, path)
    } catch (error) {
      throw hostError(error, 'rm', path)
    } finally {
      await r.close()
    }
  }

  readdir(path: string): Promise<string[]>
  readdir(path: string, options: ReaddirOptions & { withFileTypes: true }): Promise<Dirent[]>
  readdir(path: string, options: ReaddirOptions): Promise<string[] | Dirent[]>
  async readdir(path: string, options: ReaddirOptions = {}): Promise<string[] | Dirent[]> {
    const base = normalizePath(path, 'scandir')
    const items: Dirent[] = []
    await this.#walker.at(path, 'scandir', { follow: true }, async (r) => {
      if (r.stats && !r.stats.isDirectory()) throw fsError('ENOTDIR', 'scandir', path)
      await listTree(r.target, base, options.recursive === true, items, path, 0, !r.name)
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

  async stat(path: string): Promise<Stats> {
    return this.#walker.at(path, 'stat', { follow: true }, async (r) =>
      statsFromNode(await lstatAt(r)),
    )
  }

  async lstat(path: string): Promise<Stats> {
    return this.#walker.at(path, 'lstat', { follow: false }, async (r) =>
      statsFromNode(await lstatAt(r)),
    )
  }

  /** Runs `fn` on the entry opened without following links (metadata changes by descriptor). */
  async #byHandle(
    path: string,
    syscall: string,
    fn: (handle: fsp.FileHandle) => Promise<void>,
  ): Promise<void> {
    this.#mutable(syscall, path)
    await this.#walker.at(path, syscall, { follow: true }, async (r) => {
      const handle = await openAt(r, O_RDONLY | O_NONBLOCK)
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
    await this.#walker.at(path, 'lchown', { follow: false }, (r) => fsp.lchown(r.target, uid, gid))
  }

  async utimes(path: string, atime: TimeLike, mtime: TimeLike): Promise<void> {
    await this.#byHandle(path, 'utime', (h) => h.utimes(atime, mtime))
  }

  async lutimes(path: string, atime: TimeLike, mtime: TimeLike): Promise<void> {
    this.#mutable('lutime', path)
    await this.#walker.at(path, 'lutime', { follow: false }, (r) =>
      fsp.lutimes(r.target, atime, mtime),
    )
  }

  async copyFile(src: string, dest: string, mode = 0): Promise<void> {
    this.#mutable('copyfile', dest)
    await copyHostFile(this.#walker, src, dest, mode)
  }

  async cp(src: string, dest: string, options: CpOptions = {}): Promise<void> {
    this.#mutable('cp', dest)
    await copyTree(this, src, dest, options)
  }

  async mknod(path: string): Promise<void> {
    throw new FsError({ code: this.writable ? 'ENOSYS' : 'EROFS', syscall: 'mknod', path })
  }

  async statfs(path: string): Promise<StatFs> {
    const s = await fsp.statfs(this.root).catch((error: unknown) => {
      throw hostError(error, 'statfs', path)
    })
    const { type, bsize, blocks, bfree, bavail, files, ffree } = s
    return { type, bsize, blocks, bfree, bavail, files, ffree }
  }

  async open(path: string, flags: string | number = 'r', mode = 0o666): Promise<FsFileHandle> {
    const numeric = numericFlags(flags, 'open', path)
    const readOnly = (numeric & 3) === O_RDONLY && !(numeric & (O_CREAT | O_TRUNC | O_APPEND))
    if (!readOnly) this.#mutable('open', path)
    const handle = await this.#walker.at(
      path,
      'open',
      { follow: true, allowMissing: (numeric & O_CREAT) !== 0 },
      (r) => openAt(r, numeric, mode),
    )
    return asFsFileHandle(handle)
  }

  /** Lists the directory once, then iterates the listing. */
  async opendir(path: string): Promise<FsDir> {
    return openListedDir(this, path)
  }

  /** A readable stream of the file; it is opened (safely, as `open`) when first read. */
  createReadStream(path: string, options: ReadStreamOptions = {}): Readable {
    return readStream(() => this.open(path, 'r'), path, options)
  }

  /**
   * A writable stream into the file, opened (safely, as `open`) before the first write; its
   * `finish` comes after the file is closed, so the bytes are in the file by then.
   */
  createWriteStream(path: string, options: WriteStreamOptions = {}): Writable {
    this.#mutable('open', path)
    return writeStream(
      () => this.open(path, options.flags ?? 'w', options.mode ?? 0o666),
      path,
      options,
    )
  }

  glob(pattern: string, options?: GlobOptions): Promise<GlobMatch[]> {
    return walkGlob(this, pattern, options)
  }

  grep(pattern: string | RegExp, options?: GrepOptions): Promise<GrepMatch[]> {
    return walkGrep(this, pattern, options)
  }
}

/**
 * A writable target that never follows a link while applying changes: a host directory is
 * reopened with `noFollow`, so a link in the base (or planted by a crafted database) can make
 * a step fail but never redirect it outside.
 */
export function strictTarget(target: FileSystem): FileSystem {
  if (target instanceof HostFileSystem && !target.noFollow)
    return new HostFileSystem({ root: target.root, writable: target.writable, noFollow: true })
  return target
}
