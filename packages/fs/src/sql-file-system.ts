import type { Readable, Writable } from 'node:stream'
import {
  type AgentDatabase,
  type Clock,
  fsError,
  isAgentFsError,
  isFsError,
  MODE_PERMISSION_MASK,
  normalizePath,
  type Queryable,
  ROOT_INO,
  S_IFMT,
  S_IFREG,
} from '@agentfs/core'
import { readAll } from './chunks.js'
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
import { listDirectory, openDirectory, openOrCreate, statfsOf } from './listing-ops.js'
import { pathOf, touchMeta } from './mutate.js'
import * as ns from './namespace-ops.js'
import { CompiledPolicy, type FsOperation, type FsPolicy } from './policy.js'
import { PolicyGate, type WriteCheck } from './policy-gate.js'
import { readRegularFile } from './resolver.js'
import {
  type GlobMatch,
  type GlobOptions,
  type GrepMatch,
  type GrepOptions,
  glob,
  grep,
} from './search.js'
import { type Dirent, Stats } from './stats.js'
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

/** Files up to this size report `blocks` from their size without counting chunks. */
const SPARSE_STAT_THRESHOLD = 64 * 1024

/**
 * The AgentFS filesystem: POSIX semantics over the spec's inode, dentry and chunk tables, with
 * `node:fs/promises` names. Every mutating call is one transaction (a savepoint inside
 * {@link SqlFileSystem.transaction}).
 */
/**
 * The context of a filesystem, for FileHandle and the streams of this package (not exported from
 * the package: the context is internal).
 */
export let contextOf: (fs: SqlFileSystem) => FsContext

export class SqlFileSystem implements FileSystem {
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
  bind(q: Queryable): SqlFileSystem {
    return new SqlFileSystem({ ...this.#ctx, q })
  }

  /**
   * This filesystem narrowed by `policy`: what it refuses is refused on top of this one's own
   * policy (both must allow). The way to confine tools, servers and mounts to part of a tree.
   *
   * @example
   * const workspace = agent.fs.restrict({ read: ['/ws', '/ws/**'], write: ['/ws/**'] })
   */
  restrict(policy: FsPolicy): SqlFileSystem {
    return new SqlFileSystem({ ...this.#ctx, policy: new CompiledPolicy(policy, this.#ctx.policy) })
  }

  transaction<T>(fn: (fs: SqlFileSystem) => Promise<T>): Promise<T> {
    return this.#ctx.q.transaction((tx) => fn(new SqlFileSystem({ ...this.#ctx, q: tx })))
  }

  #stats(row: InodeRow, blocks?: number): Stats {
    return new Stats(row, {
      blksize: this.#ctx.chunkSize,
      ...(blocks === undefined ? {} : { blocks }),
    })
  }

  /**
   * Stats with honest `blocks` for files that may have holes: above 64 KiB the stored chunks are
   * counted (an index-only scan); smaller files report their size in 512-byte blocks.
   */
  async #statsOf(row: InodeRow): Promise<Stats> {
    if ((row.mode & S_IFMT) !== S_IFREG || row.size <= SPARSE_STAT_THRESHOLD)
      return this.#stats(row)
    const { rows } = await this.#ctx.q.execute<{ n: number }>({
      sql: 'SELECT COUNT(*) AS n FROM fs_data WHERE ino = ?',
      params: [row.ino],
    })
    const stored = Math.min(row.size, (rows[0]?.n ?? 0) * this.#ctx.chunkSize)
    return this.#stats(row, Math.ceil(stored / 512))
  }

  /** The policy's checks on `q` (the transaction of the change they guard). */
  #gateOn(q: Queryable): PolicyGate | undefined {
    const { policy, ...ctx } = this.#ctx
    if (!policy) return undefined
    return new PolicyGate(policy, q, new SqlFileSystem({ ...ctx, q }))
  }

