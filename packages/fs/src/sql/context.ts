import {
  appendChange,
  type ChangeRecord,
  type ChunkFormat,
  type Clock,
  CONTENT_OPS,
  captureVersion,
  type FeedOptions,
  FsError,
  fsError,
  type Queryable,
  SNAPSHOT_COLUMNS,
  type SnapshotToken,
  type Timestamp,
  tokenOf,
  type VersionRetention,
} from '@agentfs/core'
import { fsMode } from '../node/node-args.js'
import type { Caller } from '../policy/permissions.js'
import { type CompiledPolicy, enforceLimits, type FsPolicy, usage } from '../policy/policy.js'
import type { Embedder } from '../search/semantic/embedder.js'
import type { Holds } from '../storage/holds.js'
import type { InodeRow } from '../storage/inode.js'
import { pathCacheOf } from '../storage/path-cache.js'
import { type Lookup, lookup } from '../storage/resolver.js'
import type { AtimeMode, Encoding, TimeLike, WriteData, WriteFileOptions } from '../types.js'
import { type FsChange, type Learned, learn, settleHashes } from './content-hash.js'
import { checkMimeType } from './mime.js'

/** Options of {@link createFileSystem}. */
export interface FileSystemOptions {
  /** When reads update atime (default `relatime`: only if atime is older than mtime/ctime or a day). */
  readonly atime?: AtimeMode
  /** Bits cleared from the mode of new files and directories (default `0o022`). */
  readonly umask?: number
  /** Owner of new inodes (default 0). */
  readonly uid?: number
  readonly gid?: number
  /** What may be read and changed, and size limits; enforced on every operation. */
  readonly policy?: FsPolicy
  /**
   * `'enforce'`: mode bits are checked as the kernel checks them, against the caller `uid`,
   * `gid` and `groups` (EACCES; EPERM for chmod, chown, utimes, the sticky bit). Default
   * `'ignore'`: modes are stored and reported only.
   */
  readonly permissions?: 'enforce' | 'ignore'
  /** The caller's supplementary groups, for `permissions: 'enforce'`. */
  readonly groups?: readonly number[]
  /**
   * The change feed (`agentfs_change`): one row per change, in the change's transaction, with
   * the session and tool call it came from. On by default; `{ enabled: false }` turns it off.
   */
  readonly feed?: FeedOptions
  /**
   * Semantic search: your embedding model (no model is bundled). With it, `search` ranks by
   * words and meaning (`mode: 'hybrid'`) over the vectors `updateEmbeddings` makes off the
   * write path (`AgentFS.open({ embed })` runs it in the background).
   */
  readonly embed?: Embedder
}

/** What every filesystem operation needs: where to run SQL and how to stamp changes. */
export interface FsContext {
  readonly q: Queryable
  readonly chunkSize: number
  /** How `fs_data` chunks are stored (the chunk size and the compression). */
  readonly chunks: ChunkFormat
  readonly clock: Clock
  readonly atime: AtimeMode
  readonly umask: number
  readonly uid: number
  readonly gid: number
  readonly policy?: CompiledPolicy
  /** The caller whose permissions are checked, with `permissions: 'enforce'`. */
  readonly caller?: Caller
  /** The inodes this process holds open over the database (kept when unlinked while open). */
  readonly holds: Holds
  /** The embedding model of semantic search, if any. */
  readonly embedder?: Embedder
  /** Where changes are recorded; undefined when the feed is off. */
  readonly feed?: {
    readonly sessionId?: string
    readonly versions?: Required<VersionRetention>
  }
}

/** Records a change of the running operation in the feed (see {@link write}). */
export type NoteChange = (change: FsChange) => void

export const DAY = 86_400
export const COPYFILE_EXCL = 1
export const X_OK = 1

/** `writeFile`/`appendFile` options as Node accepts them (an encoding alone, or an object). */
export function writeFileOptions(
  options?: WriteFileOptions | Encoding,
): WriteFileOptions & { readonly mode?: number } {
  if (typeof options === 'string') return { encoding: options }
  // A media type is checked (and lower-cased) before anything is written.
  const typed =
    options?.mimeType === undefined
      ? options
      : { ...options, mimeType: checkMimeType(options.mimeType) }
  if (typed?.mode === undefined) return (typed ?? {}) as WriteFileOptions & { mode?: number }
  return { ...typed, mode: fsMode(typed.mode, 'open')! }
}

export function toBytes(
  data: WriteData,
  encoding: Encoding | undefined,
  syscall: string,
): Uint8Array {
  if (typeof data === 'string') return Buffer.from(data, encoding ?? 'utf8')
  if (data instanceof Uint8Array) return data
  throw new FsError({ code: 'EINVAL', syscall, hint: 'data must be a string or a Uint8Array' })
}

const DECIMAL = /^(-?)(\d+)(?:\.(\d*))?$/

/**
 * A time written in decimal seconds, to the nanosecond as written ("1900000000.123456789"):
 * undefined for other forms (exponents, out of range), which go through floating point.
 */
