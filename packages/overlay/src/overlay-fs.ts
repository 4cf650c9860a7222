import { Readable, Writable } from 'node:stream'
import {
  FsError,
  fsError,
  isFsError,
  joinPath,
  normalizePath,
  parentPath,
  parsePath,
  type Queryable,
  type Timestamp,
  twoPathErrors,
  undefinedIfAbsent,
} from '@agentfs/core'
import {
  ConflictError,
  type CpOptions,
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
  type ReaddirOptions,
  type ReadStreamOptions,
  type RmOptions,
  rmDirectoryError,
  type SqlFileSystem,
  type StatFs,
  type Stats,
  type TimeLike,
  type WriteData,
  type WriteFileOptions,
  type WriteStreamOptions,
  writeFileOptions,
} from '@agentfs/fs'
import {
  type CommitResult,
  commitOverlay,
  discardOverlay,
  type PendingCommit,
  pendingCommit,
} from './commit.js'
import { CopyUp, pump } from './copy-up.js'
import { diffOverlay, type OverlayChange } from './diff.js'
import { openListedDir, walkGlob, walkGrep } from './generic-search.js'
import { MergedView, type Node } from './merged-view.js'

/**
 * Copy-on-write over a read-only base: reads fall through delta → whiteout → base, the first
 * modification of a base entry copies it up (chunk by chunk, keeping mode, owner, times and —
 * via `fs_origin` — its inode number), deletions of base entries become whiteouts. The base is
 * never written. Every mutating call is one transaction of the delta database.
 */
export class OverlayFs implements FileSystem {
  readonly base: FileSystem
  readonly delta: SqlFileSystem
  readonly #q: Queryable
  /** The merged view this front reads through. */
  readonly #view: MergedView
  /** Copy-up and whiteouts, the writes the overlay makes on its own behalf. */
  readonly #up: CopyUp

  constructor(base: FileSystem, delta: SqlFileSystem) {
    this.base = base
    this.delta = delta
    this.#q = delta.queryable
    this.#view = new MergedView(base, delta, this.#q)
    this.#up = new CopyUp(this.#view)
  }

