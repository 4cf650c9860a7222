import type { Readable, Writable } from 'node:stream'
import {
  type ChunkFormat,
  type Clock,
  fsError,
  isFsError,
  normalizePath,
  type Queryable,
  STORE_DATABASE,
  withMessage,
} from '@agentfs/core'
import { type Blame, type BlameOptions, blameFile } from '../history/blame.js'
import {
  type DeletedEntry,
  listDeleted,
  type Undeleted,
  undeleteInto,
} from '../history/undelete.js'
import {
  type FileVersion,
  fileHistory,
  type HistoryOptions,
  readVersion,
} from '../history/versions.js'
import { fsMode, fsRequiredMode } from '../node/node-args.js'
import type { Judged } from '../policy/content-judge.js'
import { Guard } from '../policy/guard.js'
import { CompiledPolicy, type FsPolicy } from '../policy/policy.js'
import type { SearchOptions, SearchResult } from '../search/fulltext/full-text.js'
import {
  type ResolvedSearchSettings,
  readSettings,
  type SearchSettings,
  writeSettings,
} from '../search/fulltext/settings.js'
import { type Upkeep, updateIndex } from '../search/fulltext/upkeep.js'
import type { GlobMatch, GlobOptions, GrepMatch, GrepOptions } from '../search/search.js'
import { type EmbeddingUpdate, embedPending, notConfigured } from '../search/semantic/upkeep.js'
import type { Dirent, Stats } from '../stats.js'
import { readRange } from '../storage/chunks.js'
import { isDir } from '../storage/inode.js'
import { type LookupOptions, lookupSoon } from '../storage/resolver.js'
import type {
  CpOptions,
  Encoding,
  FileSystem,
  MkdirOptions,
  Mode,
  ReaddirOptions,
  ReadFileOptions,
  RmOptions,
  StatFs,
  TimeLike,
  WriteData,
  WriteFileOptions,
} from '../types.js'
import { knownHash } from './content-hash.js'
import * as content from './content-ops.js'
import { existing, type FsContext, toBytes, toTimestamp, writeFileOptions } from './context.js'
import { copyTree } from './copy-tree.js'
import { Dir } from './dir.js'
import { type FileHandle, openExisting, openHandle } from './file-handle.js'
import { type OpenMode, parseFlags } from './flags.js'
import { type FileHash, type HashOptions, hashFile } from './hash.js'
import { type InodeReads, inodeReads } from './inode-reads.js'
import { openOrCreate, statfsOf } from './listing-ops.js'
import * as meta from './metadata-ops.js'
import { contentTypeOf, deriveMimeType, type MimeInfo, storedMimeType } from './mime.js'
import * as ns from './namespace-ops.js'
import {
  createReadStream,
  createWriteStream,
  type ReadStreamOptions,
  type WriteStreamOptions,
} from './streams.js'
import { applyTextPatch, type TextPatchOptions, type TextPatchResult } from './text-patch.js'
import { type WatchEvent, type WatchOptions, watchGuarded } from './watch.js'
import { writeOnce } from './write-once.js'

/**
 * The context of a filesystem, for FileHandle and the streams of this package (not exported from
 * the package: the context is internal).
 */
export let contextOf: (fs: SqlFileSystem) => FsContext

/** How an open that neither creates nor truncates looks its file up. */
const OPEN_EXISTING: LookupOptions = { followLast: true, syscall: 'open' }

/**
 * The AgentFS filesystem: POSIX semantics over the spec's inode, dentry and chunk tables, with
 * `node:fs/promises` names. Every mutating call is one transaction (a savepoint inside
 * {@link SqlFileSystem.transaction}).
 */
export class SqlFileSystem implements FileSystem {
  readonly #ctx: FsContext
  /** Policy checks, each in the transaction of what it guards. */
  readonly #guard: Guard

  /** @internal Use {@link createFileSystem}. */
  constructor(ctx: FsContext) {
    this.#ctx = ctx
    this.#guard = new Guard(ctx, (c) => new SqlFileSystem(c))
    // A policy or enforced permissions decide by path: no way around them by inode number.
    this.inodes = ctx.policy === undefined && ctx.caller === undefined ? inodeReads(ctx) : undefined
  }

  /** Reads by inode number (see `FileSystem.inodes`); undefined with a policy or a caller. */
  readonly inodes: InodeReads | undefined

