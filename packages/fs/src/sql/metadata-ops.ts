import {
  fsError,
  isAgentFsError,
  MODE_PERMISSION_MASK,
  normalizePath,
  ROOT_INO,
  S_IFMT,
  S_IFREG,
  type Statement,
  type Timestamp,
} from '@agentfs/core'
import { Stats } from '../stats.js'
import { readAll } from '../storage/chunks.js'
import { type InodeRow, isDir, isLnk } from '../storage/inode.js'
import { pathOf, touchMeta } from '../storage/mutate.js'
import { lookupSoon } from '../storage/resolver.js'
import { readRegularFile } from '../storage/whole-read.js'
import { DAY, existing, type FsContext, write, X_OK } from './context.js'

/** Files up to this size report `blocks` from their size without counting chunks. */
const SPARSE_STAT_THRESHOLD = 64 * 1024

/**
 * Stats with honest `blocks` for files that may have holes: above 64 KiB the stored chunks are
 * counted (an index-only scan); smaller files report their size in 512-byte blocks, at once
 * (no promise: `stat` is the hottest read).
 */
export function statsOf(ctx: FsContext, row: InodeRow): Stats | Promise<Stats> {
  if ((row.mode & S_IFMT) !== S_IFREG || row.size <= SPARSE_STAT_THRESHOLD)
    return new Stats(row, { blksize: ctx.chunkSize })
  return countedStats(ctx, row)
}

async function countedStats(ctx: FsContext, row: InodeRow): Promise<Stats> {
  const options = { blksize: ctx.chunkSize }
  const { rows } = await ctx.q.execute<{ n: number }>({
    sql: 'SELECT COUNT(*) AS n FROM fs_data WHERE ino = ?',
    params: [row.ino],
  })
  const stored = Math.min(row.size, (rows[0]?.n ?? 0) * ctx.chunkSize)
  return new Stats(row, { ...options, blocks: Math.ceil(stored / 512) })
}

/**
 * `stat` (`follow`) or `lstat` of `path`: one lookup, then {@link statsOf}. The lookup and its
 * ENOENT are `existing`'s, inlined, and an answer the path cache gives at once costs one promise
 * (`lookupSoon`): this is the hottest read.
 */
export function statPath(
  ctx: FsContext,
  path: string,
  syscall: string,
  follow: boolean,
): Promise<Stats> {
  try {
    const found = lookupSoon(ctx.q, path, { followLast: follow, syscall })
    if (found instanceof Promise) return found.then(({ node }) => statOf(ctx, node, syscall, path))
    const stats = statOf(ctx, found.node, syscall, path)
    return stats instanceof Promise ? stats : Promise.resolve(stats)
  } catch (error) {
    return Promise.reject(error)
  }
}

/** The stats of a looked-up `node`; ENOENT when there is none. */
function statOf(
  ctx: FsContext,
  node: InodeRow | undefined,
  syscall: string,
  path: string,
): Stats | Promise<Stats> {
  if (!node) throw fsError('ENOENT', syscall, path)
  return statsOf(ctx, node)
}

/** Updates the access time of a file just read, as the `atime` option says (relatime by default). */
export async function touchAtime(ctx: FsContext, node: InodeRow): Promise<void> {
  const touch = atimeTouch(ctx, node)
  if (touch === undefined) return
  try {
    await ctx.q.execute(touch)
  } catch (error) {
    if (!touchFailureIgnored(error)) throw error
  }
}

/**
 * A read-only database reads like a read-only mount, and a full disk still reads: access
 * times simply stay as they are.
 */
function touchFailureIgnored(error: unknown): boolean {
  return isAgentFsError(error, 'READONLY') || isAgentFsError(error, 'FULL')
}

/** The statement that updates `node`'s access time, when the `atime` option wants it now. */
function atimeTouch(ctx: FsContext, node: InodeRow): Statement | undefined {
  if (ctx.atime === 'noatime') return undefined
  const now = ctx.clock.now()
  if (ctx.atime === 'relatime') {
    const a = node.atime * 1e9 + node.atime_nsec
    const stale =
      a <= node.mtime * 1e9 + node.mtime_nsec ||
      a <= node.ctime * 1e9 + node.ctime_nsec ||
      now.sec - node.atime >= DAY
    if (!stale) return undefined
  }
  return { sql: TOUCH_ATIME_SQL, params: [now.sec, now.nsec, node.ino] }
}

const TOUCH_ATIME_SQL = 'UPDATE fs_inode SET atime = ?, atime_nsec = ? WHERE ino = ?'

/**
 * Per connection handle: its generation when a whole-file read last found no access time to
 * set. Until the handle changes something again, reads are most likely to find none again, and
 * read alone (one statement); after a change, the next read may have one to set, and reads in
 * a transaction that sets it too (one lock cycle instead of two). Either way is exact: this
 * only picks the cheaper.
 */
