import { HASH_BYTES } from '../content/blob-store.js'
import type { Queryable } from '../driver/guard-driver.js'
import { EXPANSION_LIMIT, overExpansion, snapshotExpansion } from '../history/snapshot-expansion.js'
import { META_HISTORY_TRIMMED, readChunkSize } from '../schema/meta.js'
import type { Check } from './check.js'

/** How many references each chunk hash has from snapshot and version rows (hex → count). */
async function references(q: Queryable): Promise<Map<string, number>> {
  const counts = new Map<string, number>()
  for (const table of ['agentfs_snap_inode', 'agentfs_file_version']) {
    const { rows } = await q.execute<{ chunks: unknown }>({
      sql: `SELECT chunks FROM ${table} WHERE chunks IS NOT NULL`,
    })
    for (const { chunks } of rows) {
      if (!(chunks instanceof Uint8Array)) continue
      for (let at = 0; at + HASH_BYTES <= chunks.byteLength; at += HASH_BYTES) {
        const hex = Buffer.from(chunks.subarray(at, at + HASH_BYTES))
          .toString('hex')
          .toUpperCase()
        counts.set(hex, (counts.get(hex) ?? 0) + 1)
      }
    }
  }
  return counts
}

async function storedRefs(q: Queryable): Promise<Map<string, number>> {
  const { rows } = await q.execute<{ hash: string; refs: number }>({
    sql: 'SELECT hex(hash) AS hash, refs FROM agentfs_blob',
  })
  return new Map(rows.map((r) => [r.hash, Number(r.refs)]))
}

/** Sets every chunk's reference count to the references there are; drops unreferenced chunks. */
async function recount(q: Queryable): Promise<void> {
  const counted = await references(q)
  for (const [hash, refs] of await storedRefs(q)) {
    const n = counted.get(hash) ?? 0
    if (n === refs) continue
    await q.execute(
      n === 0
        ? { sql: 'DELETE FROM agentfs_blob WHERE hex(hash) = ?', params: [hash] }
        : { sql: 'UPDATE agentfs_blob SET refs = ? WHERE hex(hash) = ?', params: [n, hash] },
    )
  }
}

/** Rows of a snapshot table no snapshot sees (closed, with no snapshot id in their span). */
const DEAD = (table: string) =>
  `SELECT count(*) FROM ${table} WHERE until IS NOT NULL AND NOT EXISTS (SELECT 1 FROM agentfs_snapshot s WHERE s.id >= since AND s.id < until)`

/** Rules of the history tables: the change feed, snapshots, versions and their chunk store. */
export const HISTORY_CHECKS: readonly Check[] = [
  {
    rule: 'feed-gap',
    repairable: false,
    // Plain sequence numbers only (a synced database's client ids leave gaps by design), and
    // only after what was trimmed.
    find: `SELECT c.seq AS ino, NULL AS detail FROM agentfs_change c
WHERE c.seq > 1 AND c.seq < 4294967296
  AND c.seq - 1 > coalesce((SELECT CAST(value AS INTEGER) FROM agentfs_meta WHERE key = '${META_HISTORY_TRIMMED}'), 0)
  AND NOT EXISTS (SELECT 1 FROM agentfs_change p WHERE p.seq = c.seq - 1)
  AND EXISTS (SELECT 1 FROM agentfs_change p WHERE p.seq < c.seq)`,
    message: (r) =>
      `the change feed has a gap before change ${r.ino}: rows were deleted outside trim()`,
  },
  {
    rule: 'snapshot-open-rows',
    repairable: false,
    find: `SELECT ino, count(*) AS detail FROM agentfs_snap_inode WHERE until IS NULL GROUP BY ino HAVING count(*) > 1
UNION ALL SELECT parent_ino AS ino, name AS detail FROM agentfs_snap_dentry WHERE until IS NULL GROUP BY parent_ino, name HAVING count(*) > 1
UNION ALL SELECT NULL AS ino, key AS detail FROM agentfs_snap_kv WHERE until IS NULL GROUP BY key HAVING count(*) > 1`,
    message: (r) =>
      `snapshots hold two current states of ${r.ino === null ? `key '${r.detail}'` : `inode or entry ${r.ino} (${r.detail})`}; restore from a backup or delete every snapshot`,
  },
  {
    rule: 'snapshot-span',
    repairable: false,
    find: `SELECT ino, since AS detail FROM agentfs_snap_inode WHERE until IS NOT NULL AND until <= since
UNION ALL SELECT ino, since AS detail FROM agentfs_snap_dentry WHERE until IS NOT NULL AND until <= since`,
    message: (r) => `a snapshot row of inode ${r.ino} ends before it begins (at ${r.detail})`,
  },
  {
    rule: 'snapshot-garbage',
    repairable: true,
    find: `SELECT NULL AS ino, n AS detail FROM (SELECT (${DEAD('agentfs_snap_inode')}) + (${DEAD('agentfs_snap_dentry')}) + (${DEAD('agentfs_snap_kv')}) AS n) WHERE n > 0`,
    message: (r) => `${r.detail} snapshot rows belong to no snapshot (space not reclaimed)`,
    async fix(q) {
      for (const table of ['agentfs_snap_inode', 'agentfs_snap_dentry', 'agentfs_snap_kv'])
        await q.execute({ sql: DEAD(table).replace('SELECT count(*) FROM', 'DELETE FROM') })
      // The rows dropped held chunk references.
      await recount(q)
    },
  },
  {
    rule: 'chunk-missing',
    repairable: false,
    async find(q) {
      const stored = await storedRefs(q)
      return [...(await references(q)).keys()]
        .filter((hash) => !stored.has(hash))
        .map((hash) => ({ ino: null, detail: hash }))
    },
    message: (r) =>
      `snapshot or version content refers to chunk ${r.detail}, which the chunk store lost; delete the snapshots that need it`,
  },
  {
    rule: 'snapshot-expansion',
    repairable: false,
    async find(q) {
      const chunkSize = await readChunkSize(q)
      // A cheap count first: only a snapshot whose chunk references could pass the floor is
      // read hash by hash.
      const { rows } = await q.execute<{ id: number; name: string | null; refs: number }>({
        sql: `SELECT s.id AS id, s.name AS name, (SELECT coalesce(sum(length(i.chunks)), 0) / ${HASH_BYTES} FROM agentfs_snap_inode i
  WHERE i.since <= s.id AND (i.until IS NULL OR i.until > s.id) AND i.chunks IS NOT NULL) AS refs
FROM agentfs_snapshot s ORDER BY s.id`,
      })
      const found: { ino: null; detail: string }[] = []
      for (const { id, name, refs } of rows) {
        if (Number(refs) * chunkSize <= EXPANSION_LIMIT.minBytes) continue
        const e = await snapshotExpansion(q, id, chunkSize)
        if (overExpansion(e))
          found.push({
            ino: null,
            detail: `'${name ?? id}' expands to ${e.bytes} bytes from ${e.stored} stored`,
          })
      }
      return found
    },
    message: (r) =>
      `snapshot ${r.detail}, over ${EXPANSION_LIMIT.ratio}x: crafted? restore and branch refuse it; delete the snapshot`,
  },
  {
    rule: 'chunk-refs',
    repairable: true,
    async find(q) {
      const counted = await references(q)
      return [...(await storedRefs(q))]
        .filter(([hash, refs]) => refs !== (counted.get(hash) ?? 0))
        .map(([hash]) => ({ ino: null, detail: hash }))
    },
    message: (r) => `chunk ${r.detail} has a wrong reference count`,
    fix: recount,
  },
]
