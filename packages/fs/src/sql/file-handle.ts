import { createInterface, type Interface } from 'node:readline'
import { Readable } from 'node:stream'
import type { ReadableStream } from 'node:stream/web'
import { FsError, fsError, normalizePath, type Queryable, type Timestamp } from '@agentfs/core'
import { fsRequiredMode } from '../node/node-args.js'
import { applyRules, contentOfIno } from '../policy/content-judge.js'
import type { ContentRule } from '../policy/policy.js'
import { Stats } from '../stats.js'
import { type ReadAt, readAll, readAt, readRange, resize, writeRange } from '../storage/chunks.js'
import type { Holds } from '../storage/holds.js'
import { type InodeRow, isDir, touchedVersion, versionOf } from '../storage/inode.js'
import { loadInode, touchContent, touchMeta } from '../storage/mutate.js'
import type { Encoding, TimeLike, WriteData } from '../types.js'
import { ConflictError } from './conflict.js'
import { hashBefore, hashContent } from './content-hash.js'
import { type FsContext, type NoteChange, write } from './context.js'
import type { OpenMode } from './flags.js'
import { contextOf, type SqlFileSystem } from './sql-file-system.js'
import {
  ReadStream,
  type ReadStreamOptions,
  WriteStream,
  type WriteStreamOptions,
} from './streams.js'

let nextFd = 1000

/** A handle collected without `close()` stops holding its file (as Node's FileHandle closes). */
const unclosed = new FinalizationRegistry<{ holds: Holds; ino: number }>(({ holds, ino }) => {
  void holds.release(ino).catch(() => {})
})

/** Options of the object form of {@link FileHandle.write}. */
export interface HandleWriteOptions {
  readonly offset?: number
  readonly length?: number
  /** Where to write; omit (or null) to write at the handle's cursor. */
  readonly position?: number | null
  /** Refuse the write with a ConflictError unless the file's version is this one. */
  readonly ifMatch?: string
}

/**
 * An open file, shaped like Node's `FileHandle`. Every write is its own transaction; reads and
 * writes at a `position` do not move the cursor (pread/pwrite); `O_APPEND` writes always land at
 * the end, atomically. Closing twice is fine; any other call after `close()` is `EBADF`.
 *
 * An open handle keeps its file when the file's last name is removed (unlink, or a rename over
 * it), as POSIX does: reads, writes and `stat` (nlink 0) go on, and the file is freed when the
 * last handle of this process on it closes (or, after a crash, by the next process that opens
 * the database; `agentfs fsck`). Handles of other processes do not keep it.
 */
export class FileHandle {
  readonly #fd: number
  readonly path: string
  readonly #fs: SqlFileSystem
  readonly #ino: number
  readonly #mode: OpenMode
  #position = 0
  #closed = false
  /** The content rules of the policy that judge this file (each write is judged on its own). */
  readonly #content: { readonly real: string; readonly rules: readonly ContentRule[] } | undefined

  /** @internal Use `fs.open()`. */
  constructor(
    fs: SqlFileSystem,
    ino: number,
    path: string,
    mode: OpenMode,
    content?: { readonly real: string; readonly rules: readonly ContentRule[] },
  ) {
    this.#content = content
    this.#fd = nextFd++
    this.#fs = fs
    this.#ino = ino
    this.path = path
    this.#mode = mode
    const holds = contextOf(fs).holds
    holds.hold(ino)
    unclosed.register(this, { holds, ino }, this)
  }

  /** A process-unique descriptor number (not a kernel fd); -1 once closed, as Node's. */
  get fd(): number {
    return this.#closed ? -1 : this.#fd
  }

  /** Streams need an open handle: Node rejects a closed one's descriptor (-1) as out of range. */
  #openFd(): void {
    if (this.#closed)
      throw Object.assign(
        new RangeError(
          'The value of "fd" is out of range. It must be >= 0 && <= 2147483647. Received -1',
        ),
        { code: 'ERR_OUT_OF_RANGE' },
      )
  }

