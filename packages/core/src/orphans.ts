import { hostname } from 'node:os'
import { executeDeferred } from './driver.js'
import type { Queryable } from './guard-driver.js'
import { ROOT_INO } from './schema.js'

/**
 * Files unlinked while open. POSIX keeps such a file, with no name and nlink 0, until its last
 * open descriptor closes. AgentFS does the same for the handles of one process: the inode row
 * stays with nlink 0 and no entry, and `agentfs_meta` holds `orphan.<ino>` → the process that
 * keeps it (`host pid`), so that the inode is freed when that process closes it, or by the next
 * one to look after that process is gone (`freeDeadOrphans`, `fsck --repair`). Other processes
 * cannot reach such an inode: no path leads to it.
 */
export const META_ORPHAN = 'orphan.'

/**
 * What goes with an inode that lost its last link, in this order: the inode row first (a synced
 * database replays these deletes in this order, and drops the chunks only where the inode's
 * deletion took effect), its chunks, its link target, and an overlay's origin mapping of it
 * (spec v0.3 table).
 */
export const FREED_WITH_INODE = [
  ['fs_inode', 'ino'],
  ['fs_data', 'ino'],
  ['fs_symlink', 'ino'],
  ['fs_origin', 'delta_ino'],
] as const

/** This process, as an orphan's holder: `host pid`. */
export function orphanHolder(): string {
  return `${hostname()} ${process.pid}`
}

/**
 * Whether the process named by an orphan's holder may still be running: a process of this
 * machine that no longer exists is not; one of another machine cannot be checked, and counts as
 * running.
 */
export function holderAlive(holder: string): boolean {
  const match = /^(.*) (\d+)$/.exec(holder)
  if (match === null) return false
  if (match[1] !== hostname()) return true
  const pid = Number(match[2])
  if (pid === process.pid) return true
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM'
  }
}

/** Records, in the unlink's transaction, that this process keeps inode `ino` open. */
export async function keepOrphan(q: Queryable, ino: number): Promise<void> {
  await executeDeferred(q, {
    sql: 'INSERT INTO agentfs_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
    params: [`${META_ORPHAN}${ino}`, orphanHolder()],
  })
}

/** Deletes an inode's rows (see {@link FREED_WITH_INODE}). */
export async function freeInode(q: Queryable, ino: number): Promise<void> {
  for (const [table, column] of FREED_WITH_INODE)
    await executeDeferred(q, { sql: `DELETE FROM ${table} WHERE ${column} = ?`, params: [ino] })
}

/**
 * Frees orphan `ino` (in the caller's transaction): its rows go if it is still without links
 * and entries (a database can be changed by others in between), and its `orphan.` row goes.
 * Returns whether the inode was freed.
 */
export async function freeOrphan(q: Queryable, ino: number): Promise<boolean> {
  await q.execute({
    sql: 'DELETE FROM agentfs_meta WHERE key = ?',
    params: [`${META_ORPHAN}${ino}`],
  })
  if (ino === ROOT_INO) return false
  const { rows } = await q.execute<{ n: number }>({
    sql: 'SELECT count(*) AS n FROM fs_inode i WHERE i.ino = ? AND i.nlink <= 0 AND NOT EXISTS (SELECT 1 FROM fs_dentry d WHERE d.ino = i.ino)',
    params: [ino],
  })
  if (Number(rows[0]?.n ?? 0) === 0) return false
  await freeInode(q, ino)
  return true
}

/** The orphans recorded in the database: inode and holder. */
export async function listOrphans(q: Queryable): Promise<{ ino: number; holder: string }[]> {
  // A range over the primary key rather than LIKE, which cannot use it.
  const { rows } = await q.execute<{ key: string; value: string }>({
    sql: "SELECT key, value FROM agentfs_meta WHERE key >= 'orphan.' AND key < 'orphan/' ORDER BY key",
  })
  return rows
    .map((row) => ({
      ino: Number(String(row.key).slice(META_ORPHAN.length)),
      holder: String(row.value),
    }))
    .filter((row) => Number.isSafeInteger(row.ino))
}

/**
 * Frees, in one transaction, the orphans whose holder is gone (a process that ended without
 * closing them: killed, or crashed); returns how many inodes were freed.
 */
export async function freeDeadOrphans(q: Queryable): Promise<number> {
  const dead = (await listOrphans(q)).filter((o) => !holderAlive(o.holder))
  if (dead.length === 0) return 0
  return q.transaction(async (tx) => {
    let freed = 0
    for (const { ino } of dead) if (await freeOrphan(tx, ino)) freed++
    return freed
  })
}
