import { Readable, type Writable } from 'node:stream'
import {
  fsError,
  isFsError,
  joinPath,
  MERGE_LIMITS,
  normalizePath,
  parentPath,
  type Queryable,
  type Timestamp,
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
  mkdirOptions,
  type ReaddirOptions,
  type ReadStreamOptions,
  type RmOptions,
  type SqlFileSystem,
  type StatFs,
  type Stats,
  type TimeLike,
  toBytes,
  type WriteData,
  type WriteFileOptions,
  type WriteStreamOptions,
  writeFileOptions,
  writeOnce,
} from '@agentfs/fs'
import {
  type CommitOptions,
  type CommitResult,
  commitOverlay,
  discardOverlay,
  type PendingCommit,
  pendingCommit,
} from './commit.js'
import { CopyUp, keepAncestor } from './copy-up.js'
import { diffOverlay, type OverlayChange, type OverlayDiffOptions } from './diff.js'
import { openListedDir, walkGlob, walkGrep } from './generic-search.js'
import { MergedView } from './merged-view.js'
import { OverlayNamespace } from './namespace.js'
import { writeStream } from './streams.js'

/** Options of an {@link OverlayFs}. */
export interface OverlayFsOptions {
  /**
   * Keep the base's bytes of each text file a copy-up reads (≤ 8 MiB, UTF-8), so a commit can
   * merge a file both the overlay and the base changed (`commit(target, { merge: true })`).
   * Default true; a branch of a snapshot turns it off (the snapshot keeps its ancestors).
   */
  readonly ancestors?: boolean
}

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
  /** Namespace changes (mkdir, rm, rename, links) on the merged view. */
  readonly #ns: OverlayNamespace

  /** Whether copy-ups keep the base's text as a merge ancestor (see {@link OverlayFsOptions}). */
  readonly #options: OverlayFsOptions

  constructor(base: FileSystem, delta: SqlFileSystem, options: OverlayFsOptions = {}) {
    this.base = base
    this.delta = delta
    this.#options = options
    this.#q = delta.queryable
    this.#view = new MergedView(base, delta, this.#q)
    this.#up = new CopyUp(this.#view, options.ancestors ?? true)
    this.#ns = new OverlayNamespace(this.#view, this.#up, delta, this.#q)
  }

  /** Added, modified and deleted entries relative to the base, with unified diffs for text. */
  diff(options: OverlayDiffOptions = {}): Promise<OverlayChange[]> {
    return diffOverlay(this, this.#q, options)
  }

  /**
   * Applies the changes to `target` (default: the base, which must then be writable, e.g. a
   * `HostFileSystem` with `writable: true`), then empties the delta. Setuid, setgid and sticky
   * bits are dropped unless `keepSpecialBits`; FIFOs, sockets and devices are skipped and listed.
   */
  commit(target: FileSystem = this.base, options: CommitOptions = {}): Promise<CommitResult> {
    return commitOverlay(this, this.#q, target, options)
  }

  /**
   * The base's bytes of `path` when the overlay copied it up: the ancestor a merging commit
   * uses. Undefined when none was kept (binary, over 8 MiB, never copied up, or the base
   * changed them again since — see `ancestors`).
   */
  async ancestor(path: string): Promise<Uint8Array | undefined> {
    const { rows } = await this.#q.execute<{ data: Uint8Array }>({
      sql: 'SELECT c.data AS data FROM agentfs_overlay_base_content AS c JOIN agentfs_overlay_base_state AS s ON s.path = c.path AND s.token = c.token WHERE c.path = ?',
      params: [path],
    })
    return rows[0]?.data
  }

  /**
   * Marks `path` resolved against `target`'s current version (default: the base): the overlay
   * now counts that version as the one it started from, so the next commit applies the
   * overlay's content there (and merges again, with that version as the ancestor, only if
   * the target changes once more). Call it after writing the resolution of a conflict a
   * merging commit reported. ENOENT when the target has no such file.
   */
  async resolve(path: string, target: FileSystem = this.base): Promise<void> {
    const real = normalizePath(path)
    const stats = await target.lstat(real)
    if (!stats.isFile()) throw fsError('EINVAL', 'resolve', path)
    const bytes = stats.size <= MERGE_LIMITS.bytes ? await target.readFile(real) : undefined
    await this.#q.transaction(async (tx) => {
      await tx.execute({
        sql: 'INSERT INTO agentfs_overlay_base_state (path, token) VALUES (?, ?) ON CONFLICT(path) DO UPDATE SET token = excluded.token',
        params: [real, stats.version],
      })
      await keepAncestor(tx, real, stats.version, bytes)
    })
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
    return this.#q.transaction((tx) =>
      fn(new OverlayFs(this.base, this.delta.bind(tx), this.#options)),
    )
  }

  #write<T>(fn: (overlay: OverlayFs, now: Timestamp) => Promise<T>): Promise<T> {
    return this.#q.transaction((tx) =>
      fn(new OverlayFs(this.base, this.delta.bind(tx), this.#options), this.delta.clock.now()),
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
    if (opts.idempotencyKey !== undefined) return this.#writeOnce('w', path, data, opts)
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
    if (opts.idempotencyKey !== undefined) return this.#writeOnce('a', path, data, opts)
    await this.#write(async (o) =>
      o.#writeData(path, data, true, (opts.flag ?? 'a').includes('x'), opts),
    )
  }

  /** A keyed write, applied once: the copy-up, the write and the key's record commit together. */
  async #writeOnce(kind: 'w' | 'a', path: string, data: WriteData, opts: WriteFileOptions) {
    const bytes = toBytes(data, opts.encoding, 'open')
    await writeOnce(this.#q, this.delta.clock, kind, path, bytes, opts, (tx, rest) => {
      const overlay = new OverlayFs(this.base, this.delta.bind(tx), this.#options)
      return kind === 'a'
        ? overlay.appendFile(path, bytes, rest)
        : overlay.writeFile(path, bytes, rest)
    })
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
    const opts = mkdirOptions(options, path)
    return this.#write((o, now) => o.#ns.mkdir(path, opts, now))
  }

  async unlink(path: string): Promise<void> {
    await this.#write((o, now) => o.#ns.unlink(path, now))
  }

  async rmdir(path: string): Promise<void> {
    await this.#write((o, now) => o.#ns.rmdir(path, now))
  }

  async rm(path: string, options: RmOptions = {}): Promise<void> {
    await this.#write((o, now) => o.#ns.rm(path, options, now))
  }

  async rename(from: string, to: string): Promise<void> {
    await this.#write((o, now) => o.#ns.rename(from, to, now))
  }

  async link(existing: string, newPath: string): Promise<void> {
    await this.#write((o) => o.#ns.link(existing, newPath))
  }

  async symlink(target: string, path: string): Promise<void> {
    await this.#write((o) => o.#ns.symlink(target, path))
  }

  async mknod(path: string, mode: number, rdev = 0): Promise<void> {
    await this.#write((o) => o.#ns.mknod(path, mode, rdev))
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
    await this.#write((o) => o.#ns.copyFile(src, dest, mode))
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
      await o.#ns.prepareForWrite(r.path)
      return r.path
    })
    return this.delta.open(real, flags, mode)
  }

  /** A writable stream into the file, opened as `open` does (copy-up first) before the first write. */
  createWriteStream(path: string, options: WriteStreamOptions = {}): Writable {
    const flags = options.flags ?? (options.start === undefined ? 'w' : 'r+')
    return writeStream(() => this.open(path, flags, options.mode), path, {
      ...options,
      highWaterMark: options.highWaterMark ?? 1024 * 1024,
    })
  }

  async cp(src: string, dest: string, options: CpOptions = {}): Promise<void> {
    await this.#write(async (o) => copyTree(o, src, dest, options))
  }
}
