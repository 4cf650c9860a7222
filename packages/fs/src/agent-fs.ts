import type { Readable, Writable } from 'node:stream'
import {
  type AgentDatabase,
  FsError,
  fsError,
  isAgentFsError,
  joinPath,
  MODE_PERMISSION_MASK,
  normalizePath,
  type Queryable,
  ROOT_INO,
  S_IFDIR,
  S_IFMT,
  S_IFREG,
} from '@agentfs/core'
import { readAll, resize } from './chunks.js'
import * as content from './content-ops.js'
import {
  DAY,
  existing,
  type FileSystemOptions,
  type FsContext,
  toBytes,
  toTimestamp,
  write,
  writeFileOptions,
  X_OK,
} from './context.js'
import { copyTree } from './copy-tree.js'
import { Dir } from './dir.js'
import { type FileHandle, openHandle } from './file-handle.js'
import { parseFlags } from './flags.js'
import { type InodeRow, isDir, isLnk } from './inode.js'
import { createNode, pathOf, touchContent, touchMeta } from './mutate.js'
import * as ns from './namespace-ops.js'
import { CompiledPolicy, type FsOperation } from './policy.js'
import { PolicyGate } from './policy-gate.js'
import { lookup, readRegularFile } from './resolver.js'
import {
  type GlobMatch,
  type GlobOptions,
  type GrepMatch,
  type GrepOptions,
  glob,
  grep,
} from './search.js'
import { Dirent, Stats } from './stats.js'
import {
  createReadStream,
  createWriteStream,
  type ReadStreamOptions,
  type WriteStreamOptions,
} from './streams.js'
import type {
  CpOptions,
  Encoding,
  FileSystem,
  MkdirOptions,
  ReaddirOptions,
  RmOptions,
  StatFs,
  TimeLike,
  WriteData,
  WriteFileOptions,
} from './types.js'

/**
 * The AgentFS filesystem: POSIX semantics over the spec's inode, dentry and chunk tables, with
 * `node:fs/promises` names. Every mutating call is one transaction (a savepoint inside
 * {@link AgentFs.transaction}).
 */
export class AgentFs implements FileSystem {
  readonly #ctx: FsContext

  /** @internal Use {@link createFileSystem}. */
  constructor(ctx: FsContext) {
    this.#ctx = ctx
  }

  /** `fs_config.chunk_size` of the database. */
  get chunkSize(): number {
    return this.#ctx.chunkSize
  }

  /**
   * Runs `fn` with a filesystem bound to one transaction: everything it does commits together
   * or not at all.
   */
  /**
   * This filesystem running its statements on `q` — e.g. a transaction opened by another
   * package, so that file, key and tool-call writes commit together.
   */
  bind(q: Queryable): AgentFs {
    return new AgentFs({ ...this.#ctx, q })
  }

  transaction<T>(fn: (fs: AgentFs) => Promise<T>): Promise<T> {
    return this.#ctx.q.transaction((tx) => fn(new AgentFs({ ...this.#ctx, q: tx })))
  }

  #stats(row: InodeRow): Stats {
    return new Stats(row, { blksize: this.#ctx.chunkSize })
  }

  /** The policy's checks, when there is a policy. */
  get #gate(): PolicyGate | undefined {
    const { policy, ...ctx } = this.#ctx
    if (!policy) return undefined
    this.#gateCache ??= new PolicyGate(policy, ctx.q, new AgentFs(ctx))
    return this.#gateCache
  }
  #gateCache: PolicyGate | undefined

  async #allowRead(path: string, syscall: string, follow = true): Promise<void> {
    await this.#gate?.read(path, syscall, follow)
  }

  async #allowWrite(
    path: string,
    syscall: string,
    operation: FsOperation,
    options: { follow?: boolean; replaces?: boolean; create?: FsOperation } = {},
  ): Promise<void> {
    await this.#gate?.write(path, syscall, operation, options)
  }