  /** `fs_config.chunk_size` of the database. */
  get chunkSize(): number {
    return this.#ctx.chunkSize
  }

  /** How this filesystem's database stores file content (chunk size and compression). */
  get chunks(): ChunkFormat {
    return this.#ctx.chunks
  }

  /** The database this filesystem runs on (see `databaseOf` of `@agentfs/core`). */
  get [STORE_DATABASE](): Queryable {
    return this.#ctx.q
  }

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

  /**
   * Runs `fn` with a filesystem bound to one transaction: everything it does commits together
   * or not at all.
   */
  transaction<T>(fn: (fs: SqlFileSystem) => Promise<T>): Promise<T> {
    return this.#ctx.q.transaction((tx) => fn(new SqlFileSystem({ ...this.#ctx, q: tx })))
  }

  readFile(path: string): Promise<Buffer>
  readFile(path: string, options: Encoding | { encoding: Encoding }): Promise<string>
  readFile(path: string, options?: Encoding | ReadFileOptions): Promise<Buffer | string>
  /** With `{ version }`: that version of the file (a token from `history` or `stat`). */
  async readFile(path: string, options?: Encoding | ReadFileOptions): Promise<Buffer | string> {
    const encoding = typeof options === 'string' ? options : options?.encoding
    const version = typeof options === 'string' ? undefined : options?.version
    const buffer = await this.#guard.reading(path, 'open', (ctx) =>
      version === undefined ? meta.readWhole(ctx, path) : readVersion(ctx, path, version),
    )
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
  async #writeData(
    path: string,
    data: WriteData,
    opts: WriteFileOptions & { readonly mode?: number },
    mode: 'w' | 'a',
  ): Promise<void> {
    if (opts.message !== undefined) {
      const { message, ...rest } = opts
      return withMessage(message, () => this.#writeData(path, data, rest, mode))
    }
    const flag = opts.flag ?? mode
    const append = mode === 'a' || flag.startsWith('a')
    const bytes = toBytes(data, opts.encoding, 'open')
    if (opts.idempotencyKey !== undefined) {
      // The write, the key's record and the feed row commit together; a retry changes nothing.
      await writeOnce(this.#ctx.q, this.#ctx.clock, mode, path, bytes, opts, (tx, rest) =>
        this.bind(tx).#writeData(path, bytes, writeFileOptions(rest), mode),
      )
      return
    }
    await this.#guard.writing(
      path,
      'open',
      'write',
      { create: 'create', destroys: (node) => !append && node.size > 0 },
      (ctx) => content.writeData(ctx, path, bytes, append, flag.includes('x'), opts),
      'write',
    )
  }

  async truncate(path: string, length = 0): Promise<void> {
    await this.#guard.writing(
      path,
      'truncate',
      'write',
      { destroys: (node) => length < node.size },
      (ctx) => content.truncate(ctx, path, length),
      'write',
    )
  }

  async unlink(path: string): Promise<void> {
    await this.#guard.writing(
      path,
      'unlink',
      'delete',
      { follow: false, replaces: true },
      (ctx) => ns.unlink(ctx, path),
      'remove',
    )
  }

  async rmdir(path: string): Promise<void> {
    await this.#guard.writing(
      path,
      'rmdir',
      'delete',
      { follow: false, replaces: true },
      (ctx) => ns.rmdir(ctx, path),
      'remove',
    )
  }

  async mkdir(path: string, options?: MkdirOptions | Mode): Promise<string | undefined> {
    return this.#guard.writing(path, 'mkdir', 'create', {}, (ctx) => ns.mkdir(ctx, path, options))
  }

  async rm(path: string, options: RmOptions = {}): Promise<void> {
    await this.#guard.writing(
      path,
      'rm',
      'delete',
      { follow: false, replaces: true },
      (ctx) => ns.rm(ctx, path, options),
      'remove',
    )
  }

  async rename(from: string, to: string): Promise<void> {
    await this.#guard.guarded(
      async (gate) => {
        await gate.write(from, 'rename', 'rename', { follow: false, replaces: true })
        await gate.write(to, 'rename', 'rename', { follow: false, replaces: true })
        await gate.permissions?.movesDirectory(from, to)
      },
      (ctx) => ns.rename(ctx, from, to),
      [
        { path: from, syscall: 'rename', under: true },
        { path: to, syscall: 'rename', follow: false },
      ],
    )
  }

  async link(existing: string, newPath: string): Promise<void> {
    await this.#guard.guarded(
      async (gate) => {
        await gate.link(existing, 'link')
        await gate.write(newPath, 'link', 'link', { follow: false })
        await this.#guard.refuseJudgedLink(gate, existing, newPath)
      },
      (ctx) => ns.link(ctx, existing, newPath),
    )
  }

  async symlink(target: string, path: string): Promise<void> {
    await this.#guard.writing(path, 'symlink', 'symlink', { follow: false }, (ctx) =>
      ns.symlink(ctx, target, path),
    )
  }

  async readlink(path: string): Promise<string> {
    return this.#guard.reading(path, 'readlink', (ctx) => meta.readlink(ctx, path), false)
  }

  async realpath(path: string): Promise<string> {
    return this.#guard.reading(path, 'realpath', (ctx) => meta.realpath(ctx, path))
  }

  async exists(path: string): Promise<boolean> {
    try {
      await this.#guard.reading(path, 'access', ({ q }) => existing(q, path, 'access'))
      return true
    } catch (error) {
      if (isFsError(error)) return false
      throw error
    }
  }

  async access(path: string, mode = 0): Promise<void> {
    await this.#guard.guarded(
      async (gate) => {
        await gate.read(path, 'access')
        await gate.access(path, mode)
        if (mode & 2) await gate.write(path, 'access', 'write')
      },
      (ctx) => meta.access(ctx, path, mode),
    )
  }

  /**
   * The SHA-256 of a file's bytes, of a byte range, or of its canonical text (see `hashFile`):
   * `{ hash: 'sha256:…', size, version, canonical }`. Cached by inode and version token.
   */
  hash(path: string, options?: HashOptions): Promise<FileHash> {
    return hashFile(this, path, options, (ino, version) => knownHash(this.#ctx, ino, version))
  }

  /**
   * Applies a diff-match-patch patch text to a text file in one transaction, every hunk or none
   * (PATCH_FAILED); see `applyTextPatch`. `ifMatch` refuses a file changed since (CONFLICT).
   */
  applyTextPatch(
    path: string,
    patch: string,
    options?: TextPatchOptions,
  ): Promise<TextPatchResult> {
    return this.transaction((fs) => applyTextPatch(fs, path, patch, options))
  }

  /**
   * A file's media type: the one stored with it (`writeFile`'s `mimeType`, copied by `cp` and
   * `copyFile`), else derived from its content's magic number, then its name, then text or
   * binary; and whether its content reads as text. Follows links; a directory is EISDIR.
   */
  async mimeType(path: string): Promise<MimeInfo> {
    return this.#guard.reading(path, 'stat', async (ctx) => {
      const { node } = await existing(ctx.q, path, 'stat')
      if (isDir(node.mode)) throw fsError('EISDIR', 'stat', path)
      const stored = await storedMimeType(ctx.q, node.ino)
      const head = await readRange(ctx.q, node.ino, node.size, ctx.chunks, 0, 8192)
      return {
        mimeType: stored ?? deriveMimeType(normalizePath(path), head),
        contentType: contentTypeOf(head),
        stored: stored !== undefined,
      }
    })
  }

  // Not `async`: the guard's promise is returned as it is (an async method would wrap it in
  // one more, measured on `stat`, the hottest read).
  stat(path: string): Promise<Stats> {
    return this.#guard.reading(path, 'stat', (ctx) => meta.statPath(ctx, path, 'stat', true))
  }

  lstat(path: string): Promise<Stats> {
    return this.#guard.reading(
      path,
      'lstat',
      (ctx) => meta.statPath(ctx, path, 'lstat', false),
      false,
    )
  }

  async chmod(path: string, mode: Mode): Promise<void> {
    const bits = fsRequiredMode(mode, 'chmod', path)
    await this.#guard.writing(path, 'chmod', 'chmod', {}, (ctx) => meta.chmod(ctx, path, bits))
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
    await this.#guard.writing(path, syscall, 'chown', { follow, owner: { uid, gid } }, (ctx) =>
      meta.chown(ctx, path, uid, gid, follow, syscall),
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
    await this.#guard.writing(path, syscall, 'utimes', { follow }, (ctx) =>
      meta.utimes(ctx, path, a, m, follow, syscall),
    )
  }

  async copyFile(src: string, dest: string, mode = 0): Promise<void> {
    await this.#guard.guarded(
      async (gate) => {
        await gate.read(src, 'copyfile')
        await gate.write(dest, 'copyfile', 'write', {
          create: 'create',
          destroys: (node) => node.size > 0,
        })
      },
      (ctx) => content.copyFile(ctx, src, dest, mode),
      [{ path: dest, syscall: 'copyfile' }],
    )
  }

  async mknod(path: string, mode: number, rdev = 0): Promise<void> {
    await this.#guard.writing(path, 'mknod', 'create', {}, (ctx) => ns.mknod(ctx, path, mode, rdev))
  }

  readdir(path: string): Promise<string[]>
  readdir(path: string, options: ReaddirOptions & { withFileTypes: true }): Promise<Dirent[]>
  readdir(path: string, options: ReaddirOptions): Promise<string[] | Dirent[]>
  async readdir(path: string, options: ReaddirOptions = {}): Promise<string[] | Dirent[]> {
    return this.#guard.readdir(path, options)
  }

  async statfs(_path: string): Promise<StatFs> {
    return statfsOf(this.#ctx.q, this.#ctx.chunkSize)
  }

  /**
   * Opens a file like `fs.promises.open`: flags `r`, `r+`, `w`, `w+`, `wx`, `a`, `a+`, `ax`, …
   * or `O_*` numbers; `mode` applies when the file is created.
   */
  // Not `async`: an open that neither creates nor truncates, with nothing to check, is one
  // look-up outside any transaction, answered with one promise when the connection answers at
  // once (W6's open).
  open(path: string, flags: string | number = 'r', mode: Mode = 0o666): Promise<FileHandle> {
    try {
      const want = parseFlags(flags, path)
      const bits = fsMode(mode, 'open', path) ?? 0o666
      if (want.create || want.truncate || this.#guard.checks)
        return this.#openChecked(path, want, bits)
      const found = lookupSoon(this.#ctx.q, path, OPEN_EXISTING)
      if (found instanceof Promise)
        return found.then(({ node }) => openExisting(this, path, want, node))
      return Promise.resolve(openExisting(this, path, want, found.node))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** {@link open} creating or truncating the file, or with a policy or permissions to check. */
  #openChecked(path: string, want: OpenMode, bits: number): Promise<FileHandle> {
    let judged: Judged | undefined
    return openHandle(
      this,
      path,
      want,
      async (q, now, note) => {
        judged = await this.#guard.checkOpen(q, path, want)
        const ino = await openOrCreate(this.#ctx, q, now, path, want, bits, note)
        // Created or truncated: the rules see what the open left.
        if (judged && (want.truncate || judged.before === null))
          await this.#guard.judgeOpen(q, judged)
        return ino
      },
      this.#ctx.policy !== undefined,
      () => judged,
    )
  }

  /**
   * Changes of `path` like `node:fs/promises` `watch`: an async iterable of
   * `{ eventType: 'rename' | 'change', filename }`, fed by the change feed, so it sees changes
   * from other processes and FUSE mounts of the same database. Stop it with `signal`.
   */
  watch(path: string, options: WatchOptions = {}): AsyncIterable<WatchEvent<string | Buffer>> {
    return watchGuarded(this.#ctx, this.#guard, path, options)
  }

  /** The changes of a file, newest first, with who made them and whether each is readable. */
  history(path: string, options?: HistoryOptions): Promise<FileVersion[]> {
    return this.#guard.reading(path, 'open', (ctx) => fileHistory(ctx, path, options))
  }

  /**
   * Who wrote each line: for every line of the file (or of `options.version`), the change that
   * gave it its current text — its session, tool call and message — from the kept versions
   * (`versions: true`) and the feed. Lines the history cannot account for are unattributed,
   * never guessed. Renames keep a file's history; after a restore, lines keep their authors.
   *
   * @example
   * const { lines } = await fs.blame('/src/app.ts')
   * for (const l of lines) console.log(l.line, l.change?.toolCall?.name ?? '?', l.text)
   */
  blame(path: string, options?: BlameOptions): Promise<Blame> {
    return this.#guard.reading(path, 'open', (ctx) => blameFile(ctx, path, options))
  }

  /**
   * Brings back a deleted file, link or directory tree as it was when it was deleted — from kept
   * versions (`versions: true`) or the newest snapshot taken before the deletion — as new
   * changes in one transaction (missing parents are made). Refused (EEXIST) when the path
   * exists; ENOENT when nothing kept it. The changes carry `options.message`, by default
   * `undelete <path> (deleted by change #N)`.
   *
   * @example
   * for (const d of await fs.deleted('/notes')) console.log(d.path, d.recoverable)
   * await fs.undelete('/notes/plan.md')
   */
  async undelete(path: string, options: { message?: string } = {}): Promise<Undeleted> {
    const target = normalizePath(path, 'undelete')
    if (target === '/')
      throw fsError('EINVAL', 'undelete', path, { hint: 'the root is never deleted' })
    return this.transaction((tx) =>
      undeleteInto(tx, contextOf(tx).q, path, target, options.message),
    )
  }

  /**
   * What can be undeleted at or under `dir`: deleted paths that do not exist now, newest
   * deletion first (at most `limit`, default 100), each with where `undelete` would take it from
   * (`null`: nothing kept it).
   */
  async deleted(dir = '/', options: { limit?: number } = {}): Promise<DeletedEntry[]> {
    const limit = options.limit ?? 100
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 10_000)
      throw fsError('EINVAL', 'deleted', dir, { hint: `limit must be 1 … 10000, got ${limit}` })
    return this.#ctx.q.transaction(async (tx) => {
      const view = this.bind(tx)
      // A policy shows only what it lets be read (before the limit: hidden paths take no place).
      const policy = this.#ctx.policy
      return listDeleted(
        tx,
        dir,
        limit,
        (p) => view.exists(p),
        policy ? (p) => policy.readable(p) : undefined,
      )
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
    const { node, filter } = await this.#guard.opendir(path)
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
    return this.#guard.glob(pattern, options)
  }

  /** Lines matching a pattern in files below `options.path`, like `grep -rn`. */
  async grep(pattern: string | RegExp, options?: GrepOptions): Promise<GrepMatch[]> {
    return this.#guard.grep(pattern, options)
  }

  /**
   * Files ranked by how well they match `query` (BM25): words, `"phrases"`, `prefix*`, all
   * required. The index is brought up to date first, so it never finds a file by words it no
   * longer holds. Each hit has the lines where the words are.
   */
  async search(query: string, options?: SearchOptions): Promise<SearchResult> {
    return this.#guard.search(query, options)
  }

  /**
   * Brings the full-text index up to date now, or with `rebuild` from nothing (a search does
   * it anyway): before the database goes to readers that cannot write. READONLY on a
   * read-only database; EPERM under a policy or enforced permissions.
   */
  async updateSearchIndex(options?: { rebuild?: boolean; timeoutMs?: number }): Promise<Upkeep> {
    if (this.#ctx.policy || this.#ctx.caller)
      throw fsError('EPERM', 'search', undefined, {
        hint: 'the search index is updated through an unrestricted filesystem',
      })
    return updateIndex(this.#ctx.q, this.#ctx.chunks, options)
  }

  /**
   * Makes the vectors semantic search compares (see `updateEmbeddings`) with this filesystem's
   * embedder. MISUSE without one; EPERM under a policy or enforced permissions.
   */
  async updateEmbeddings(options?: {
    maxFiles?: number
    timeoutMs?: number
  }): Promise<EmbeddingUpdate> {
    if (this.#ctx.policy || this.#ctx.caller)
      throw fsError('EPERM', 'search', undefined, {
        hint: 'vectors are made through an unrestricted filesystem',
      })
    if (!this.#ctx.embedder) throw notConfigured()
    return embedPending(this.#ctx.q, this.#ctx.chunks, this.#ctx.embedder, options)
  }

  /** Which files the full-text index holds (the database's settings). */
  async searchSettings(): Promise<ResolvedSearchSettings> {
    return readSettings(this.#ctx.q)
  }

  /**
   * Changes which files the full-text index holds; the index is emptied in the same
   * transaction and rebuilt by the next search. Refused (EPERM) under a policy or enforced
   * permissions: the settings are the database owner's.
   */
  async setSearchSettings(settings: SearchSettings): Promise<ResolvedSearchSettings> {
    if (this.#ctx.policy || this.#ctx.caller)
      throw fsError('EPERM', 'search', undefined, {
        hint: 'the search settings are changed through an unrestricted filesystem',
      })
    return writeSettings(this.#ctx.q, settings)
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
