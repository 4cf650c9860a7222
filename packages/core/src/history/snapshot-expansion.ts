import { createHash } from 'node:crypto'
import { HASH_BYTES } from '../content/blob-store.js'
import type { Executor } from '../driver/driver.js'
import { AgentFsError } from '../errors.js'
import { S_IFMT, S_IFREG } from '../schema/schema.js'

/**
 * What one snapshot may expand to when it is restored or branched: its files' bytes may be at
 * most `ratio` times the distinct bytes its chunks store, or `minBytes`, whichever is more.
 * Deduplication makes a snapshot small on disk; a crafted one (one chunk referred to 100,000
 * times) would make a 3 MB database grow by hundreds of MB. Holes (chunks of zeros) cost
 * nothing to restore and are not counted.
 */
export interface ExpansionLimit {
  readonly ratio: number
  readonly minBytes: number
}

export const EXPANSION_LIMIT: ExpansionLimit = { ratio: 100, minBytes: 64 * 1024 * 1024 }

/** Rows read per statement while counting. */
const PAGE = 512

/** The bytes snapshot `id`'s files restore to, and the distinct bytes they are made of. */
export async function snapshotExpansion(
  q: Executor,
  id: number,
  chunkSize: number,
): Promise<{ bytes: number; stored: number }> {
  const zero = createHash('sha256').update(Buffer.alloc(chunkSize)).digest('hex')
  const distinct = new Set<string>()
  let references = 0
  let after = -1
  for (;;) {
    const { rows } = await q.execute<{ ino: number; chunks: Uint8Array | null }>({
      sql: `SELECT ino, chunks FROM agentfs_snap_inode
WHERE since <= ? AND (until IS NULL OR until > ?) AND (mode & ${S_IFMT}) = ${S_IFREG} AND ino > ?
ORDER BY ino LIMIT ${PAGE}`,
      params: [id, id, after],
    })
    for (const { ino, chunks } of rows) {
      after = ino
      if (!(chunks instanceof Uint8Array)) continue
      for (let at = 0; at + HASH_BYTES <= chunks.byteLength; at += HASH_BYTES) {
        const hex = Buffer.from(chunks.subarray(at, at + HASH_BYTES)).toString('hex')
        if (hex === zero) continue
        references++
        distinct.add(hex)
      }
    }
    if (rows.length < PAGE) break
  }
  return { bytes: references * chunkSize, stored: distinct.size * chunkSize }
}

/** Whether an expansion is past `limit`. */
export function overExpansion(
  e: { bytes: number; stored: number },
  limit: ExpansionLimit = EXPANSION_LIMIT,
): boolean {
  return e.bytes > Math.max(limit.minBytes, limit.ratio * e.stored)
}

/**
 * Refuses (TOO_BIG), before any effect, to restore or branch snapshot `name` when it would
 * expand past `limit`.
 */
export async function checkExpansion(
  q: Executor,
  id: number,
  name: string,
  chunkSize: number,
  limit: ExpansionLimit = EXPANSION_LIMIT,
): Promise<void> {
  const e = await snapshotExpansion(q, id, chunkSize)
  if (overExpansion(e, limit))
    throw new AgentFsError(
      'TOO_BIG',
      `snapshot '${name}' would expand to ${e.bytes} bytes from ${e.stored} stored (over ${limit.ratio}x, the limit); nothing was changed. Run fsck: a snapshot like this is usually crafted. To allow it, raise the history's expansion limit`,
    )
}
