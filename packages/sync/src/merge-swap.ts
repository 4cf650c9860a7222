import { createHash } from 'node:crypto'
import {
  appendChange,
  type ChunkFormat,
  decodeChunk,
  type Executor,
  encodeChunk,
  isFsError,
  MERGE_LIMITS,
  type MergeHunk,
  mergeableText,
  mergeText,
  readChunkFormat,
  readInode,
  S_IFMT,
  S_IFREG,
  withMessage,
} from '@agentfs/core'
import type { PushRecord, ReplacedContent } from './rules.js'
import type { PendingSwap } from './state.js'

/**
 * For each whole-file write of a push, the content it started from: the inode the first write
 * of that file in the push replaced (a second write of the same file replaces the first one's
 * inode, which the server never held). That is the last version this client synced — the
 * common ancestor if another client's write won.
 */
export function ancestorsOf(record: PushRecord): Map<number, ReplacedContent> {
  const out = new Map<number, ReplacedContent>()
  for (const swap of record.swaps) {
    let root = record.replaced.get(swap.ino)
    // Each step goes to an inode replaced earlier in the push: at most one step per write.
    for (let steps = 0; root !== undefined && steps < record.replaced.size; steps++) {
      const earlier = record.replaced.get(root)
      if (earlier === undefined) break
      root = earlier
    }
    const content = root === undefined ? undefined : record.before.get(root)
    if (content && !content.over && content.size !== undefined) out.set(swap.ino, content)
  }
  return out
}

/** What merging a lost write did. */
export type SwapMerge =
  | { readonly merged: true; readonly path: string }
  | { readonly merged: false; readonly conflicts?: readonly MergeHunk[]; readonly why?: string }

interface InodeRow {
  readonly ino: number
  readonly mode: number
  readonly nlink: number
  readonly size: number
  readonly ctime: number
  readonly ctime_nsec: number
}

async function inode(q: Executor, ino: number): Promise<InodeRow | undefined> {
  const { rows } = await q.execute<InodeRow>({
    sql: 'SELECT ino, mode, nlink, size, ctime, ctime_nsec FROM fs_inode WHERE ino = ?',
    params: [ino],
  })
  return rows[0]
}

/** A file's version token, as the filesystem gives it (ctime in nanoseconds). */
const token = (row: InodeRow) => String(BigInt(row.ctime) * 1_000_000_000n + BigInt(row.ctime_nsec))
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest()
const decode = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8')

/** The bytes `content` held (holes as zeros), cut at its size. */
function assemble(content: ReplacedContent, format: ChunkFormat, ino: number): Uint8Array {
  const out = new Uint8Array(content.size ?? 0)
  for (const [index, stored] of content.chunks) {
    const at = index * format.size
    if (at >= out.length) continue
    const data = decodeChunk(format, stored, ino, 'merge')
    out.set(data.subarray(0, out.length - at), at)
  }
  return out
}

/**
 * A write of this client lost to another client's write of the same file (`swap.ino` is alive
 * but unnamed): when all three versions are text, merges this client's bytes, the winner's
 * and the last synced version (the ancestor) line by line. Merged: this client's inode takes
 * the merged text and the entry (the winner's inode is dropped, as a rewrite drops the inode it
 * replaces), in the caller's transaction, with a `write` change whose message names the merge;
 * the push applies it only if nobody replaced the file again. Otherwise nothing is changed and
 * the caller keeps this client's version as a conflict copy.
 */
