import * as crypto from 'node:crypto'
import { createHash, type Hash, webcrypto } from 'node:crypto'
import type { ChangeRecord, Executor } from '@agentfs/core'
import { readAll } from '../storage/chunks.js'
import type { InodeRow } from '../storage/inode.js'
import { versionOf } from '../storage/inode.js'
import type { FsContext } from './context.js'

/**
 * The content hashes of the change feed (`agentfs_change.hash`, `prev_hash`): the SHA-256 of a
 * file after a content change and before it. Where they come from, cheapest first:
 *
 * - a whole new content (writeFile, a create with data) is hashed from the bytes being written
 *   (large ones on the thread pool while the chunks are inserted);
 * - bytes appended at the end (appendFile, a stream or handle writing on from where it is) extend
 *   the running hash of the content they follow, when this process knows it (it wrote or hashed
 *   that very version): a file streamed in is never read back;
 * - otherwise a file of at most {@link REHASH_MAX} bytes is read again in the transaction;
 * - otherwise the hash is not recorded (NULL): a write into the middle of a large file whose
 *   content this process does not know. `fs.hash()` still answers for the file as it is.
 */

/** Files up to this size are read again to hash a change nothing cached explains. */
export const REHASH_MAX = 1024 * 1024
/** Whole contents from this size are hashed on the thread pool, overlapping the inserts. */
const OFF_THREAD = 1024 * 1024
/** Whole contents from this size keep their running hash, so appends can extend it. */
const KEEP_STATE = 64 * 1024
/** Inodes whose current content hash is remembered, per filesystem. */
const KNOWN_ENTRIES = 1024

/** SHA-256 of no bytes. */
export const EMPTY_SHA256: Uint8Array = createHash('sha256').digest()

/** What this process knows of an inode's content: its hash at one version. */
export interface Known {
  readonly version: string
  readonly size: number
  readonly digest: Uint8Array
  /** The running hash of the content, when it can be extended by an append. */
  readonly state?: Hash
}

/** A change as fs operations note it: a feed record and what its content hash can come from. */
export interface FsChange extends ChangeRecord {
  /** The whole new content's hash, started before its chunks were written ({@link hashContent}). */
  content?: ContentHash | undefined
  /** Bytes appended at offset `size` to the content of version `version`. */
  appended?:
    | { readonly version: string; readonly size: number; readonly bytes: Uint8Array }
    | undefined
  /** The hash of the content before the change ({@link hashBefore}). */
  before?: Uint8Array | null | undefined
  /** The inode's version token and size after the change, when the operation knows them. */
  after?: { readonly version: string; readonly size: number } | undefined
  /** Of a rename: whether it moved a directory (paths below it then lead elsewhere). */
  movedDirectory?: boolean | undefined
}

/** A whole content's hash, possibly still being computed, and its running state. */
export interface ContentHash {
  readonly digest: Uint8Array | Promise<Uint8Array>
  readonly state?: Hash
}

const knownBy = new WeakMap<object, Map<number, Known>>()

function knownOf(ctx: FsContext): Map<number, Known> {
  let known = knownBy.get(ctx.holds)
  if (!known) {
    known = new Map()
    knownBy.set(ctx.holds, known)
  }
  return known
}

function remember(ctx: FsContext, ino: number, entry: Known): void {
  const known = knownOf(ctx)
  known.delete(ino)
  known.set(ino, entry)
  if (known.size > KNOWN_ENTRIES) known.delete(known.keys().next().value as number)
}

/** The hash of a version of an inode's content, if this process knows it. */
export function knownHash(ctx: FsContext, ino: number, version: string): Uint8Array | undefined {
  const entry = knownBy.get(ctx.holds)?.get(ino)
  return entry?.version === version ? entry.digest : undefined
}

/** Starts hashing a whole new content (undefined when the feed is off: nothing records it). */
export function hashContent(ctx: FsContext, bytes: Uint8Array): ContentHash | undefined {
  if (!ctx.feed) return undefined
  if (bytes.byteLength >= OFF_THREAD)
    return {
      digest: webcrypto.subtle
        .digest('SHA-256', bytes)
        .then((buffer: ArrayBuffer) => new Uint8Array(buffer)),
    }
  if (bytes.byteLength < KEEP_STATE) return { digest: sha256(bytes) }
  const state = createHash('sha256').update(bytes)
  return { digest: state.copy().digest(), state }
}