function decimalTimestamp(text: string): Timestamp | undefined {
  const match = DECIMAL.exec(text)
  if (match === null) return undefined
  const whole = Number(match[2])
  if (!Number.isSafeInteger(whole)) return undefined
  const nsec = Number(`${match[3] ?? ''}000000000`.slice(0, 9))
  if (match[1] !== '-') return { sec: whole, nsec }
  return nsec === 0 ? { sec: -whole, nsec: 0 } : { sec: -whole - 1, nsec: 1_000_000_000 - nsec }
}

export function toTimestamp(value: TimeLike, syscall: string): Timestamp {
  // Numbers and strings to the nanosecond they show (a float sum would be off by hundreds).
  if (typeof value === 'number' || typeof value === 'string') {
    const exact = decimalTimestamp(typeof value === 'number' ? String(value) : value.trim())
    if (exact !== undefined) return exact
  }
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

export function checkLength(length: number, syscall: string, path: string): void {
  if (!Number.isSafeInteger(length) || length < 0) {
    throw new FsError({
      code: 'EINVAL',
      syscall,
      path,
      hint: `length must be a non-negative integer, got ${length}`,
    })
  }
}

/** The connection's stamp ({@link SNAPSHOT_COLUMNS}) alone. */
const STAMP_SQL = `SELECT ${SNAPSHOT_COLUMNS}`

/**
 * Changes after which every directory path still leads where it did: a file's content, a new
 * name, a name of a file (or link, or node) removed or moved. A directory removed or moved
 * (`rmdir`, `rm`, a rename of a directory) is not one, nor any change not listed here.
 */
const PATHS_KEPT = new Set([
  'create',
  'write',
  'truncate',
  'mkdir',
  'mknod',
  'symlink',
  'link',
  'unlink',
])

function keepsPaths(change: FsChange): boolean {
  return PATHS_KEPT.has(change.op) || (change.op === 'rename' && change.movedDirectory === false)
}

/**
 * Runs `fn` in a transaction (a savepoint when `ctx.q` already is one) with the time of the
 * change. What `fn` notes goes to the change feed in the same transaction, after `fn`.
 *
 * On a top-level handle with a path cache, the transaction's lookups take the directories it
 * remembers ({@link PathCache.lend}), and when every change noted kept directory paths where
 * they were, the cache keeps them across the commit ({@link PathCache.endLoan}): consecutive writes
 * then resolve their paths from it, as reads do.
 */
export async function write<T>(
  ctx: FsContext,
  fn: (q: Queryable, now: Timestamp, note: NoteChange) => Promise<T>,
): Promise<T> {
  const policy = ctx.policy
  const feed = ctx.feed
  // What to remember of the content hashes once the transaction commits.
  const learned: Learned[] = []
  const cache = pathCacheOf(ctx.q)
  let lentAt: number | undefined
  let kept: SnapshotToken | undefined
  const transaction = ctx.q.transaction(async (tx) => {
    learned.length = 0
    kept = undefined
    lentAt = cache?.lend(tx)
    const now = ctx.clock.now()
    const changes: FsChange[] = []
    const note: NoteChange = (change) => {
      changes.push(change)
    }
    // With limits, the change is checked inside its own transaction, so a refusal rolls it back.
    const limits = policy?.hasLimits === true
    const totals = limits && (policy.maxTotalBytes !== undefined || policy.maxInodes !== undefined)
    const before = totals ? await usage(tx) : undefined
    const result = await fn(tx, now, note)
    if (limits) await enforceLimits(tx, policy, before, now, 'write')
    if (feed)
      for (const change of changes) {
        const content = change.ino !== undefined && CONTENT_OPS.has(change.op)
        if (content) {
          const settled = settleHashes(ctx, tx, change)
          const known = settled instanceof Promise ? await settled : settled
          if (known) learned.push(known)
        }
        await appendChange(tx, change as ChangeRecord, now, feed.sessionId)
        if (content && feed.versions)
          await captureVersion(
            tx,
            change.ino as number,
            change.path,
            now,
            ctx.chunks,
            feed.versions,
          )
      }
    // The stamp after the last change: the cache's token once this commits.
    if (lentAt !== undefined && changes.length > 0 && changes.every(keepsPaths)) {
      const { rows } = await tx.execute<unknown[]>({ sql: STAMP_SQL, arrays: true, first: true })
      kept = tokenOf(rows[0]!, lentAt)
    }
    return result
  })
  let result: T
  try {
    result = await transaction
  } finally {
    if (lentAt !== undefined) cache!.endLoan(lentAt, kept)
  }
  if (learned.length > 0) learn(ctx, learned)
  return result
}

/** Resolves a path that must exist (ENOENT otherwise). */
export async function existing(
  q: Queryable,
  path: string,
  syscall: string,
  followLast = true,
): Promise<Lookup & { node: InodeRow }> {
  const found = await lookup(q, path, { followLast, syscall })
  if (!found.node) throw fsError('ENOENT', syscall, path)
  return found as Lookup & { node: InodeRow }
}