  async #maybeAtime(node: InodeRow): Promise<void> {
    const { atime } = this.#ctx
    if (atime === 'noatime') return
    const now = this.#ctx.clock.now()
    if (atime === 'relatime') {
      const a = node.atime * 1e9 + node.atime_nsec
      const stale =
        a <= node.mtime * 1e9 + node.mtime_nsec ||
        a <= node.ctime * 1e9 + node.ctime_nsec ||
        now.sec - node.atime >= DAY
      if (!stale) return
    }
    try {
      await this.#ctx.q.execute({
        sql: 'UPDATE fs_inode SET atime = ?, atime_nsec = ? WHERE ino = ?',
        params: [now.sec, now.nsec, node.ino],
      })
    } catch (error) {
      // A read-only database reads like a read-only mount: access times simply stay as they are.
      if (!isAgentFsError(error, 'READONLY')) throw error
    }
  }

  readFile(path: string): Promise<Buffer>
  readFile(path: string, options: Encoding | { encoding: Encoding }): Promise<string>
  readFile(path: string, options?: Encoding | { encoding?: Encoding }): Promise<Buffer | string>
  async readFile(
    path: string,
    options?: Encoding | { encoding?: Encoding },
  ): Promise<Buffer | string> {
    const encoding = typeof options === 'string' ? options : options?.encoding
    await this.#allowRead(path, 'open')
    let node: InodeRow
    let bytes: Uint8Array
    const direct = await readRegularFile(this.#ctx.q, path, 'open')
    if (direct) ({ node, bytes } = direct)
    else {
      node = (await existing(this.#ctx.q, path, 'open')).node
      if (isDir(node.mode)) throw fsError('EISDIR', 'read', path)
      bytes = node.size === 0 ? new Uint8Array(0) : await readAll(this.#ctx.q, node.ino)
    }
    await this.#maybeAtime(node)
    const buffer = Buffer.isBuffer(bytes)
      ? bytes
      : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    return encoding ? buffer.toString(encoding) : buffer
  }

  async writeFile(
    path: string,
    data: WriteData,
    options?: WriteFileOptions | Encoding,
  ): Promise<void> {
    await this.#writeData(path, data, writeFileOptions(options), 'w')
  }

  async appendFile(
    path: string,
    data: WriteData,
    options?: WriteFileOptions | Encoding,
  ): Promise<void> {
    await this.#writeData(path, data, writeFileOptions(options), 'a')
  }

  /** writeFile and appendFile: `a` always appends; with `w` the flag decides. */
  async #writeData(path: string, data: WriteData, opts: WriteFileOptions, mode: 'w' | 'a') {
    const flag = opts.flag ?? mode
    await this.#allowWrite(path, 'open', 'write', { create: 'create' })
    await content.writeData(
      this.#ctx,
      path,
      toBytes(data, opts.encoding, 'open'),
      mode === 'a' || flag.startsWith('a'),
      flag.includes('x'),
      opts,
    )
  }

  async truncate(path: string, length = 0): Promise<void> {
    await this.#allowWrite(path, 'truncate', 'write')
    await content.truncate(this.#ctx, path, length)
  }

  async unlink(path: string): Promise<void> {
    await this.#allowWrite(path, 'unlink', 'delete', { follow: false, replaces: true })
    await ns.unlink(this.#ctx, path)
  }

  async rmdir(path: string): Promise<void> {
    await this.#allowWrite(path, 'rmdir', 'delete', { follow: false, replaces: true })
    await ns.rmdir(this.#ctx, path)
  }

  async mkdir(path: string, options?: MkdirOptions | number): Promise<string | undefined> {
    await this.#allowWrite(path, 'mkdir', 'create')
    return ns.mkdir(this.#ctx, path, options)
  }

  async rm(path: string, options: RmOptions = {}): Promise<void> {
    await this.#allowWrite(path, 'rm', 'delete', { follow: false, replaces: true })
    await ns.rm(this.#ctx, path, options)
  }

  async rename(from: string, to: string): Promise<void> {
    await this.#allowWrite(from, 'rename', 'rename', { follow: false, replaces: true })
    await this.#allowWrite(to, 'rename', 'rename', { follow: false, replaces: true })
    await ns.rename(this.#ctx, from, to)
  }

  async link(existing: string, newPath: string): Promise<void> {
    await this.#allowRead(existing, 'link', false)
    await this.#allowWrite(newPath, 'link', 'link', { follow: false })
    await ns.link(this.#ctx, existing, newPath)
  }

  async symlink(target: string, path: string): Promise<void> {
    await this.#allowWrite(path, 'symlink', 'symlink', { follow: false })
    await ns.symlink(this.#ctx, target, path)
  }

  async readlink(path: string): Promise<string> {
    await this.#allowRead(path, 'readlink', false)
    const { node } = await existing(this.#ctx.q, path, 'readlink', false)
    if (!isLnk(node.mode)) throw fsError('EINVAL', 'readlink', path)
    const { rows } = await this.#ctx.q.execute<{ target: string }>({
      sql: 'SELECT target FROM fs_symlink WHERE ino = ?',
      params: [node.ino],
    })
    return rows[0]?.target ?? ''
  }

  async realpath(path: string): Promise<string> {
    await this.#allowRead(path, 'realpath')
    const { node } = await existing(this.#ctx.q, path, 'realpath')
    return node.ino === ROOT_INO ? '/' : pathOf(this.#ctx.q, node.ino)
  }

  async exists(path: string): Promise<boolean> {
    try {
      await this.#allowRead(path, 'access')
      await existing(this.#ctx.q, path, 'access')
      return true
    } catch (error) {
      if (error instanceof FsError) return false
      throw error
    }
  }

  async access(path: string, mode = 0): Promise<void> {
    await this.#allowRead(path, 'access')
    if (mode & 2) await this.#allowWrite(path, 'access', 'write')
    const { node } = await existing(this.#ctx.q, path, 'access')
    if (mode & X_OK && !isDir(node.mode) && (node.mode & 0o111) === 0)
      throw fsError('EACCES', 'access', path)
  }

  async stat(path: string): Promise<Stats> {
    await this.#allowRead(path, 'stat')
    return this.#stats((await existing(this.#ctx.q, path, 'stat')).node)
  }

  async lstat(path: string): Promise<Stats> {
    await this.#allowRead(path, 'lstat', false)
    return this.#stats((await existing(this.#ctx.q, path, 'lstat', false)).node)
  }

  async chmod(path: string, mode: number): Promise<void> {
    if (!Number.isInteger(mode) || mode < 0) throw fsError('EINVAL', 'chmod', path)
    await this.#allowWrite(path, 'chmod', 'chmod')
    await write(this.#ctx, async (q, now) => {
      const { node } = await existing(q, path, 'chmod')
      await touchMeta(q, node.ino, now, {
        mode: (node.mode & S_IFMT) | (mode & MODE_PERMISSION_MASK),
      })
    })
  }

  async chown(path: string, uid: number, gid: number): Promise<void> {
    await this.#chown(path, uid, gid, true, 'chown')
  }

  async lchown(path: string, uid: number, gid: number): Promise<void> {
    await this.#chown(path, uid, gid, false, 'lchown')
  }

  async #chown(path: string, uid: number, gid: number, follow: boolean, syscall: string) {
    for (const id of [uid, gid])
      if (!Number.isInteger(id) || id < -1) throw fsError('EINVAL', syscall, path)
    await this.#allowWrite(path, syscall, 'chown', { follow })
    await write(this.#ctx, async (q, now) => {
      const { node } = await existing(q, path, syscall, follow)
      await touchMeta(q, node.ino, now, {
        uid: uid === -1 ? node.uid : uid,
        gid: gid === -1 ? node.gid : gid,
      })
    })
  }

  async utimes(path: string, atime: TimeLike, mtime: TimeLike): Promise<void> {
    await this.#utimes(path, atime, mtime, true, 'utime')
  }

  async lutimes(path: string, atime: TimeLike, mtime: TimeLike): Promise<void> {
    await this.#utimes(path, atime, mtime, false, 'lutime')
  }

  async #utimes(path: string, atime: TimeLike, mtime: TimeLike, follow: boolean, syscall: string) {
    const a = toTimestamp(atime, syscall)
    const m = toTimestamp(mtime, syscall)
    await this.#allowWrite(path, syscall, 'utimes', { follow })
    await write(this.#ctx, async (q, now) => {
      const { node } = await existing(q, path, syscall, follow)
      await touchMeta(q, node.ino, now, {
        atime: a.sec,
        atime_nsec: a.nsec,
        mtime: m.sec,
        mtime_nsec: m.nsec,
      })
    })
  }

  async copyFile(src: string, dest: string, mode = 0): Promise<void> {
    await this.#allowRead(src, 'copyfile')
    await this.#allowWrite(dest, 'copyfile', 'write', { create: 'create' })
    await content.copyFile(this.#ctx, src, dest, mode)
  }

  async mknod(path: string, mode: number, rdev = 0): Promise<void> {
    await this.#allowWrite(path, 'mknod', 'create')
    await ns.mknod(this.#ctx, path, mode, rdev)
  }

  readdir(path: string): Promise<string[]>
  readdir(path: string, options: ReaddirOptions & { withFileTypes: true }): Promise<Dirent[]>
  readdir(path: string, options: ReaddirOptions): Promise<string[] | Dirent[]>
  async readdir(path: string, options: ReaddirOptions = {}): Promise<string[] | Dirent[]> {
    const gate = this.#gate
    if (gate) {
      const real = await gate.read(path, 'scandir')
      const entries = (await gate.unchecked.readdir(path, options)) as (string | Dirent)[]
      return gate.readableEntries(path, real, entries) as string[] | Dirent[]
    }
    const q = this.#ctx.q
    const { node } = await existing(q, path, 'scandir')
    if (!isDir(node.mode)) throw fsError('ENOTDIR', 'scandir', path)
    const base = normalizePath(path)
    if (!options.recursive) {
      if (!options.withFileTypes) {
        // Names only: an index-only scan of idx_fs_dentry_parent (parent_ino, name).
        const { rows } = await q.execute<{ name: string }>({
          sql: 'SELECT name FROM fs_dentry WHERE parent_ino = ? ORDER BY name',
          params: [node.ino],
        })
        return rows.map((r) => r.name)
      }
      const { rows } = await q.execute<{ name: string; mode: number }>({
        sql: 'SELECT d.name AS name, i.mode AS mode FROM fs_dentry d JOIN fs_inode i ON i.ino = d.ino WHERE d.parent_ino = ? ORDER BY d.name',
        params: [node.ino],
      })
      return rows.map((r) => new Dirent(r.name, base, r.mode))
    }
    const { rows } = await q.execute<{ rel: string; name: string; parent: string; mode: number }>({
      sql: `WITH RECURSIVE tree(ino, rel, name, parent, mode) AS (
  SELECT d.ino, d.name, d.name, '', i.mode FROM fs_dentry d JOIN fs_inode i ON i.ino = d.ino WHERE d.parent_ino = ?
  UNION ALL
  SELECT d.ino, tree.rel || '/' || d.name, d.name, tree.rel, i.mode
  FROM tree JOIN fs_dentry d ON d.parent_ino = tree.ino JOIN fs_inode i ON i.ino = d.ino
  WHERE (tree.mode & ${S_IFMT}) = ${S_IFDIR}
)
SELECT rel, name, parent, mode FROM tree ORDER BY rel`,
      params: [node.ino],
    })
    if (!options.withFileTypes) return rows.map((r) => r.rel)
    return rows.map((r) => new Dirent(r.name, r.parent ? joinPath(base, r.parent) : base, r.mode))
  }

  async statfs(_path: string): Promise<StatFs> {
    const q = this.#ctx.q
    const { rows } = await q.execute<{ bytes: number; files: number }>({
      sql: 'SELECT (SELECT COALESCE(SUM(size), 0) FROM fs_inode) AS bytes, (SELECT COUNT(*) FROM fs_inode) AS files',
    })
    const bsize = this.#ctx.chunkSize
    const used = Math.ceil((rows[0]?.bytes ?? 0) / bsize)
    const total = Math.max(used, 2 ** 31)
    return {
      type: 0x61676673,
      bsize,
      blocks: total,
      bfree: total - used,
      bavail: total - used,
      files: rows[0]?.files ?? 0,
      ffree: 2 ** 31,
    }
  }

  /**
   * Opens a file like `fs.promises.open`: flags `r`, `r+`, `w`, `w+`, `wx`, `a`, `a+`, `ax`, …
   * or `O_*` numbers; `mode` applies when the file is created.
   */
  async open(path: string, flags: string | number = 'r', mode = 0o666): Promise<FileHandle> {
    const want = parseFlags(flags, path)
    if (want.read) await this.#allowRead(path, 'open')
    if (want.write || want.truncate)
      await this.#allowWrite(path, 'open', 'write', { create: 'create' })
    return openHandle(this, path, want, async (q, now) => {
      const found = await lookup(q, path, {
        followLast: true,
        syscall: 'open',
        allowMissing: want.create,
      })
      if (found.node) {
        if (want.create && want.exclusive) throw fsError('EEXIST', 'open', path)
        if (isDir(found.node.mode) && want.write) throw fsError('EISDIR', 'open', path)
        if (want.truncate && want.write && found.node.size > 0) {
          await resize(q, found.node.ino, found.node.size, this.#ctx.chunkSize, 0)
          await touchContent(q, found.node.ino, 0, now)
        }
        return found.node.ino
      }
      if (!want.create || found.name === undefined) return undefined
      return createNode(q, found.dirIno, found.name, {
        mode: S_IFREG | (mode & ~this.#ctx.umask & MODE_PERMISSION_MASK),
        uid: this.#ctx.uid,
        gid: this.#ctx.gid,
        now,
      })
    })
  }

  /** A readable stream of the file (bounded memory; `start`/`end` inclusive like Node). */
  createReadStream(path: string, options?: ReadStreamOptions): Readable {
    return createReadStream(this, path, options)
  }

  /** A writable stream into the file (bounded memory; one transaction per buffered batch). */
  createWriteStream(path: string, options?: WriteStreamOptions): Writable {
    return createWriteStream(this, path, options)
  }

  /** Iterates a directory in pages of `bufferSize` entries (default 256). */
  async opendir(path: string, options: { bufferSize?: number } = {}): Promise<Dir> {
    await this.#allowRead(path, 'opendir')
    const { node } = await existing(this.#ctx.q, path, 'opendir')
    if (!isDir(node.mode)) throw fsError('ENOTDIR', 'opendir', path)
    return new Dir(
      this.#ctx.q,
      node.ino,
      normalizePath(path),
      Math.max(1, options.bufferSize ?? 256),
    )
  }

  /** Paths matching a glob pattern, listed with one query below the pattern's static prefix. */
  async glob(pattern: string, options?: GlobOptions): Promise<GlobMatch[]> {
    const gate = this.#gate
    if (!gate) return glob(this.#ctx.q, pattern, options)
    const cwd = options?.cwd ?? '/'
    const real = await gate.read(cwd, 'glob')
    const prefix = real === '/' ? '' : real
    return (await glob(this.#ctx.q, pattern, options)).filter((m) =>
      gate.policy.readable(`${prefix}/${m.path}`),
    )
  }

  /** Lines matching a pattern in files below `options.path`, like `grep -rn`. */
  async grep(pattern: string | RegExp, options?: GrepOptions): Promise<GrepMatch[]> {
    const gate = this.#gate
    const matches = async () => grep(this.#ctx.q, this.#ctx.chunkSize, pattern, options)
    if (!gate) return matches()
    await gate.read(options?.path ?? '/', 'grep')
    return gate.readablePaths(await matches(), 'grep')
  }

  /**
   * Copies a file, a symlink or (with `recursive`) a directory tree, in one transaction. Like
   * `fs.promises.cp`: `force` (default true) replaces existing files, `errorOnExist` turns a
   * skipped existing file into EEXIST, `dereference` copies what links point to.
   */
  async cp(src: string, dest: string, options: CpOptions = {}): Promise<void> {
    await this.transaction((tx) => copyTree(tx, src, dest, options))
  }

  /** @internal Shared with FileHandle and streams. */
  get context(): FsContext {
    return this.#ctx
  }
}

/**
 * Creates the filesystem over an open AgentFS database.
 *
 * @example
 * const fs = createFileSystem(await openDatabase({ driver }))
 * await fs.writeFile('/notes/todo.md', '- ship it\n')
 */
export function createFileSystem(db: AgentDatabase, options: FileSystemOptions = {}): AgentFs {
  return new AgentFs({
    q: db,
    chunkSize: db.chunkSize,
    clock: db.clock,
    atime: options.atime ?? 'relatime',
    umask: options.umask ?? 0o022,
    uid: options.uid ?? 0,
    gid: options.gid ?? 0,
    ...(options.policy ? { policy: new CompiledPolicy(options.policy) } : {}),
  })
}

export type { FileSystemOptions, FsContext as FileSystemContext }
