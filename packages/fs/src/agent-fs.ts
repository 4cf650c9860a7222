import type { Readable, Writable } from 'node:stream'
import {
  type AgentDatabase,
  type Clock,
  FsError,
  fsError,
  joinPath,
  MODE_PERMISSION_MASK,
  normalizePath,
  parsePath,
  type Queryable,
  ROOT_INO,
  S_IFBLK,
  S_IFCHR,
  S_IFDIR,
  S_IFIFO,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
  S_IFSOCK,
  type Timestamp,
} from '@agentfs/core'
import { readAll, resize, writeRange } from './chunks.js'
import { ConflictError } from './conflict.js'
import { Dir } from './dir.js'
import { type FileHandle, openHandle } from './file-handle.js'
import { parseFlags } from './flags.js'
import { type InodeRow, isDir, isLnk, versionOf } from './inode.js'
import {
  createNode,
  dropLink,
  isInside,
  loadInode,
  pathOf,
  removeEntry,
  touchContent,
  touchDir,
  touchMeta,
} from './mutate.js'
import { type Lookup, lookup } from './resolver.js'
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
  AtimeMode,
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

/** Options of {@link createFileSystem}. */
export interface FileSystemOptions {
  /** When reads update atime (default `relatime`: only if atime is older than mtime/ctime or a day). */
  readonly atime?: AtimeMode
  /** Bits cleared from the mode of new files and directories (default `0o022`). */
  readonly umask?: number
  /** Owner of new inodes (default 0). */
  readonly uid?: number
  readonly gid?: number
}

interface Context {
  readonly q: Queryable
  readonly chunkSize: number
  readonly clock: Clock
  readonly atime: AtimeMode
  readonly umask: number
  readonly uid: number
  readonly gid: number
}

const DAY = 86_400
const COPYFILE_EXCL = 1
const X_OK = 1

function toBytes(data: WriteData, encoding: Encoding | undefined, syscall: string): Uint8Array {
  if (typeof data === 'string') return Buffer.from(data, encoding ?? 'utf8')
  if (data instanceof Uint8Array) return data
  throw new FsError({ code: 'EINVAL', syscall, hint: 'data must be a string or a Uint8Array' })
}

function toTimestamp(value: TimeLike, syscall: string): Timestamp {
  let seconds: number
  if (value instanceof Date) {
    // Whole milliseconds: split exactly instead of through a float of seconds.
    const millis = value.getTime()
    if (!Number.isFinite(millis))
      throw new FsError({ code: 'EINVAL', syscall, hint: 'invalid Date' })
    const sec = Math.floor(millis / 1000)
    return { sec, nsec: (millis - sec * 1000) * 1_000_000 }
  }
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
    seconds = Number(value)
  else if (typeof value === 'number') seconds = value
  else throw new FsError({ code: 'EINVAL', syscall, hint: `invalid time ${String(value)}` })
  if (!Number.isFinite(seconds))
    throw new FsError({ code: 'EINVAL', syscall, hint: `invalid time ${String(value)}` })
  const sec = Math.floor(seconds)
  return { sec, nsec: Math.min(999_999_999, Math.round((seconds - sec) * 1e9)) }
}

function checkLength(length: number, syscall: string, path: string): void {
  if (!Number.isSafeInteger(length) || length < 0) {
    throw new FsError({
      code: 'EINVAL',
      syscall,
      path,
      hint: `length must be a non-negative integer, got ${length}`,
    })
  }
}

/**
 * The AgentFS filesystem: POSIX semantics over the spec's inode, dentry and chunk tables, with
 * `node:fs/promises` names. Every mutating call is one transaction (a savepoint inside
 * {@link AgentFs.transaction}).
 */
export class AgentFs implements FileSystem {
  readonly #ctx: Context

