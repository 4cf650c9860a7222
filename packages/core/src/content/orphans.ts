import { hostname } from 'node:os'
import { executeDeferred, placeholders } from '../driver/driver.js'
import type { Queryable } from '../driver/guard-driver.js'
import { ROOT_INO } from '../schema/schema.js'

/**
 * Files unlinked while open. POSIX keeps such a file, with no name and nlink 0, until its last
 * open descriptor closes. AgentFS does the same for the handles of one process: the inode row
 * stays with nlink 0 and no entry, and `agentfs_meta` holds `orphan.<ino>` → the process that
 * keeps it and when it last said so (`host pid ms`), so that the inode is freed when that
 * process closes it, or by the next one to look after that process is gone
 * (`freeDeadOrphans`, `fsck --repair`). Other processes
 * cannot reach such an inode: no path leads to it.
 */
export const META_ORPHAN = 'orphan.'

/**
 * What goes with an inode that lost its last link, in this order: the inode row first (a synced
 * database replays these deletes in this order, and drops the chunks only where the inode's
 * deletion took effect), its chunks, its link target, an overlay's origin mapping of it
 * (spec v0.3 table) and its stored MIME type.
 */
export const FREED_WITH_INODE = [
  ['fs_inode', 'ino'],
  ['fs_data', 'ino'],
  ['fs_symlink', 'ino'],
  ['fs_origin', 'delta_ino'],
  ['agentfs_mime', 'ino'],
] as const

/** This machine's name, asked once (each `hostname()` is a system call). */
let host: string | undefined
const thisHost = () => {
  host ??= hostname()
  return host
}

/**
 * How often a process renews the records of the orphans it keeps (`renewOrphans`), and how old
 * a renewal of another machine's process may be before its orphans count as abandoned: a
 * process on another machine cannot be asked whether it still runs.
 */
export const ORPHAN_RENEW_MS = 60_000
export const ORPHAN_LEASE_MS = 10 * ORPHAN_RENEW_MS

/** This process, as an orphan's holder at time `now`: `host pid ms`. */
export function orphanHolder(now = Date.now()): string {
  return `${thisHost()} ${process.pid} ${now}`
}

/**
 * Whether the process named by an orphan's holder may still be running: a process of this
 * machine that no longer exists is not; one of another machine is while its last renewal is
 * younger than {@link ORPHAN_LEASE_MS} (a holder written without one, by an earlier version,
 * counts as running).
 */
export function holderAlive(holder: string, now = Date.now()): boolean {
  const match = /^(\S+) (\d+)(?: (\d+))?$/.exec(holder)
  if (match === null) return false
  if (match[1] !== thisHost())
    return match[3] === undefined || now - Number(match[3]) < ORPHAN_LEASE_MS
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

/** Inodes per statement of the batched frees (well within every engine's parameter limit). */
export const INODE_BATCH = 500

/** Of inodes `inos` (at most {@link INODE_BATCH}), those left without a link. */
export async function unlinkedOf(q: Queryable, inos: readonly number[]): Promise<number[]> {
  const { rows } = await q.execute<{ ino: number }>({
    // nlink alone, as the spec's unlink decides (fs_dentry has no index on ino to look in).
    sql: `SELECT ino FROM fs_inode WHERE ino IN (${placeholders(inos.length)}) AND nlink <= 0`,
    params: [...inos],
  })
  return rows.map((row) => Number(row.ino))
}

/**
 * Deletes the rows of inodes `inos` (see {@link FREED_WITH_INODE}) in the caller's transaction,
 * a batch per statement. A synced database frees one inode at a time ({@link freeInode}): its
 * replay relies on that statement order.
 */
export async function freeInodes(q: Queryable, inos: readonly number[]): Promise<void> {
  for (let i = 0; i < inos.length; i += INODE_BATCH) {
    const batch = inos.slice(i, i + INODE_BATCH)
    const list = placeholders(batch.length)
    for (const [table, column] of FREED_WITH_INODE)
      await q.execute({ sql: `DELETE FROM ${table} WHERE ${column} IN (${list})`, params: batch })
  }
}

/**
 * Frees orphans `inos` (in the caller's transaction), a batch per statement: the rows of each
 * that still has no link go (a link made since would have raised its nlink), and every one's
 * `orphan.` record goes. Returns how many inodes were freed.
 */
export async function freeOrphans(q: Queryable, inos: readonly number[]): Promise<number> {
  let freed = 0
  for (let i = 0; i < inos.length; i += INODE_BATCH) {
    const batch = inos.slice(i, i + INODE_BATCH).filter((ino) => ino !== ROOT_INO)
    if (batch.length === 0) continue
    await q.execute({
      sql: `DELETE FROM agentfs_meta WHERE key IN (${placeholders(batch.length)})`,
      params: batch.map((ino) => `${META_ORPHAN}${ino}`),
    })
    const dead = await unlinkedOf(q, batch)
    await freeInodes(q, dead)
    freed += dead.length
  }
  return freed
}

/**
 * Renews this process's records of orphans `inos` (a batch per statement; records that are gone,
 * freed or rolled back, stay gone), so that other machines do not take them for abandoned.
 */
export async function renewOrphans(q: Queryable, inos: readonly number[]): Promise<void> {
  const holder = orphanHolder()
  for (let i = 0; i < inos.length; i += INODE_BATCH) {
    const batch = inos.slice(i, i + INODE_BATCH)
    await q.execute({
      sql: `UPDATE agentfs_meta SET value = ? WHERE key IN (${placeholders(batch.length)})`,
      params: [holder, ...batch.map((ino) => `${META_ORPHAN}${ino}`)],
    })
  }
}

/**
 * The range of the `orphan.<ino>` keys, from (inclusive) and to (exclusive): `.` is followed by
 * `/` in code-point order. A range over the primary key, which LIKE cannot use.
 */
export const ORPHAN_KEYS = [META_ORPHAN, `${META_ORPHAN.slice(0, -1)}/`] as const

/** The orphans recorded in the database: inode and holder. */
export async function listOrphans(q: Queryable): Promise<{ ino: number; holder: string }[]> {
  const { rows } = await q.execute<{ key: string; value: string }>({
    sql: 'SELECT key, value FROM agentfs_meta WHERE key >= (SELECT ?) AND key < (SELECT ?) ORDER BY key',
    params: [...ORPHAN_KEYS],
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
  return q.transaction((tx) =>
    freeOrphans(
      tx,
      dead.map((o) => o.ino),
    ),
  )
}