const quietSince = new WeakMap<object, number>()

/** A whole file's bytes (one statement in the common case), its access time updated. */
export async function readWhole(ctx: FsContext, path: string): Promise<Buffer> {
  let node: InodeRow
  let bytes: Uint8Array
  const q = ctx.q as { readonly generation?: number }
  const generation = q.generation
  const combine =
    ctx.atime !== 'noatime' && generation !== undefined && quietSince.get(q) !== generation
  // Whether the read, asked for its access-time update, found none to make.
  let quiet = false
  const direct = await readRegularFile(
    ctx.q,
    path,
    'open',
    ctx.chunks,
    combine
      ? (found) => {
          const touch = atimeTouch(ctx, found)
          quiet = touch === undefined
          return touch
        }
      : undefined,
  )
  if (quiet) quietSince.set(q, generation!)
  let touched = false
  if (direct) {
    ;({ node, bytes } = direct)
    // Set, or refused for good (a read-only database, a full disk): nothing more to do.
    touched =
      direct.touched || (direct.touchError !== undefined && touchFailureIgnored(direct.touchError))
  } else {
    node = (await existing(ctx.q, path, 'open')).node
    if (isDir(node.mode)) throw fsError('EISDIR', 'read', path)
    bytes = await readAll(ctx.q, node.ino, node.size, ctx.chunks, 'read', path)
  }
  // Not set with the read (read alone, a larger file, another connection writing): set now.
  if (!touched) await touchAtime(ctx, node)
  return Buffer.isBuffer(bytes)
    ? bytes
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/** The target of the symlink at `path` (EINVAL for anything else). */
export async function readlink(ctx: FsContext, path: string): Promise<string> {
  const { node } = await existing(ctx.q, path, 'readlink', false)
  if (!isLnk(node.mode)) throw fsError('EINVAL', 'readlink', path)
  const { rows } = await ctx.q.execute<{ target: string }>({
    sql: 'SELECT target FROM fs_symlink WHERE ino = ?',
    params: [node.ino],
  })
  return rows[0]?.target ?? ''
}

/** The canonical path of what `path` leads to. */
export async function realpath(ctx: FsContext, path: string): Promise<string> {
  const { node } = await existing(ctx.q, path, 'realpath')
  return node.ino === ROOT_INO ? '/' : pathOf(ctx.q, node.ino)
}

/** Changes one inode's metadata in its own transaction, ctime moved forward. */
function changeMeta(
  ctx: FsContext,
  path: string,
  syscall: string,
  follow: boolean,
  set: (node: InodeRow, now: Timestamp) => Record<string, number>,
): Promise<void> {
  const op = syscall === 'chmod' ? 'chmod' : syscall.endsWith('chown') ? 'chown' : 'utimes'
  return write(ctx, async (q, now, note) => {
    const { node } = await existing(q, path, syscall, follow)
    await touchMeta(q, node.ino, now, set(node, now))
    note({ op, path: normalizePath(path), ino: node.ino })
  })
}

/** chmod with a mode already validated: the permission bits change, the type stays. */
export function chmod(ctx: FsContext, path: string, mode: number): Promise<void> {
  return changeMeta(ctx, path, 'chmod', true, (node) => ({
    mode: (node.mode & S_IFMT) | (mode & MODE_PERMISSION_MASK),
  }))
}

/** chown (`follow`) and lchown with ids already validated; -1 keeps an id. */
export function chown(
  ctx: FsContext,
  path: string,
  uid: number,
  gid: number,
  follow: boolean,
  syscall: string,
): Promise<void> {
  return changeMeta(ctx, path, syscall, follow, (node) => ({
    uid: uid === -1 ? node.uid : uid,
    gid: gid === -1 ? node.gid : gid,
  }))
}

/** utimes (`follow`) and lutimes, with times already validated. */
export function utimes(
  ctx: FsContext,
  path: string,
  atime: Timestamp,
  mtime: Timestamp,
  follow: boolean,
  syscall: string,
): Promise<void> {
  return changeMeta(ctx, path, syscall, follow, () => ({
    atime: atime.sec,
    atime_nsec: atime.nsec,
    mtime: mtime.sec,
    mtime_nsec: mtime.nsec,
  }))
}

/** `access(path, mode)` once the policy allowed it: the entry exists; X_OK needs an x bit. */
export async function access(ctx: FsContext, path: string, mode: number): Promise<void> {
  const { node } = await existing(ctx.q, path, 'access')
  if (mode & X_OK && !isDir(node.mode) && (node.mode & 0o111) === 0)
    throw fsError('EACCES', 'access', path)
}