  /**
   * Runs `op`; with a policy, after `check` and in the same transaction, so nothing — another
   * call of this process, another process — can change what was checked before `op` runs on
   * it (a symlink swapped in between, say).
   */
  #guarded<T>(
    check: (gate: PolicyGate) => Promise<unknown>,
    op: (ctx: FsContext, fs: SqlFileSystem) => Promise<T>,
  ): Promise<T> {
    if (!this.#ctx.policy) return op(this.#ctx, this)
    return this.#withGate(async (gate, ctx) => {
      await check(gate)
      return op(ctx, new SqlFileSystem(ctx))
    })
  }

  /** Runs `fn` with the policy's gate in one transaction (only call it when there is a policy). */
  #withGate<T>(fn: (gate: PolicyGate, ctx: FsContext) => Promise<T>): Promise<T> {
    return this.#ctx.q.transaction((tx) => fn(this.#gateOn(tx)!, { ...this.#ctx, q: tx }))
  }

  /** {@link #guarded} for a read of `path`. */
  #reading<T>(
    path: string,
    syscall: string,
    op: (ctx: FsContext, fs: SqlFileSystem) => Promise<T>,
    follow = true,
  ): Promise<T> {
    return this.#guarded((gate) => gate.read(path, syscall, follow), op)
  }

  /** {@link #guarded} for a change of `path`. */
  #writing<T>(
    path: string,
    syscall: string,
    operation: FsOperation,
    check: WriteCheck,
    op: (ctx: FsContext, fs: SqlFileSystem) => Promise<T>,
  ): Promise<T> {
    return this.#guarded((gate) => gate.write(path, syscall, operation, check), op)
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
      // A read-only database reads like a read-only mount, and a full disk still reads: access
      // times simply stay as they are.
      if (!isAgentFsError(error, 'READONLY') && !isAgentFsError(error, 'FULL')) throw error
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
    const buffer = await this.#reading(path, 'open', async (ctx, fs) => {
      let node: InodeRow
      let bytes: Uint8Array
      const direct = await readRegularFile(ctx.q, path, 'open', ctx.chunkSize)
      if (direct) ({ node, bytes } = direct)
      else {
        node = (await existing(ctx.q, path, 'open')).node
        if (isDir(node.mode)) throw fsError('EISDIR', 'read', path)
        bytes = await readAll(ctx.q, node.ino, node.size, ctx.chunkSize, 'read', path)
      }
      await fs.#maybeAtime(node)
      return Buffer.isBuffer(bytes)
        ? bytes
        : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    })
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
    const append = mode === 'a' || flag.startsWith('a')
    const bytes = toBytes(data, opts.encoding, 'open')
    await this.#writing(
      path,
      'open',
      'write',
      { create: 'create', destroys: (node) => !append && node.size > 0 },
      (ctx) => content.writeData(ctx, path, bytes, append, flag.includes('x'), opts),
    )
  }

  async truncate(path: string, length = 0): Promise<void> {
    await this.#writing(
      path,
      'truncate',
      'write',
      { destroys: (node) => length < node.size },
      (ctx) => content.truncate(ctx, path, length),
    )
  }

  async unlink(path: string): Promise<void> {
    await this.#writing(path, 'unlink', 'delete', { follow: false, replaces: true }, (ctx) =>
      ns.unlink(ctx, path),
    )
  }

  async rmdir(path: string): Promise<void> {
    await this.#writing(path, 'rmdir', 'delete', { follow: false, replaces: true }, (ctx) =>
      ns.rmdir(ctx, path),
    )
  }

  async mkdir(path: string, options?: MkdirOptions | number): Promise<string | undefined> {
    return this.#writing(path, 'mkdir', 'create', {}, (ctx) => ns.mkdir(ctx, path, options))
  }

  async rm(path: string, options: RmOptions = {}): Promise<void> {
    await this.#writing(path, 'rm', 'delete', { follow: false, replaces: true }, (ctx) =>
      ns.rm(ctx, path, options),
    )
  }

  async rename(from: string, to: string): Promise<void> {
    await this.#guarded(
      async (gate) => {
        await gate.write(from, 'rename', 'rename', { follow: false, replaces: true })
        await gate.write(to, 'rename', 'rename', { follow: false, replaces: true })
      },
      (ctx) => ns.rename(ctx, from, to),
    )
  }

  async link(existing: string, newPath: string): Promise<void> {
    await this.#guarded(
      async (gate) => {
        await gate.link(existing, 'link')
        await gate.write(newPath, 'link', 'link', { follow: false })
      },
      (ctx) => ns.link(ctx, existing, newPath),
    )
  }

  async symlink(target: string, path: string): Promise<void> {
    await this.#writing(path, 'symlink', 'symlink', { follow: false }, (ctx) =>
      ns.symlink(ctx, target, path),
    )
  }

  async readlink(path: string): Promise<string> {
    return this.#reading(
      path,
      'readlink',
      async ({ q }) => {
        const { node } = await existing(q, path, 'readlink', false)
        if (!isLnk(node.mode)) throw fsError('EINVAL', 'readlink', path)
        const { rows } = await q.execute<{ target: string }>({
          sql: 'SELECT target FROM fs_symlink WHERE ino = ?',
          params: [node.ino],
        })
        return rows[0]?.target ?? ''
      },
      false,
    )
  }

  async realpath(path: string): Promise<string> {
    return this.#reading(path, 'realpath', async ({ q }) => {
      const { node } = await existing(q, path, 'realpath')
      return node.ino === ROOT_INO ? '/' : pathOf(q, node.ino)
    })
  }

  async exists(path: string): Promise<boolean> {
    try {
      await this.#reading(path, 'access', ({ q }) => existing(q, path, 'access'))
      return true
    } catch (error) {
      if (isFsError(error)) return false
      throw error
    }
  }

  async access(path: string, mode = 0): Promise<void> {
    await this.#guarded(
      async (gate) => {
        await gate.read(path, 'access')
        if (mode & 2) await gate.write(path, 'access', 'write')
      },
      async ({ q }) => {
        const { node } = await existing(q, path, 'access')
        if (mode & X_OK && !isDir(node.mode) && (node.mode & 0o111) === 0)
          throw fsError('EACCES', 'access', path)
      },
    )
  }

  async stat(path: string): Promise<Stats> {
    return this.#reading(path, 'stat', async ({ q }, fs) =>
      fs.#statsOf((await existing(q, path, 'stat')).node),
    )
  }

  async lstat(path: string): Promise<Stats> {
    return this.#reading(
      path,
      'lstat',
      async ({ q }, fs) => fs.#statsOf((await existing(q, path, 'lstat', false)).node),
      false,
    )
  }

  async chmod(path: string, mode: number): Promise<void> {
    if (!Number.isInteger(mode) || mode < 0) throw fsError('EINVAL', 'chmod', path)
    await this.#writing(path, 'chmod', 'chmod', {}, (ctx) =>
      write(ctx, async (q, now) => {
        const { node } = await existing(q, path, 'chmod')
        await touchMeta(q, node.ino, now, {
          mode: (node.mode & S_IFMT) | (mode & MODE_PERMISSION_MASK),
        })
      }),
    )
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
    await this.#writing(path, syscall, 'chown', { follow }, (ctx) =>
      write(ctx, async (q, now) => {
        const { node } = await existing(q, path, syscall, follow)
        await touchMeta(q, node.ino, now, {
          uid: uid === -1 ? node.uid : uid,
          gid: gid === -1 ? node.gid : gid,
        })
      }),
    )
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
    await this.#writing(path, syscall, 'utimes', { follow }, (ctx) =>
      write(ctx, async (q, now) => {
        const { node } = await existing(q, path, syscall, follow)
        await touchMeta(q, node.ino, now, {
          atime: a.sec,
          atime_nsec: a.nsec,
          mtime: m.sec,
          mtime_nsec: m.nsec,
        })
      }),
    )
  }

  async copyFile(src: string, dest: string, mode = 0): Promise<void> {
    await this.#guarded(
      async (gate) => {
        await gate.read(src, 'copyfile')
        await gate.write(dest, 'copyfile', 'write', {
          create: 'create',
          destroys: (node) => node.size > 0,
        })
      },
      (ctx) => content.copyFile(ctx, src, dest, mode),
    )
  }

  async mknod(path: string, mode: number, rdev = 0): Promise<void> {
    await this.#writing(path, 'mknod', 'create', {}, (ctx) => ns.mknod(ctx, path, mode, rdev))
  }

  readdir(path: string): Promise<string[]>
  readdir(path: string, options: ReaddirOptions & { withFileTypes: true }): Promise<Dirent[]>
  readdir(path: string, options: ReaddirOptions): Promise<string[] | Dirent[]>
  async readdir(path: string, options: ReaddirOptions = {}): Promise<string[] | Dirent[]> {
    if (this.#ctx.policy)
      return this.#withGate(async (gate) => {
        const real = await gate.read(path, 'scandir')
        const entries = (await gate.unchecked.readdir(path, options)) as (string | Dirent)[]
        return gate.readableEntries(path, real, entries) as string[] | Dirent[]
      })
    return listDirectory(this.#ctx.q, path, options)
  }

  async statfs(_path: string): Promise<StatFs> {
    return statfsOf(this.#ctx.q, this.#ctx.chunkSize)
  }

  /**
   * Opens a file like `fs.promises.open`: flags `r`, `r+`, `w`, `w+`, `wx`, `a`, `a+`, `ax`, …
   * or `O_*` numbers; `mode` applies when the file is created.
   */
  async open(path: string, flags: string | number = 'r', mode = 0o666): Promise<FileHandle> {
    const want = parseFlags(flags, path)
    const policy = this.#ctx.policy
    return openHandle(
      this,
      path,
      want,
      async (q, now) => {
        // With a policy the check runs in the transaction that creates or truncates the file.
        if (policy) {
          const gate = this.#gateOn(q)!
          if (want.read) await gate.read(path, 'open')
          if (want.write || want.truncate)
            await gate.write(path, 'open', 'write', {
              create: 'create',
              destroys: (node) => want.truncate && want.write && node.size > 0,
            })
        }
        return openOrCreate(this.#ctx, q, now, path, want, mode)
      },
      policy !== undefined,
    )
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
    const { node, filter } = this.#ctx.policy
      ? await this.#withGate((gate, { q }) => openDirectory(q, path, gate))
      : await openDirectory(this.#ctx.q, path)
    return new Dir(
      this.#ctx.q,
      node.ino,
      normalizePath(path),
      Math.max(1, options.bufferSize ?? 256),
      filter,
    )
  }

  /** Paths matching a glob pattern, listed with one query below the pattern's static prefix. */
  async glob(pattern: string, options?: GlobOptions): Promise<GlobMatch[]> {
    if (!this.#ctx.policy) return glob(this.#ctx.q, pattern, options)
    return this.#withGate(async (gate, { q }) => {
      const cwd = normalizePath(options?.cwd ?? '/', 'glob')
      await gate.read(cwd, 'glob')
      // Each match is judged where it really is: the pattern's static part may pass links.
      return gate.readablePaths(await glob(q, pattern, options), 'glob', false)
    })
  }

  /** Lines matching a pattern in files below `options.path`, like `grep -rn`. */
  async grep(pattern: string | RegExp, options?: GrepOptions): Promise<GrepMatch[]> {
    if (!this.#ctx.policy) return grep(this.#ctx.q, this.#ctx.chunkSize, pattern, options)
    return this.#withGate(async (gate, { q }) => {
      await gate.read(options?.path ?? '/', 'grep')
      return gate.readablePaths(await grep(q, this.#ctx.chunkSize, pattern, options), 'grep')
    })
  }

  /**
   * Copies a file, a symlink or (with `recursive`) a directory tree, in one transaction. Like
   * `fs.promises.cp`: `force` (default true) replaces existing files, `errorOnExist` turns a
   * skipped existing file into EEXIST, `dereference` copies what links point to.
   */
  async cp(src: string, dest: string, options: CpOptions = {}): Promise<void> {
    await this.transaction((tx) => copyTree(tx, src, dest, options))
  }

  /** What this filesystem runs its SQL on: the database, or the transaction it was bound to. */
  get queryable(): Queryable {
    return this.#ctx.q
  }

  /** The clock its timestamps come from (the database's). */
  get clock(): Clock {
    return this.#ctx.clock
  }

  static {
    contextOf = (fs) => fs.#ctx
  }
}

/**
 * Creates the filesystem over an open AgentFS database.
 *
 * @example
 * const fs = createFileSystem(await openDatabase({ driver }))
 * await fs.writeFile('/notes/todo.md', '- ship it\n')
 */
export function createFileSystem(
  db: AgentDatabase,
  options: FileSystemOptions = {},
): SqlFileSystem {
  return new SqlFileSystem({
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

export type { FileSystemOptions }