  /** Added, modified and deleted entries relative to the base, with unified diffs for text. */
  diff(): Promise<OverlayChange[]> {
    return diffOverlay(this, this.#q)
  }

  /**
   * Applies the changes to `target` (default: the base, which must then be writable, e.g. a
   * `HostFileSystem` with `writable: true`), then empties the delta.
   */
  commit(target: FileSystem = this.base): Promise<CommitResult> {
    return commitOverlay(this, this.#q, target)
  }

  /** A commit that was interrupted midway (the next `commit` finishes it), if any. */
  pendingCommit(): Promise<PendingCommit | undefined> {
    return pendingCommit(this.#q)
  }

  /** Throws every change away: the overlay shows the base again. */
  discard(): Promise<void> {
    return discardOverlay(this.#q)
  }

  /** Runs `fn` with an overlay whose delta writes share one transaction. */
  transaction<T>(fn: (overlay: OverlayFs) => Promise<T>): Promise<T> {
    return this.#q.transaction((tx) => fn(new OverlayFs(this.base, this.delta.bind(tx))))
  }

  #write<T>(fn: (overlay: OverlayFs, q: Queryable, now: Timestamp) => Promise<T>): Promise<T> {
    return this.#q.transaction((tx) =>
      fn(new OverlayFs(this.base, this.delta.bind(tx)), tx, this.delta.clock.now()),
    )
  }

  // ---- reads -------------------------------------------------------------------------------

  readFile(path: string): Promise<Buffer>
  readFile(path: string, options: Encoding | { encoding: Encoding }): Promise<string>
  async readFile(
    path: string,
    options?: Encoding | { encoding?: Encoding },
  ): Promise<Buffer | string> {
    const { path: real, node } = await this.#view.existing(path, 'open')
    if (node.stats.isDirectory()) throw fsError('EISDIR', 'read', path)
    const encoding = typeof options === 'string' ? options : options?.encoding
    return encoding
      ? this.#view.layer(node).readFile(real, encoding)
      : this.#view.layer(node).readFile(real)
  }

  async stat(path: string): Promise<Stats> {
    return this.#view.stats((await this.#view.existing(path, 'stat')).node)
  }

  async lstat(path: string): Promise<Stats> {
    return this.#view.stats((await this.#view.existing(path, 'lstat', false)).node)
  }

  async readlink(path: string): Promise<string> {
    const { path: real, node } = await this.#view.existing(path, 'readlink', false)
    if (!node.stats.isSymbolicLink()) throw fsError('EINVAL', 'readlink', path)
    return this.#view.layer(node).readlink(real)
  }

  async realpath(path: string): Promise<string> {
    return (await this.#view.existing(path, 'realpath')).path
  }

  async exists(path: string): Promise<boolean> {
    try {
      await this.#view.existing(path, 'access')
      return true
    } catch (error) {
      if (isFsError(error)) return false
      throw error
    }
  }

  async access(path: string, mode = 0): Promise<void> {
    const { node } = await this.#view.existing(path, 'access')
    if (mode & 1 && !node.stats.isDirectory() && (node.stats.mode & 0o111) === 0)
      throw fsError('EACCES', 'access', path)
  }

  readdir(path: string): Promise<string[]>
  readdir(path: string, options: ReaddirOptions & { withFileTypes: true }): Promise<Dirent[]>
  readdir(path: string, options: ReaddirOptions): Promise<string[] | Dirent[]>
  async readdir(path: string, options: ReaddirOptions = {}): Promise<string[] | Dirent[]> {
    const { path: real, node } = await this.#view.existing(path, 'scandir')
    if (!node.stats.isDirectory()) throw fsError('ENOTDIR', 'scandir', path)
    const out: Dirent[] = []
    const walk = async (dir: string) => {
      for (const entry of await this.#view.list(dir)) {
        out.push(entry)
        if (options.recursive && entry.isDirectory()) await walk(joinPath(dir, entry.name))
      }
    }
    await walk(real)
    if (options.recursive) {
      out.sort((a, b) => {
        const x = joinPath(a.parentPath, a.name)
        const y = joinPath(b.parentPath, b.name)
        return x < y ? -1 : x > y ? 1 : 0
      })
    }
    if (options.withFileTypes) return out
    return out.map((d) => {
      const full = joinPath(d.parentPath, d.name)
      return real === '/' ? full.slice(1) : full.slice(real.length + 1)
    })
  }

  async opendir(path: string): Promise<FsDir> {
    return openListedDir(this, path)
  }

  createReadStream(path: string, options?: ReadStreamOptions): Readable {
    const overlay = this
    async function* chunks(): AsyncGenerator<Buffer | string> {
      const { path: real, node } = await overlay.#view.existing(path, 'open')
      for await (const chunk of overlay.#view.layer(node).createReadStream(real, options))
        yield chunk as Buffer | string
    }
    return Readable.from(chunks(), { objectMode: false })
  }

  glob(pattern: string, options?: GlobOptions): Promise<GlobMatch[]> {
    return walkGlob(this, pattern, options)
  }

  grep(pattern: string | RegExp, options?: GrepOptions): Promise<GrepMatch[]> {
    return walkGrep(this, pattern, options)
  }

  async statfs(path: string): Promise<StatFs> {
    return this.delta.statfs(path)
  }

  // ---- writes ------------------------------------------------------------------------------

  async writeFile(
    path: string,
    data: WriteData,
    options?: WriteFileOptions | Encoding,
  ): Promise<void> {
    const opts = writeFileOptions(options)
    const flag = opts.flag ?? 'w'
    await this.#write(async (o) =>
      o.#writeData(path, data, flag.startsWith('a'), flag.includes('x'), opts),
    )
  }

  async appendFile(
    path: string,
    data: WriteData,
    options?: WriteFileOptions | Encoding,
  ): Promise<void> {
    const opts = writeFileOptions(options)
    await this.#write(async (o) =>
      o.#writeData(path, data, true, (opts.flag ?? 'a').includes('x'), opts),
    )
  }

  async #writeData(
    path: string,
    data: WriteData,
    append: boolean,
    exclusive: boolean,
    opts: WriteFileOptions,
  ) {
    const r = await this.#view.resolve(path, true, 'open', true)
    const { ifMatch, ...rest } = opts
    if (r.node) {
      if (exclusive) throw fsError('EEXIST', 'open', path)
      if (r.node.stats.isDirectory()) throw fsError('EISDIR', 'open', path)
      // Compared on the merged view before any copy-up, inside this transaction.
      if (ifMatch !== undefined && r.node.stats.version !== ifMatch) {
        throw new ConflictError(r.path, ifMatch, r.node.stats.version)
      }
      if (r.node.layer === 'base') await this.#up.copyUp(r.path)
      await this.delta.writeFile(r.path, data, { ...rest, flag: append ? 'a' : 'w' })
      return
    }
    if (ifMatch !== undefined) throw new ConflictError(r.path, ifMatch, undefined)
    await this.#up.copyUp(parentPath(r.path))
    await this.#up.unwhiteout(r.path)
    await this.delta.writeFile(r.path, data, { ...rest, flag: 'wx' })
  }

  async truncate(path: string, length = 0): Promise<void> {
    await this.#write(async (o) => {
      const { path: real, node } = await o.#view.existing(path, 'open')
      if (node.stats.isDirectory()) throw fsError('EISDIR', 'open', path)
      await o.#up.copyUp(real)
      await o.delta.truncate(real, length)
    })
  }

  async mkdir(path: string, options?: MkdirOptions | number): Promise<string | undefined> {
    const opts: MkdirOptions = typeof options === 'number' ? { mode: options } : (options ?? {})
    return this.#write(async (o, _q, now) => {
      if (!opts.recursive) {
        await o.#mkdirOne(path, opts.mode, now)
        return undefined
      }
      const parts = parsePath(path, 'mkdir').parts
      let first: string | undefined
      for (let i = 1; i <= parts.length; i++) {
        const prefix = `/${parts.slice(0, i).join('/')}`
        const last = i === parts.length
        const existing = await o.#view.resolve(prefix, false, 'mkdir', true)
        if (existing.node) {
          let target = existing.node
          if (target.stats.isSymbolicLink()) {
            try {
              target = (await o.#view.resolve(prefix, true, 'mkdir')).node ?? target
            } catch (error) {
              const code = (error as { code?: string }).code
              if (code === 'ELOOP') throw fsError('ELOOP', 'mkdir', path)
              throw fsError(last && code === 'ENOENT' ? 'ENOENT' : 'ENOTDIR', 'mkdir', path)
            }
          }
          if (!target.stats.isDirectory()) throw fsError(last ? 'EEXIST' : 'ENOTDIR', 'mkdir', path)
          continue
        }
        await o.#mkdirOne(prefix, opts.mode, now)
        first ??= normalizePath(prefix)
      }
      return first
    })
  }

  async #mkdirOne(path: string, mode: number | undefined, now: Timestamp): Promise<void> {
    const r = await this.#view.resolve(path, false, 'mkdir', true)
    if (r.node || r.path === '/') throw fsError('EEXIST', 'mkdir', path)
    await this.#up.copyUp(parentPath(r.path))
    await this.#up.unwhiteout(r.path)
    await this.delta.mkdir(r.path, mode === undefined ? {} : { mode })
    await this.#up.opaque(r.path, now)
  }

  async unlink(path: string): Promise<void> {
    await this.#write(async (o, _q, now) => {
      const { path: real, node } = await o.#view.existing(path, 'unlink', false)
      if (node.stats.isDirectory()) throw fsError('EISDIR', 'unlink', path)
      if (node.layer === 'delta') await o.delta.unlink(real)
      await o.#up.whiteout(real, now)
    })
  }

  async rmdir(path: string): Promise<void> {
    await this.#write(async (o, _q, now) => {
      const { path: real, node } = await o.#view.existing(path, 'rmdir', false)
      if (real === '/') throw fsError('EPERM', 'rmdir', path)
      if (!node.stats.isDirectory()) throw fsError('ENOTDIR', 'rmdir', path)
      if ((await o.#view.list(real)).length > 0) throw fsError('ENOTEMPTY', 'rmdir', path)
      await o.#removeDir(real, now)
    })
  }

  async #removeDir(real: string, now: Timestamp): Promise<void> {
    if (await this.delta.lstat(real).catch(undefinedIfAbsent))
      await this.delta.rm(real, { recursive: true })
    // Whiteouts below are covered by the one on the directory itself.
    await this.#q.execute({
      sql: 'DELETE FROM fs_whiteout WHERE path >= ? AND path < ?',
      params: [`${real}/`, `${real}0`],
    })
    await this.#up.whiteout(real, now)
  }

  async rm(path: string, options: RmOptions = {}): Promise<void> {
    await this.#write(async (o, _q, now) => {
      let found: { path: string; node: Node }
      try {
        found = await o.#view.existing(path, 'rm', false)
      } catch (error) {
        if (options.force && (error as { code?: string }).code === 'ENOENT') return
        throw error
      }
      if (found.path === '/') throw fsError('EPERM', 'rm', path)
      if (found.node.stats.isDirectory()) {
        if (!options.recursive) throw rmDirectoryError(path)
        await o.#removeDir(found.path, now)
        return
      }
      if (found.node.layer === 'delta') await o.delta.unlink(found.path)
      await o.#up.whiteout(found.path, now)
    })
  }

  async rename(from: string, to: string): Promise<void> {
    await this.#write(async (o, _q, now) => {
      const { fail, wrap } = twoPathErrors('rename', from, to)
      const source = await wrap(o.#view.resolve(from, false, 'rename', true))
      const target = await wrap(o.#view.resolve(to, false, 'rename', true))
      if (!source.node) throw fail('ENOENT')
      if (source.path === '/' || target.path === '/') throw fail('EBUSY')
      const moving = source.node.stats
      if (
        moving.isDirectory() &&
        (target.path === source.path || target.path.startsWith(`${source.path}/`))
      ) {
        if (target.path !== source.path) throw fail('EINVAL')
      }
      if (target.path === source.path) return
      if (target.node) {
        if (
          target.node.layer === source.node.layer &&
          target.node.stats.ino === moving.ino &&
          !moving.isDirectory()
        )
          return
        if (target.node.stats.isDirectory() && source.path.startsWith(`${target.path}/`))
          throw fail('ENOTEMPTY')
        if (moving.isDirectory()) {
          if (!target.node.stats.isDirectory()) throw fail('ENOTDIR')
          if ((await o.#view.list(target.path)).length > 0) throw fail('ENOTEMPTY')
        } else if (target.node.stats.isDirectory()) {
          throw fail('EISDIR')
        }
      } else if (parsePath(to, 'rename').trailingSlash && !moving.isDirectory()) {
        throw fail('ENOTDIR')
      }
      await o.#up.copyUpTree(source.path)
      await o.#up.copyUp(parentPath(target.path))
      if (target.node) {
        if (target.node.stats.isDirectory()) await o.#removeDir(target.path, now)
        else {
          if (target.node.layer === 'delta') await o.delta.unlink(target.path)
          await o.#up.whiteout(target.path, now)
        }
      }
      await o.#up.unwhiteout(target.path)
      await o.delta.rename(source.path, target.path)
      if (moving.isDirectory()) await o.#up.opaque(target.path, now)
      await o.#up.whiteout(source.path, now)
    })
  }

  async link(existing: string, newPath: string): Promise<void> {
    await this.#write(async (o) => {
      const { fail, wrap } = twoPathErrors('link', existing, newPath)
      const source = await wrap(o.#view.resolve(existing, false, 'link', true))
      if (!source.node) throw fail('ENOENT')
      const target = await wrap(o.#view.resolve(newPath, false, 'link', true))
      if (target.node) throw fail('EEXIST')
      if (source.node.stats.isDirectory()) throw fail('EPERM')
      await o.#up.copyUp(source.path)
      await o.#up.copyUp(parentPath(target.path))
      await o.#up.unwhiteout(target.path)
      await o.delta.link(source.path, target.path)
    })
  }

  async symlink(target: string, path: string): Promise<void> {
    await this.#write(async (o) => {
      const r = await o.#view.resolve(path, false, 'symlink', true).catch((e: FsError) => {
        throw new FsError({ code: e.code, syscall: 'symlink', path: target, dest: path })
      })
      if (r.node)
        throw new FsError({ code: 'EEXIST', syscall: 'symlink', path: target, dest: path })
      await o.#up.copyUp(parentPath(r.path))
      await o.#up.unwhiteout(r.path)
      await o.delta.symlink(target, r.path)
    })
  }

  async mknod(path: string, mode: number, rdev = 0): Promise<void> {
    await this.#write(async (o) => {
      const r = await o.#view.resolve(path, false, 'mknod', true)
      if (r.node) throw fsError('EEXIST', 'mknod', path)
      await o.#up.copyUp(parentPath(r.path))
      await o.#up.unwhiteout(r.path)
      await o.delta.mknod(r.path, mode, rdev)
    })
  }

  async #modify(
    path: string,
    syscall: string,
    follow: boolean,
    fn: (delta: SqlFileSystem, real: string) => Promise<void>,
  ): Promise<void> {
    await this.#write(async (o) => {
      const { path: real } = await o.#view.existing(path, syscall, follow)
      await o.#up.copyUp(real)
      await fn(o.delta, real)
    })
  }

  chmod(path: string, mode: number): Promise<void> {
    return this.#modify(path, 'chmod', true, (d, real) => d.chmod(real, mode))
  }

  chown(path: string, uid: number, gid: number): Promise<void> {
    return this.#modify(path, 'chown', true, (d, real) => d.chown(real, uid, gid))
  }

  lchown(path: string, uid: number, gid: number): Promise<void> {
    return this.#modify(path, 'lchown', false, (d, real) => d.lchown(real, uid, gid))
  }

  utimes(path: string, atime: TimeLike, mtime: TimeLike): Promise<void> {
    return this.#modify(path, 'utime', true, (d, real) => d.utimes(real, atime, mtime))
  }

  lutimes(path: string, atime: TimeLike, mtime: TimeLike): Promise<void> {
    return this.#modify(path, 'lutime', false, (d, real) => d.lutimes(real, atime, mtime))
  }

  async copyFile(src: string, dest: string, mode = 0): Promise<void> {
    await this.#write(async (o) => {
      const { fail, wrap } = twoPathErrors('copyfile', src, dest)
      const source = await wrap(o.#view.resolve(src, true, 'copyfile', true))
      if (!source.node) throw fail('ENOENT')
      const target = await wrap(o.#view.resolve(dest, true, 'copyfile', true))
      if (source.node.stats.isDirectory()) throw fail('EISDIR')
      if (target.node) {
        if (mode & 1) throw fail('EEXIST')
        if (target.node.stats.isDirectory()) throw fail('EISDIR')
        // The same file (one path, or two hard links to one inode): copying is a no-op.
        if (target.path === source.path) return
        if (
          target.node.layer === source.node.layer &&
          target.node.stats.ino === source.node.stats.ino
        )
          return
      }
      await o.#prepareForWrite(target.path)
      await pump(
        await o.#view.layer(source.node).open(source.path, 'r'),
        await o.delta.open(target.path, 'w', source.node.stats.mode & 0o7777),
      )
    })
  }

  /** Makes `real` writable in the delta: copies a base entry up, or prepares its parent and clears a whiteout. */
  async #prepareForWrite(real: string): Promise<void> {
    const node = await this.#view.node(real)
    if (node?.layer === 'base') await this.#up.copyUp(real)
    else if (!node) {
      await this.#up.copyUp(parentPath(real))
      await this.#up.unwhiteout(real)
    }
  }

  async open(path: string, flags: string | number = 'r', mode = 0o666): Promise<FsFileHandle> {
    const readOnly = flags === 'r' || flags === 'rs' || flags === 0
    if (readOnly) {
      const { path: real, node } = await this.#view.existing(path, 'open')
      return this.#view.layer(node).open(real, 'r')
    }
    // Copy-up happens in a transaction; the handle lives on after it, on the unbound delta.
    const real = await this.#write(async (o) => {
      const r = await o.#view.resolve(path, true, 'open', true)
      if (!r.node && typeof flags === 'string' && flags.startsWith('r'))
        throw fsError('ENOENT', 'open', path)
      await o.#prepareForWrite(r.path)
      return r.path
    })
    return this.delta.open(real, flags, mode)
  }

  createWriteStream(path: string, options: WriteStreamOptions = {}): Writable {
    let handle: FsFileHandle | undefined
    let position = options.start
    return new Writable({
      highWaterMark: options.highWaterMark ?? 1024 * 1024,
      construct: (callback) => {
        this.open(
          path,
          options.flags ?? (options.start === undefined ? 'w' : 'r+'),
          options.mode,
        ).then((h) => {
          handle = h
          callback()
        }, callback)
      },
      write: (chunk: Buffer, _encoding, callback) => {
        handle!.write(chunk, 0, chunk.length, position ?? null).then(() => {
          if (position !== undefined) position += chunk.length
          callback()
        }, callback)
      },
      final: (callback) => {
        handle!.close().then(() => callback(), callback)
      },
    })
  }

  async cp(src: string, dest: string, options: CpOptions = {}): Promise<void> {
    await this.#write(async (o) => copyTree(o, src, dest, options))
  }
}
