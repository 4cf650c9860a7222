import {
  freeOrphans,
  holderAlive,
  listOrphans,
  META_ORPHAN,
  ORPHAN_KEYS,
} from '../content/orphans.js'
import type { Queryable } from '../driver/guard-driver.js'
import { ROOT_INO } from '../schema/schema.js'
import type { Check, FindRow } from './check.js'

/** The inode numbers of the `orphan.<ino>` records, as a subquery (two parameters: ORPHAN_KEYS). */
const RECORDED = `SELECT CAST(substr(key, ${META_ORPHAN.length + 1}) AS INTEGER) FROM agentfs_meta WHERE key >= ? AND key < ?`

/**
 * Orphan records that need repair: inodes unlinked while open in a process that is gone
 * (`detail`: the holder), and records of inodes that have links again or no longer exist. Two
 * statements whatever the number of records (a hostile file may hold many): the recorded inodes
 * without links, and those of them that still have an entry.
 */
async function unlinkedOpen(q: Queryable): Promise<FindRow[]> {
  const orphans = await listOrphans(q)
  if (orphans.length === 0) return []
  const inodes = await q.execute<{ ino: number }>({
    sql: `SELECT ino FROM fs_inode WHERE nlink <= 0 AND ino IN (${RECORDED})`,
    params: [...ORPHAN_KEYS],
  })
  const named = await q.execute<{ ino: number }>({
    sql: `SELECT DISTINCT ino FROM fs_dentry WHERE ino IN (${RECORDED})`,
    params: [...ORPHAN_KEYS],
  })
  const entries = new Set(named.rows.map((row) => Number(row.ino)))
  const unlinked = new Set(
    inodes.rows.map((row) => Number(row.ino)).filter((ino) => !entries.has(ino)),
  )
  const found: FindRow[] = []
  for (const { ino, holder } of orphans) {
    if (!unlinked.has(ino)) found.push({ ino, detail: null })
    else if (!holderAlive(holder)) found.push({ ino, detail: holder })
  }
  return found
}

/** The rules about inodes without a name: unreachable ones, and those unlinked while open. */
export const ORPHAN_CHECKS: readonly Check[] = [
  {
    rule: 'orphan-inode',
    repairable: false,
    // An inode unlinked while open is recorded as such (rule unlinked-open).
    find: `SELECT i.ino AS ino, i.mode AS detail FROM fs_inode i WHERE i.ino != ${ROOT_INO} AND NOT EXISTS (SELECT 1 FROM fs_dentry d WHERE d.ino = i.ino) AND NOT EXISTS (SELECT 1 FROM agentfs_meta m WHERE m.key = '${META_ORPHAN}' || i.ino)`,
    message: (r) => `inode ${r.ino} has no directory entry (unreachable)`,
  },
  {
    rule: 'unlinked-open',
    repairable: true,
    find: unlinkedOpen,
    message: (r) =>
      r.detail === null
        ? `inode ${r.ino} is recorded as unlinked while open, but it has links or does not exist`
        : `inode ${r.ino} was unlinked while open in a process that is gone (${r.detail}); it is freed on repair`,
    async fix(tx) {
      await freeOrphans(
        tx,
        (await unlinkedOpen(tx)).map((row) => row.ino!),
      )
    },
  },
]