  /** @internal Use {@link createFileSystem}. */
  constructor(ctx: Context) {
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
  transaction<T>(fn: (fs: AgentFs) => Promise<T>): Promise<T> {
    return this.#ctx.q.transaction((tx) => fn(new AgentFs({ ...this.#ctx, q: tx })))
  }

  #write<T>(fn: (q: Queryable, now: Timestamp) => Promise<T>): Promise<T> {
    return this.#ctx.q.transaction((tx) => fn(tx, this.#ctx.clock.now()))
  }

  #stats(row: InodeRow): Stats {
    return new Stats(row, { blksize: this.#ctx.chunkSize })
  }

  async #existing(
    q: Queryable,
    path: string,
    syscall: string,
    followLast = true,
  ): Promise<Lookup & { node: InodeRow }> {
    const found = await lookup(q, path, { followLast, syscall })
    if (!found.node) throw fsError('ENOENT', syscall, path)
    return found as Lookup & { node: InodeRow }
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
    await this.#ctx.q.execute({
      sql: 'UPDATE fs_inode SET atime = ?, atime_nsec = ? WHERE ino = ?',
      params: [now.sec, now.nsec, node.ino],
    })
  }

  readFile(path: string): Promise<Buffer>
  readFile(path: string, options: Encoding | { encoding: Encoding }): Promise<string>
  readFile(path: string, options?: Encoding | { encoding?: Encoding }): Promise<Buffer | string>
  async readFile(
    path: string,
    options?: Encoding | { encoding?: Encoding },
  ): Promise<Buffer | string> {
    const encoding = typeof options === 'string' ? options : options?.encoding
    const { node } = await this.#existing(this.#ctx.q, path, 'open')
    if (isDir(node.mode)) throw fsError('EISDIR', 'read', path)
    const bytes = node.size === 0 ? new Uint8Array(0) : await readAll(this.#ctx.q, node.ino)
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
    const opts: WriteFileOptions =
      typeof options === 'string' ? { encoding: options } : (options ?? {})
    const flag = opts.flag ?? 'w'
    await this.#writeData(
      path,
      toBytes(data, opts.encoding, 'open'),
      flag.startsWith('a'),
      flag.includes('x'),
      opts,
    )
  }

  async appendFile(
    path: string,
    data: WriteData,
    options?: WriteFileOptions | Encoding,
  ): Promise<void> {
    const opts: WriteFileOptions =
      typeof options === 'string' ? { encoding: options } : (options ?? {})
    const flag = opts.flag ?? 'a'
    await this.#writeData(
      path,
      toBytes(data, opts.encoding, 'open'),
      true,
      flag.includes('x'),
      opts,
    )
  }

  async #writeData(
    path: string,
    bytes: Uint8Array,
    append: boolean,
    exclusive: boolean,
    opts: WriteFileOptions,
  ) {
    await this.#write(async (q, now) => {
      const found = await lookup(q, path, { followLast: true, syscall: 'open', allowMissing: true })
      let node = found.node
      if (node) {
        if (exclusive) throw fsError('EEXIST', 'open', path)
        if (isDir(node.mode)) throw fsError('EISDIR', 'open', path)
      }
      if (opts.ifMatch !== undefined) {
        const current = node ? versionOf(node) : undefined
        if (current !== opts.ifMatch)
          throw new ConflictError(normalizePath(path), opts.ifMatch, current)
      }
      if (!node) {
        if (found.name === undefined) throw fsError('EISDIR', 'open', path)
        const mode = S_IFREG | ((opts.mode ?? 0o666) & ~this.#ctx.umask & MODE_PERMISSION_MASK)
        const ino = await createNode(q, found.dirIno, found.name, {
          mode,
          uid: this.#ctx.uid,
          gid: this.#ctx.gid,
          now,
        })
        node = (await loadInode(q, ino))!
      } else if (!append && node.size > 0) {
        await q.execute({ sql: 'DELETE FROM fs_data WHERE ino = ?', params: [node.ino] })
      }
      const base = append ? node.size : 0
      const size =
        bytes.byteLength > 0
          ? await writeRange(q, node.ino, base, this.#ctx.chunkSize, base, bytes)
          : base
      await touchContent(q, node.ino, size, now)
    })
  }

  async truncate(path: string, length = 0): Promise<void> {
    checkLength(length, 'open', path)
    await this.#write(async (q, now) => {
      const { node } = await this.#existing(q, path, 'open')
      if (isDir(node.mode)) throw fsError('EISDIR', 'open', path)
      await resize(q, node.ino, node.size, this.#ctx.chunkSize, length)
      await touchContent(q, node.ino, length, now)
    })
  }

  async unlink(path: string): Promise<void> {
    await this.#write(async (q, now) => {
      const { node, dirIno, name } = await this.#existing(q, path, 'unlink', false)
      if (isDir(node.mode)) throw fsError('EISDIR', 'unlink', path)
      await removeEntry(q, dirIno, name!, node, now)
    })
  }

  async rmdir(path: string): Promise<void> {
    await this.#write(async (q, now) => {
      const { node, dirIno, name } = await this.#existing(q, path, 'rmdir', false)
      if (node.ino === ROOT_INO)
        throw fsError('EPERM', 'rmdir', path, { hint: 'the root directory cannot be removed' })
      if (!isDir(node.mode)) throw fsError('ENOTDIR', 'rmdir', path)
      if (name === undefined) throw fsError('EINVAL', 'rmdir', path)
      const child = await q.execute({
        sql: 'SELECT 1 FROM fs_dentry WHERE parent_ino = ? LIMIT 1',
        params: [node.ino],
      })
      if (child.rows.length > 0) throw fsError('ENOTEMPTY', 'rmdir', path)
      await removeEntry(q, dirIno, name, node, now)
    })
  }

  async mkdir(path: string, options?: MkdirOptions | number): Promise<string | undefined> {
    const opts: MkdirOptions = typeof options === 'number' ? { mode: options } : (options ?? {})
    const mode = S_IFDIR | ((opts.mode ?? 0o777) & ~this.#ctx.umask & MODE_PERMISSION_MASK)
    return this.#write(async (q, now) => {
      const create = (dirIno: number, name: string) =>
        createNode(q, dirIno, name, { mode, uid: this.#ctx.uid, gid: this.#ctx.gid, now })
      if (!opts.recursive) {
        // mkdir(2) never follows a link in the last component: any existing entry is EEXIST.
        const found = await lookup(q, path, {
          followLast: false,
          syscall: 'mkdir',
          allowMissing: true,
        })
        if (found.node || found.name === undefined) throw fsError('EEXIST', 'mkdir', path)
        await create(found.dirIno, found.name)
        return undefined
      }
      const parts = parsePath(path, 'mkdir').parts
      let first: string | undefined
      for (let i = 1; i <= parts.length; i++) {
        const prefix = `/${parts.slice(0, i).join('/')}`
        const last = i === parts.length
        const found = await lookup(q, prefix, {
          followLast: false,
          syscall: 'mkdir',
          allowMissing: true,
        })
        if (found.node) {
          let target = found.node
          if (isLnk(target.mode)) {
            // Through links like Node's mkdir -p: a loop is ELOOP; a dangling link is ENOENT as
            // the last component and ENOTDIR before it.
            try {
              target =
                (await lookup(q, prefix, { followLast: true, syscall: 'mkdir' })).node ?? target
            } catch (error) {
              const code = error instanceof FsError ? error.code : undefined
              if (code === 'ELOOP') throw fsError('ELOOP', 'mkdir', path)
              throw fsError(last && code === 'ENOENT' ? 'ENOENT' : 'ENOTDIR', 'mkdir', path)
            }
          }
          if (!isDir(target.mode)) throw fsError(last ? 'EEXIST' : 'ENOTDIR', 'mkdir', path)
          continue
        }
        if (found.name === undefined) continue
        await create(found.dirIno, found.name)
        first ??= normalizePath(prefix)
      }
      return first
    })
  }

  async rm(path: string, options: RmOptions = {}): Promise<void> {
    await this.#write(async (q, now) => {
      let found: Lookup & { node: InodeRow }
      try {
        found = await this.#existing(q, path, 'rm', false)
      } catch (error) {
        if (options.force && error instanceof FsError && error.code === 'ENOENT') return
        throw error
      }
      const { node, dirIno, name } = found
      if (node.ino === ROOT_INO || name === undefined) {
        throw fsError('EPERM', 'rm', path, { hint: 'the root directory cannot be removed' })
      }
      if (isDir(node.mode)) {
        if (!options.recursive) {
          throw new FsError({
            code: 'EISDIR',
            syscall: 'rm',
            path,
            hint: 'pass { recursive: true } to remove a directory',
          })
        }
        await this.#removeTree(q, node.ino, now)
      }
      await removeEntry(q, dirIno, name, node, now)
    })
  }

  /** Removes everything below directory `ino` (not the directory itself). */
  async #removeTree(q: Queryable, ino: number, now: Timestamp): Promise<void> {
    const { rows } = await q.execute<{ id: number; ino: number }>({
      sql: `WITH RECURSIVE sub(id, ino) AS (
  SELECT id, ino FROM fs_dentry WHERE parent_ino = ?
  UNION ALL
  SELECT d.id, d.ino FROM fs_dentry d JOIN sub ON d.parent_ino = sub.ino
)
SELECT id, ino FROM sub`,
      params: [ino],
    })
    const links = new Map<number, number>()
    for (const row of rows) links.set(row.ino, (links.get(row.ino) ?? 0) + 1)
    for (let i = 0; i < rows.length; i += 500) {
      const ids = rows.slice(i, i + 500).map((r) => r.id)
      await q.execute({
        sql: `DELETE FROM fs_dentry WHERE id IN (${ids.map(() => '?').join(', ')})`,
        params: ids,
      })
    }
    for (const [child, count] of links) await dropLink(q, child, count, now)
  }

  async rename(from: string, to: string): Promise<void> {
    await this.#write(async (q, now) => {
      const source = await lookup(q, from, {
        followLast: false,
        syscall: 'rename',
        allowMissing: true,
      }).catch((error: unknown) => {
        if (error instanceof FsError)
          throw new FsError({ code: error.code, syscall: 'rename', path: from, dest: to })
        throw error
      })
      const fail = (code: FsError['code']) =>
        new FsError({ code, syscall: 'rename', path: from, dest: to })
      if (source.node && (source.node.ino === ROOT_INO || source.name === undefined))
        throw fail('EBUSY')
      const target = await lookup(q, to, {
        followLast: false,
        syscall: 'rename',
        allowMissing: true,
      }).catch((error: unknown) => {
        if (error instanceof FsError) throw fail(error.code)
        throw error
      })
      // Like rename(2): both parents are resolved before a missing source is reported.
      if (!source.node) throw fail('ENOENT')
      if (target.name === undefined) throw fail('EBUSY')
      const moving = source.node
      if (isDir(moving.mode) && (await isInside(q, target.dirIno, moving.ino))) throw fail('EINVAL')
      if (target.node) {
        if (target.node.ino === moving.ino) return
        // The target may not be an ancestor of the source (rename(2) checks this first).
        if (isDir(target.node.mode) && (await isInside(q, source.dirIno, target.node.ino)))
          throw fail('ENOTEMPTY')
        if (isDir(moving.mode)) {
          if (!isDir(target.node.mode)) throw fail('ENOTDIR')
          const child = await q.execute({
            sql: 'SELECT 1 FROM fs_dentry WHERE parent_ino = ? LIMIT 1',
            params: [target.node.ino],
          })
          if (child.rows.length > 0) throw fail('ENOTEMPTY')
        } else if (isDir(target.node.mode)) {
          throw fail('EISDIR')
        }
        await q.execute({
          sql: 'DELETE FROM fs_dentry WHERE parent_ino = ? AND name = ?',
          params: [target.dirIno, target.name],
        })
        await dropLink(q, target.node.ino, 1, now)
      } else if (parsePath(to, 'rename').trailingSlash && !isDir(moving.mode)) {
        throw fail('ENOTDIR')
      }
      await q.execute({
        sql: 'UPDATE fs_dentry SET parent_ino = ?, name = ? WHERE parent_ino = ? AND name = ?',
        params: [target.dirIno, target.name, source.dirIno, source.name!],
      })
      await touchMeta(q, moving.ino, now)
      await touchDir(q, source.dirIno, now)
      if (target.dirIno !== source.dirIno) await touchDir(q, target.dirIno, now)
    })
  }

  async link(existing: string, newPath: string): Promise<void> {
    await this.#write(async (q, now) => {
      const fail = (code: FsError['code']) =>
        new FsError({ code, syscall: 'link', path: existing, dest: newPath })
      const source = await lookup(q, existing, { followLast: false, syscall: 'link' }).catch(
        (error: unknown) => {
          if (error instanceof FsError) throw fail(error.code)
          throw error
        },
      )
      if (!source.node) throw fail('ENOENT')
      const target = await lookup(q, newPath, {
        followLast: false,
        syscall: 'link',
        allowMissing: true,
      }).catch((error: unknown) => {
        if (error instanceof FsError) throw fail(error.code)
        throw error
      })
      if (target.node || target.name === undefined) throw fail('EEXIST')
      if (isDir(source.node.mode)) throw fail('EPERM')
      await q.execute({
        sql: 'INSERT INTO fs_dentry (name, parent_ino, ino) VALUES (?, ?, ?)',
        params: [target.name, target.dirIno, source.node.ino],
      })
      await touchMeta(q, source.node.ino, now, { nlink: source.node.nlink + 1 })
      await touchDir(q, target.dirIno, now)
    })
  }

  async symlink(target: string, path: string): Promise<void> {
    if (typeof target !== 'string' || target.length === 0 || target.includes('\0')) {
      throw new FsError({
        code: target === '' ? 'ENOENT' : 'EINVAL',
        syscall: 'symlink',
        path: String(target),
        dest: path,
      })
    }
    await this.#write(async (q, now) => {
      const found = await lookup(q, path, {
        followLast: false,
        syscall: 'symlink',
        allowMissing: true,
      }).catch((error: unknown) => {
        if (error instanceof FsError)
          throw new FsError({ code: error.code, syscall: 'symlink', path: target, dest: path })
        throw error
      })
      if (found.node || found.name === undefined)
        throw new FsError({ code: 'EEXIST', syscall: 'symlink', path: target, dest: path })
      const ino = await createNode(q, found.dirIno, found.name, {
        mode: S_IFLNK | 0o777,
        uid: this.#ctx.uid,
        gid: this.#ctx.gid,
        size: Buffer.byteLength(target),
        now,
      })
      await q.execute({
        sql: 'INSERT INTO fs_symlink (ino, target) VALUES (?, ?)',
        params: [ino, target],
      })
    })
  }

  async readlink(path: string): Promise<string> {
    const { node } = await this.#existing(this.#ctx.q, path, 'readlink', false)
    if (!isLnk(node.mode)) throw fsError('EINVAL', 'readlink', path)
    const { rows } = await this.#ctx.q.execute<{ target: string }>({
      sql: 'SELECT target FROM fs_symlink WHERE ino = ?',
      params: [node.ino],
    })
    return rows[0]?.target ?? ''
  }

  async realpath(path: string): Promise<string> {
    const { node } = await this.#existing(this.#ctx.q, path, 'realpath')
    return node.ino === ROOT_INO ? '/' : pathOf(this.#ctx.q, node.ino)
  }

  async exists(path: string): Promise<boolean> {
    try {
      await this.#existing(this.#ctx.q, path, 'access')
      return true
    } catch (error) {
      if (error instanceof FsError) return false
      throw error
    }
  }

  async access(path: string, mode = 0): Promise<void> {
    const { node } = await this.#existing(this.#ctx.q, path, 'access')
    if (mode & X_OK && !isDir(node.mode) && (node.mode & 0o111) === 0)
      throw fsError('EACCES', 'access', path)
  }

  async stat(path: string): Promise<Stats> {
    return this.#stats((await this.#existing(this.#ctx.q, path, 'stat')).node)
  }

  async lstat(path: string): Promise<Stats> {
    return this.#stats((await this.#existing(this.#ctx.q, path, 'lstat', false)).node)
  }

  async chmod(path: string, mode: number): Promise<void> {
    if (!Number.isInteger(mode) || mode < 0) throw fsError('EINVAL', 'chmod', path)
    await this.#write(async (q, now) => {
      const { node } = await this.#existing(q, path, 'chmod')
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
    await this.#write(async (q, now) => {
      const { node } = await this.#existing(q, path, syscall, follow)
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
    await this.#write(async (q, now) => {
      const { node } = await this.#existing(q, path, syscall, follow)
      await touchMeta(q, node.ino, now, {
        atime: a.sec,
        atime_nsec: a.nsec,
        mtime: m.sec,
        mtime_nsec: m.nsec,
      })
    })
  }

  async copyFile(src: string, dest: string, mode = 0): Promise<void> {
    await this.#write(async (q, now) => {
      const fail = (code: FsError['code']) =>
        new FsError({ code, syscall: 'copyfile', path: src, dest })
      const source = await lookup(q, src, { followLast: true, syscall: 'copyfile' }).catch(
        (error: unknown) => {
          if (error instanceof FsError) throw fail(error.code)
          throw error
        },
      )
      if (!source.node) throw fail('ENOENT')
      const target = await lookup(q, dest, {
        followLast: true,
        syscall: 'copyfile',
        allowMissing: true,
      }).catch((error: unknown) => {
        if (error instanceof FsError) throw fail(error.code)
        throw error
      })
      // Like Node, errors of the destination's path come first. Unlike libuv, an existing
      // destination is left alone when the source is a directory (libuv deletes it).
      if (isDir(source.node.mode)) throw fail('EISDIR')
      let ino: number
      if (target.node) {
        if (mode & COPYFILE_EXCL) throw fail('EEXIST')
        if (isDir(target.node.mode)) throw fail('EISDIR')
        if (target.node.ino === source.node.ino) return
        ino = target.node.ino
        await q.execute({ sql: 'DELETE FROM fs_data WHERE ino = ?', params: [ino] })
      } else {
        if (target.name === undefined) throw fail('EISDIR')
        ino = await createNode(q, target.dirIno, target.name, {
          mode: S_IFREG | (source.node.mode & MODE_PERMISSION_MASK),
          uid: this.#ctx.uid,
          gid: this.#ctx.gid,
          now,
        })
      }
      // Chunks are copied inside the engine: no file content passes through JavaScript.
      await q.execute({
        sql: 'INSERT INTO fs_data (ino, chunk_index, data) SELECT ?, chunk_index, data FROM fs_data WHERE ino = ?',
        params: [ino, source.node.ino],
      })
      await touchContent(q, ino, source.node.size, now)
    })
  }

  async mknod(path: string, mode: number, rdev = 0): Promise<void> {
    const type = mode & S_IFMT
    if (![S_IFIFO, S_IFCHR, S_IFBLK, S_IFSOCK, S_IFREG].includes(type)) {
      throw new FsError({
        code: 'EINVAL',
        syscall: 'mknod',
        path,
        hint: 'mode must include a FIFO, character, block, socket or regular file type',
      })
    }
    await this.#write(async (q, now) => {
      const found = await lookup(q, path, {
        followLast: false,
        syscall: 'mknod',
        allowMissing: true,
      })
      if (found.node || found.name === undefined) throw fsError('EEXIST', 'mknod', path)
      await createNode(q, found.dirIno, found.name, {
        mode: type | (mode & ~this.#ctx.umask & MODE_PERMISSION_MASK),
        uid: this.#ctx.uid,
        gid: this.#ctx.gid,
        rdev: type === S_IFCHR || type === S_IFBLK ? rdev : 0,
        now,
      })
    })
  }

  readdir(path: string): Promise<string[]>
  readdir(path: string, options: ReaddirOptions & { withFileTypes: true }): Promise<Dirent[]>
  readdir(path: string, options: ReaddirOptions): Promise<string[] | Dirent[]>
  async readdir(path: string, options: ReaddirOptions = {}): Promise<string[] | Dirent[]> {
    const q = this.#ctx.q
    const { node } = await this.#existing(q, path, 'scandir')
    if (!isDir(node.mode)) throw fsError('ENOTDIR', 'scandir', path)
    const base = normalizePath(path)
    if (!options.recursive) {
      const { rows } = await q.execute<{ name: string; mode: number }>({
        sql: 'SELECT d.name AS name, i.mode AS mode FROM fs_dentry d JOIN fs_inode i ON i.ino = d.ino WHERE d.parent_ino = ? ORDER BY d.name',
        params: [node.ino],
      })
      return options.withFileTypes
        ? rows.map((r) => new Dirent(r.name, base, r.mode))
        : rows.map((r) => r.name)
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
    const { node } = await this.#existing(this.#ctx.q, path, 'opendir')
    if (!isDir(node.mode)) throw fsError('ENOTDIR', 'opendir', path)
    return new Dir(
      this.#ctx.q,
      node.ino,
      normalizePath(path),
      Math.max(1, options.bufferSize ?? 256),
    )
  }

  /** Paths matching a glob pattern, listed with one query below the pattern's static prefix. */
  glob(pattern: string, options?: GlobOptions): Promise<GlobMatch[]> {
    return glob(this.#ctx.q, pattern, options)
  }

  /** Lines matching a pattern in files below `options.path`, like `grep -rn`. */
  grep(pattern: string | RegExp, options?: GrepOptions): Promise<GrepMatch[]> {
    return grep(this.#ctx.q, this.#ctx.chunkSize, pattern, options)
  }

  /**
   * Copies a file, a symlink or (with `recursive`) a directory tree, in one transaction. Like
   * `fs.promises.cp`: `force` (default true) replaces existing files, `errorOnExist` turns a
   * skipped existing file into EEXIST, `dereference` copies what links point to.
   */
  async cp(src: string, dest: string, options: CpOptions = {}): Promise<void> {
    const from = normalizePath(src, 'cp')
    const to = normalizePath(dest, 'cp')
    if (to === from || to.startsWith(`${from}/`)) {
      throw new FsError({
        code: 'EINVAL',
        syscall: 'cp',
        path: src,
        dest,
        hint: 'cannot copy a directory into itself',
      })
    }
    await this.transaction((tx) => tx.#copy(from, to, options))
  }

  async #copy(from: string, to: string, options: CpOptions): Promise<void> {
    const stats = options.dereference ? await this.stat(from) : await this.lstat(from)
    const existing = await this.lstat(to).catch(() => undefined)
    if (stats.isDirectory()) {
      if (!options.recursive) {
        throw new FsError({
          code: 'EISDIR',
          syscall: 'cp',
          path: from,
          dest: to,
          hint: 'pass { recursive: true } to copy a directory',
        })
      }
      if (existing && !existing.isDirectory())
        throw new FsError({ code: 'ENOTDIR', syscall: 'cp', path: from, dest: to })
      if (!existing) await this.mkdir(to, { mode: stats.mode & MODE_PERMISSION_MASK })
      for (const name of await this.readdir(from))
        await this.#copy(joinPath(from, name), joinPath(to, name), options)
      return
    }
    if (existing) {
      if (existing.isDirectory())
        throw new FsError({ code: 'EISDIR', syscall: 'cp', path: from, dest: to })
      if (options.force === false) {
        if (options.errorOnExist)
          throw new FsError({ code: 'EEXIST', syscall: 'cp', path: from, dest: to })
        return
      }
      await this.unlink(to)
    }
    if (stats.isSymbolicLink()) await this.symlink(await this.readlink(from), to)
    else await this.copyFile(from, to)
  }

  /** @internal Shared with FileHandle and streams. */
  get context(): Context {
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
  })
}

export type { Context as FileSystemContext }