export async function mergeSwap(
  q: Executor,
  swap: PendingSwap,
  ancestor: ReplacedContent | undefined,
  path: string,
  nowMs: number,
): Promise<SwapMerge> {
  if (!ancestor || swap.entry === undefined) return { merged: false }
  const { rows: entries } = await q.execute<{ ino: number }>({
    sql: 'SELECT ino FROM fs_dentry WHERE id = ? AND parent_ino = ? AND name = ?',
    params: [swap.entry, swap.parent, swap.name],
  })
  const theirsIno = entries[0]?.ino
  if (theirsIno === undefined || theirsIno === swap.ino) return { merged: false }
  const [ours, theirs] = [await inode(q, swap.ino), await inode(q, theirsIno)]
  const isFile = (row: InodeRow | undefined): row is InodeRow =>
    row !== undefined &&
    (row.mode & S_IFMT) === S_IFREG &&
    Number.isSafeInteger(row.size) &&
    row.size >= 0 &&
    row.size <= MERGE_LIMITS.bytes &&
    Number.isSafeInteger(row.ctime) &&
    Number.isSafeInteger(row.ctime_nsec)
  // A file with other links is shared: merging into a new inode would split it.
  if (!isFile(ours) || !isFile(theirs) || theirs.nlink !== 1) return { merged: false }
  let format: ChunkFormat
  try {
    format = await readChunkFormat(q)
  } catch {
    return { merged: false, why: 'the chunk size or compression is damaged' }
  }
  const chunkSize = format.size
  let base: Uint8Array
  let mine: Uint8Array
  let other: Uint8Array
  try {
    base = assemble(ancestor, format, ours.ino)
    mine = await readInode(q, ours.ino, ours.size, format)
    other = await readInode(q, theirs.ino, theirs.size, format)
  } catch (error) {
    // A chunk a peer sent that is not a BLOB: no merge (the copy keeps this client's bytes).
    if (isFsError(error, 'EIO')) return { merged: false, why: 'a version is damaged' }
    throw error
  }
  if (![base, mine, other].every(mergeableText))
    return { merged: false, why: 'not text: both versions are kept' }
  const m = mergeText(decode(base), decode(mine), decode(other), {
    ours: 'this client',
    base: 'last synced',
    theirs: 'other client',
  })
  if (!m.ok)
    return { merged: false, conflicts: m.conflicts, ...(m.reason ? { why: m.reason } : {}) }

  const merged = Buffer.from(m.text, 'utf8')
  // Later than both versions, so the file's version token moves forward.
  let sec = Math.floor(nowMs / 1000)
  let nsec = (nowMs % 1000) * 1_000_000
  for (const row of [ours, theirs])
    if (sec < row.ctime || (sec === row.ctime && nsec <= row.ctime_nsec)) {
      sec = row.ctime
      nsec = row.ctime_nsec + 1
      if (nsec > 999_999_999) [sec, nsec] = [sec + 1, 0]
    }
  await q.execute({ sql: 'DELETE FROM fs_data WHERE ino = ?', params: [ours.ino] })
  for (let index = 0; index * chunkSize < merged.length; index++)
    await q.execute({
      sql: 'INSERT INTO fs_data (ino, chunk_index, data) VALUES (?, ?, ?)',
      params: [
        ours.ino,
        index,
        encodeChunk(format, merged.subarray(index * chunkSize, (index + 1) * chunkSize)),
      ],
    })
  await q.execute({
    sql: 'UPDATE fs_inode SET size = ?, mtime = ?, mtime_nsec = ?, ctime = ?, ctime_nsec = ? WHERE ino = ?',
    params: [merged.length, sec, nsec, sec, nsec, ours.ino],
  })
  await q.execute({
    sql: 'UPDATE fs_dentry SET ino = ? WHERE id = ?',
    params: [ours.ino, swap.entry],
  })
  // The winner's inode goes, as the inode a rewrite replaces does (with its media type moved).
  await q.execute({
    sql: 'INSERT OR IGNORE INTO agentfs_mime (ino, mime_type) SELECT ?, mime_type FROM agentfs_mime WHERE ino = (SELECT ?)',
    params: [ours.ino, theirs.ino],
  })
  for (const table of ['agentfs_mime', 'fs_data', 'fs_inode'])
    await q.execute({ sql: `DELETE FROM ${table} WHERE ino = ?`, params: [theirs.ino] })
  const named = path.length > 512 ? `${path.slice(0, 512)}…` : path
  await withMessage(
    `merge of this client's write of ${named} (version ${token(ours)}) with another client's (version ${token(theirs)}); the ancestor is the last synced version`,
    () =>
      appendChange(
        q,
        {
          op: 'write',
          path,
          ino: ours.ino,
          dir: swap.parent,
          hash: sha256(merged),
          prevHash: sha256(other),
        },
        { sec, nsec },
        undefined,
      ),
  )
  return { merged: true, path }
}

/**
 * Keeps the newest ancestors within `budget` bytes in all: while reconciliations keep failing,
 * pushes would otherwise add up to 64 MiB each, without end. A forgotten ancestor only means
 * that write stays a copy if it lost (as without one).
 */
export function forgetOldest(ancestors: Map<number, ReplacedContent>, budget: number): void {
  let total = 0
  for (const content of ancestors.values()) total += content.bytes
  for (const [ino, content] of ancestors) {
    if (total <= budget) return
    ancestors.delete(ino)
    total -= content.bytes
  }
}