  get #q(): Queryable {
    return contextOf(this.#fs).q
  }

  #check(syscall: string, need?: 'read' | 'write'): void {
    if (this.#closed) throw fsError('EBADF', syscall)
    if (need === 'read' && !this.#mode.read)
      throw fsError('EBADF', syscall, undefined, { hint: 'the handle was not opened for reading' })
    if (need === 'write' && !this.#mode.write)
      throw fsError('EBADF', syscall, undefined, { hint: 'the handle was not opened for writing' })
  }

  /** `deny: ['delete']` refuses a change that destroys existing bytes through a handle too. */
  #refuseDestroying(syscall: string): void {
    if (contextOf(this.#fs).policy?.denies('delete'))
      throw fsError('EPERM', syscall, this.path, {
        hint: 'the policy denies delete, and this change would destroy existing content; append instead',
      })
  }

  /**
   * A write of this handle in its own transaction; with content rules on the file, they judge
   * its content before and after `fn` before the transaction commits.
   */
  #writing<T>(
    syscall: string,
    fn: (q: Queryable, now: Timestamp, note: NoteChange) => Promise<T>,
  ): Promise<T> {
    const content = this.#content
    const ctx = contextOf(this.#fs)
    if (!content) return write(ctx, fn)
    return write(ctx, async (q, now, note) => {
      const read = () =>
        contentOfIno(q, this.#fs.chunks, this.#ino, content.rules, syscall, content.real)
      const judged = { ...content, syscall, before: await read() }
      const out = await fn(q, now, note)
      applyRules(judged, await read())
      return out
    })
  }

  async #inode(q: Queryable, syscall: string): Promise<InodeRow> {
    const row = await loadInode(q, this.#ino)
    if (!row) throw fsError('EBADF', syscall, undefined, { hint: 'the file was deleted' })
    return row
  }

  /** Reads into `buffer`; with `position` null/undefined reads at the cursor and advances it. */
  // Not `async`: a read the connection answers at once costs one promise (W6's read).
  read(
    buffer?: Uint8Array,
    offset?: number,
    length?: number,
    position?: number | null,
  ): Promise<{ bytesRead: number; buffer: Uint8Array }> {
    try {
      // The defaults inside the try: a bad argument rejects, as it did from an async method.
      const into = buffer === undefined ? Buffer.alloc(16384) : buffer
      const from = offset === undefined ? 0 : offset
      const count = length === undefined ? into.byteLength - from : length
      const pos = position === undefined ? null : position
      this.#check('read', 'read')
      if (from < 0 || count < 0 || from + count > into.byteLength || (pos !== null && pos < 0))
        throw fsError('EINVAL', 'read')
      const at = pos ?? this.#position
      const found = readAt(this.#q, this.#ino, this.#fs.chunks, at, count, into, from)
      if (found instanceof Promise)
        return found.then((f) => this.#readDone(f, into, at, pos === null))
      return Promise.resolve(this.#readDone(found, into, at, pos === null))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** The answer of {@link read}: its errors, and the cursor moved when it read at the cursor. */
  #readDone(
    found: ReadAt | undefined,
    buffer: Uint8Array,
    at: number,
    atCursor: boolean,
  ): { bytesRead: number; buffer: Uint8Array } {
    if (!found) throw fsError('EBADF', 'read', undefined, { hint: 'the file was deleted' })
    if (isDir(found.mode)) throw fsError('EISDIR', 'read')
    if (atCursor) this.#position = at + found.bytesRead
    return { bytesRead: found.bytesRead, buffer }
  }

  /**
   * Writes bytes or a string. Node's forms: `write(buffer, offset?, length?, position?)`,
   * `write(buffer, { offset, length, position, ifMatch })`, `write(string, position?, encoding?)`.
   */
  async write(
    data: WriteData,
    offsetOrOptions?: number | null | HandleWriteOptions,
    lengthOrEncoding?: number | Encoding,
    position?: number | null,
  ): Promise<{ bytesWritten: number; buffer: WriteData }> {
    this.#check('write', 'write')
    let bytes: Uint8Array
    let at: number | null = null
    let ifMatch: string | undefined
    if (typeof data === 'string') {
      bytes = Buffer.from(data, typeof lengthOrEncoding === 'string' ? lengthOrEncoding : 'utf8')
      at = typeof offsetOrOptions === 'number' ? offsetOrOptions : null
    } else if (offsetOrOptions !== null && typeof offsetOrOptions === 'object') {
      const offset = offsetOrOptions.offset ?? 0
      bytes = data.subarray(offset, offset + (offsetOrOptions.length ?? data.byteLength - offset))
      at = offsetOrOptions.position ?? null
      ifMatch = offsetOrOptions.ifMatch
    } else {
      const offset = offsetOrOptions ?? 0
      const length =
        typeof lengthOrEncoding === 'number' ? lengthOrEncoding : data.byteLength - offset
      if (offset < 0 || length < 0 || offset + length > data.byteLength)
        throw fsError('EINVAL', 'write')
      bytes = data.subarray(offset, offset + length)
      at = position ?? null
    }
    if (at !== null && (!Number.isSafeInteger(at) || at < 0)) throw fsError('EINVAL', 'write')
    const ctx = contextOf(this.#fs)
    const written = await this.#writing('write', async (q, now, note) => {
      const node = await this.#inode(q, 'write')
      if (ifMatch !== undefined && versionOf(node) !== ifMatch) {
        throw new ConflictError(this.path, ifMatch, versionOf(node))
      }
      const where = this.#mode.append ? node.size : (at ?? this.#position)
      if (where < node.size) this.#refuseDestroying('write')
      const before = await hashBefore(ctx, q, node)
      const size = await writeRange(q, node.ino, node.size, this.#fs.chunks, where, bytes)
      await touchContent(q, node.ino, size, now)
      // Writing on from the end (a stream, an append) extends the hash of what was there.
      const appended =
        where === node.size ? { version: versionOf(node), size: node.size, bytes } : undefined
      const after = { version: touchedVersion(node, now), size }
      note({ op: 'write', path: this.path, ino: node.ino, appended, before, after })
      return where
    })
    if (at === null) this.#position = written + bytes.byteLength
    return { bytesWritten: bytes.byteLength, buffer: data }
  }

  /** Reads the rest of the file from the cursor (Node's behaviour). */
  readFile(): Promise<Buffer>
  readFile(options: Encoding | { encoding: Encoding }): Promise<string>
  async readFile(options?: Encoding | { encoding?: Encoding }): Promise<Buffer | string> {
    this.#check('read', 'read')
    const encoding = typeof options === 'string' ? options : options?.encoding
    const node = await this.#inode(this.#q, 'read')
    const bytes =
      this.#position === 0
        ? await readAll(this.#q, node.ino, node.size, this.#fs.chunks, 'read', this.path)
        : await readRange(
            this.#q,
            node.ino,
            node.size,
            this.#fs.chunks,
            this.#position,
            node.size - this.#position,
          )
    this.#position = Math.max(this.#position, node.size)
    const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    return encoding ? buffer.toString(encoding) : buffer
  }

  /** Replaces the file's content (from offset 0), atomically. */
  async writeFile(
    data: WriteData,
    options: { encoding?: Encoding; ifMatch?: string } | Encoding = {},
  ): Promise<void> {
    this.#check('write', 'write')
    const opts = typeof options === 'string' ? { encoding: options } : options
    const bytes = typeof data === 'string' ? Buffer.from(data, opts.encoding ?? 'utf8') : data
    const ctx = contextOf(this.#fs)
    await this.#writing('write', async (q, now, note) => {
      const node = await this.#inode(q, 'write')
      if (opts.ifMatch !== undefined && versionOf(node) !== opts.ifMatch) {
        throw new ConflictError(this.path, opts.ifMatch, versionOf(node))
      }
      if (this.#mode.append) return this.#append(ctx, q, now, note, node, bytes)
      const before = await hashBefore(ctx, q, node)
      if (node.size > 0) this.#refuseDestroying('write')
      const content = hashContent(ctx, bytes)
      note({ op: 'write', path: this.path, ino: node.ino, content, before })
      await q.execute({ sql: 'DELETE FROM fs_data WHERE ino = ?', params: [node.ino] })
      const size = await writeRange(q, node.ino, 0, this.#fs.chunks, 0, bytes)
      await touchContent(q, node.ino, size, now)
    })
    this.#position = bytes.byteLength
  }

  /** Appends, atomically. */
  async appendFile(data: WriteData, encoding?: Encoding): Promise<void> {
    this.#check('write', 'write')
    const bytes = typeof data === 'string' ? Buffer.from(data, encoding ?? 'utf8') : data
    const ctx = contextOf(this.#fs)
    await this.#writing('write', async (q, now, note) =>
      this.#append(ctx, q, now, note, await this.#inode(q, 'write'), bytes),
    )
  }

  /** Appends `bytes` to `node` in the running write, noting the change and its hashes. */
  async #append(
    ctx: FsContext,
    q: Queryable,
    now: Timestamp,
    note: NoteChange,
    node: InodeRow,
    bytes: Uint8Array,
  ): Promise<void> {
    note({
      op: 'write',
      path: this.path,
      ino: node.ino,
      appended: { version: versionOf(node), size: node.size, bytes },
      before: await hashBefore(ctx, q, node),
    })
    const size = await writeRange(q, node.ino, node.size, this.#fs.chunks, node.size, bytes)
    await touchContent(q, node.ino, size, now)
  }

  async truncate(length = 0): Promise<void> {
    this.#check('ftruncate', 'write')
    if (!Number.isSafeInteger(length) || length < 0) throw fsError('EINVAL', 'ftruncate')
    const ctx = contextOf(this.#fs)
    await this.#writing('ftruncate', async (q, now, note) => {
      const node = await this.#inode(q, 'ftruncate')
      if (length < node.size) this.#refuseDestroying('ftruncate')
      note({
        op: 'truncate',
        path: this.path,
        ino: node.ino,
        before: await hashBefore(ctx, q, node),
      })
      await resize(q, node.ino, node.size, this.#fs.chunks, length)
      await touchContent(q, node.ino, length, now)
    })
  }

  async stat(): Promise<Stats> {
    this.#check('fstat')
    return new Stats(await this.#inode(this.#q, 'fstat'), { blksize: this.#fs.chunkSize })
  }

  async chmod(mode: number | string): Promise<void> {
    const bits = fsRequiredMode(mode, 'fchmod')
    this.#check('fchmod')
    await this.#meta('fchmod', (node) => ({ mode: (node.mode & 0o170000) | (bits & 0o7777) }))
  }

  async chown(uid: number, gid: number): Promise<void> {
    this.#check('fchown')
    await this.#meta('fchown', (node) => ({
      uid: uid === -1 ? node.uid : uid,
      gid: gid === -1 ? node.gid : gid,
    }))
  }

  async utimes(atime: TimeLike, mtime: TimeLike): Promise<void> {
    this.#check('futime')
    const toTs = (t: TimeLike): Timestamp => {
      const seconds = t instanceof Date ? t.getTime() / 1000 : Number(t)
      if (!Number.isFinite(seconds)) throw fsError('EINVAL', 'futime')
      const sec = Math.floor(seconds)
      return { sec, nsec: Math.round((seconds - sec) * 1e9) }
    }
    const a = toTs(atime)
    const m = toTs(mtime)
    await this.#meta('futime', () => ({
      atime: a.sec,
      atime_nsec: a.nsec,
      mtime: m.sec,
      mtime_nsec: m.nsec,
    }))
  }

  async #meta(syscall: string, set: (node: InodeRow) => Record<string, number>): Promise<void> {
    const op = syscall === 'fchmod' ? 'chmod' : syscall === 'fchown' ? 'chown' : 'utimes'
    await write(contextOf(this.#fs), async (q, now, note) => {
      const node = await this.#inode(q, syscall)
      await touchMeta(q, node.ino, now, set(node))
      note({ op, path: this.path, ino: node.ino })
    })
  }

  /** Every write is committed when it returns; kept for API compatibility. */
  async sync(): Promise<void> {
    this.#check('fsync')
  }

  async datasync(): Promise<void> {
    this.#check('fdatasync')
  }

  /** Closes the handle; the last close of a file unlinked while open frees it. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve()
    this.#closed = true
    unclosed.unregister(this)
    return contextOf(this.#fs).holds.release(this.#ino)
  }

  /** A `fs.ReadStream` over this file (from `start`, or the cursor); it closes the handle when done unless `autoClose: false`. */
  createReadStream(options: ReadStreamOptions = {}): ReadStream {
    this.#openFd()
    return new ReadStream(this.path, async () => this, options)
  }

  /** A `fs.WriteStream` into this file (at `start`, or the cursor). */
  createWriteStream(options: WriteStreamOptions = {}): WriteStream {
    this.#openFd()
    return new WriteStream(this.path, async () => this, options)
  }

  /** The content as a web `ReadableStream` of bytes; the handle stays open. */
  readableWebStream(): ReadableStream<Uint8Array> {
    return Readable.toWeb(this.createReadStream({ autoClose: false })) as ReadableStream<Uint8Array>
  }

  /** The lines of the file (`\n` or `\r\n`), as `readline` gives them. */
  readLines(options: ReadStreamOptions = {}): Interface {
    return createInterface({ input: this.createReadStream(options), crlfDelay: Infinity })
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }
}

/**
 * A handle on `node`, found at `path` by an open that neither creates nor truncates; ENOENT when
 * there is none, EISDIR for a directory opened for writing.
 */
export function openExisting(
  fs: SqlFileSystem,
  path: string,
  mode: OpenMode,
  node: InodeRow | undefined,
): FileHandle {
  if (!node) throw new FsError({ code: 'ENOENT', syscall: 'open', path })
  if (isDir(node.mode) && mode.write) throw fsError('EISDIR', 'open', path)
  return new FileHandle(fs, node.ino, normalizePath(path), mode)
}

/** Opens (and per the flags creates or truncates) a file; the work behind `fs.open()`. */
export async function openHandle(
  fs: SqlFileSystem,
  path: string,
  mode: OpenMode,
  create: (q: Queryable, now: Timestamp, note?: NoteChange) => Promise<number | undefined>,
  inTransaction = false,
  /** After `create`: the content rules that judge the file, if any (see `SqlFileSystem.open`). */
  judged?: () => { readonly real: string; readonly rules: readonly ContentRule[] } | undefined,
): Promise<FileHandle> {
  // Opening without creating or truncating only reads: no write transaction for it, unless
  // the caller's checks must share one transaction with the look-up (a policy).
  const ino =
    mode.create || mode.truncate
      ? await write(contextOf(fs), (q, now, note) => create(q, now, note))
      : inTransaction
        ? await contextOf(fs).q.transaction((tx) => create(tx, contextOf(fs).clock.now()))
        : await create(contextOf(fs).q, contextOf(fs).clock.now())
  if (ino === undefined) throw new FsError({ code: 'ENOENT', syscall: 'open', path })
  const content = mode.write ? judged?.() : undefined
  return new FileHandle(
    fs,
    ino,
    normalizePath(path),
    mode,
    content && { real: content.real, rules: content.rules },
  )
}