// One-shot hashing (Node ≥ 20.12) skips a Hash object: a fifth of a small write's hashing.
const oneShot = (crypto as { hash?: (a: string, d: Uint8Array, e: 'buffer') => Buffer }).hash

/** The SHA-256 of `bytes`. */
export function sha256(bytes: Uint8Array): Uint8Array {
  return oneShot ? oneShot('sha256', bytes, 'buffer') : createHash('sha256').update(bytes).digest()
}

/**
 * The hash of `node`'s content before the change about to be made to it: remembered, or read
 * (files up to {@link REHASH_MAX}), else null. Call it before changing the content.
 */
export async function hashBefore(
  ctx: FsContext,
  q: Executor,
  node: InodeRow,
): Promise<Uint8Array | null | undefined> {
  if (!ctx.feed) return undefined
  if (node.size === 0) return EMPTY_SHA256
  const known = knownHash(ctx, node.ino, versionOf(node))
  if (known) return known
  if (node.size > REHASH_MAX) return null
  return sha256(await readAll(q, node.ino, node.size, ctx.chunks))
}

/** What a settled change teaches this process: an inode's content hash at a version. */
export interface Learned {
  readonly ino: number
  readonly known: Known
}

/**
 * Fills in `change.hash` (and `prevHash`) from what the operation noted, in the change's
 * transaction, and returns what to remember once it commits: at once when the operation gave
 * the whole content's hash and the version it leaves (a small write: no SQL, no promise),
 * else a promise.
 */
export function settleHashes(
  ctx: FsContext,
  q: Executor,
  change: FsChange,
): Learned | undefined | Promise<Learned | undefined> {
  if (change.before !== undefined) change.prevHash = change.before
  const { content, after, ino } = change
  if (ino === undefined) return undefined
  if (content && after && !(content.digest instanceof Promise)) {
    change.hash = content.digest
    const known: Known = { version: after.version, size: after.size, digest: content.digest }
    return { ino, known: content.state ? { ...known, state: content.state } : known }
  }
  return settleSlowly(ctx, q, change, ino)
}

async function settleSlowly(
  ctx: FsContext,
  q: Executor,
  change: FsChange,
  ino: number,
): Promise<Learned | undefined> {
  const { content, appended } = change
  let row = change.after
  if (!row) {
    const { rows } = await q.execute<{ ctime: number; ctime_nsec: number; size: number }>({
      sql: 'SELECT ctime, ctime_nsec, size FROM fs_inode WHERE ino = ?',
      params: [ino],
    })
    const found = rows[0]
    if (!found) return undefined
    row = { version: versionOf(found), size: found.size }
  }
  let digest: Uint8Array | null = null
  let state: Hash | undefined
  if (content) {
    digest = await content.digest
    state = content.state
  } else if (row.size === 0) {
    digest = EMPTY_SHA256
    state = createHash('sha256')
  } else {
    const entry = appended ? knownBy.get(ctx.holds)?.get(ino) : undefined
    if (
      appended &&
      entry?.state &&
      entry.version === appended.version &&
      entry.size === appended.size &&
      appended.size + appended.bytes.byteLength === row.size
    ) {
      state = entry.state.copy().update(appended.bytes)
      digest = state.copy().digest()
    } else if (row.size <= REHASH_MAX) {
      state = createHash('sha256').update(await readAll(q, ino, row.size, ctx.chunks))
      digest = state.copy().digest()
    }
  }
  change.hash = digest
  if (digest === null) return undefined
  const known: Known = { version: row.version, size: row.size, digest }
  return { ino, known: state ? { ...known, state } : known }
}

/** Remembers what committed changes taught (call after the commit). */
export function learn(ctx: FsContext, learned: readonly Learned[]): void {
  for (const { ino, known } of learned) remember(ctx, ino, known)
}
