import {
  type Executor,
  executeDeferred,
  explicitId,
  freeInode,
  freeInodes,
  INODE_BATCH,
  insertedRowid,
  keepOrphan,
  placeholders,
  type Queryable,
  ROOT_INO,
  recursiveQueries,
  type Timestamp,
  unlinkedOf,
} from '@agentfs/core'
import type { Holds } from './holds.js'
import { CTIME_SQL, INODE_BY_INO, type InodeRow, touchCtime } from './inode.js'

const TOUCH_CONTENT_SQL = `UPDATE fs_inode SET size = ?, mtime = ?, mtime_nsec = ?, ${CTIME_SQL} WHERE ino = ?`
const TOUCH_DIR_SQL = `UPDATE fs_inode SET mtime = ?, mtime_nsec = ?, ${CTIME_SQL} WHERE ino = ?`
const touchMetaSql = new Map<string, string>()
const DROP_LINKS_SQL = `UPDATE fs_inode SET nlink = nlink - ?, ${CTIME_SQL} WHERE ino = ?`
const INODE_VALUES =
  'mode, nlink, uid, gid, size, atime, mtime, ctime, rdev, atime_nsec, mtime_nsec, ctime_nsec'
const INSERT_INODE_WITH_ID = `INSERT INTO fs_inode (ino, ${INODE_VALUES}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
const INSERT_INODE = `INSERT INTO fs_inode (${INODE_VALUES}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

/** Loads one inode row. */
export async function loadInode(q: Executor, ino: number): Promise<InodeRow | undefined> {
  const { rows } = await q.execute<InodeRow>({
    sql: INODE_BY_INO,
    params: [ino],
  })
  return rows[0]
}

/** Records a content change: size, mtime = now, ctime moved forward. */
export async function touchContent(
  q: Executor,
  ino: number,
  size: number,
  now: Timestamp,
): Promise<void> {
  const ctime = touchCtime(now)
  await executeDeferred(q, {
    sql: TOUCH_CONTENT_SQL,
    params: [size, now.sec, now.nsec, ...ctime.params, ino],
  })
}

/** Records a metadata change: ctime moved forward, plus the given column assignments. */
export async function touchMeta(
  q: Executor,
  ino: number,
  now: Timestamp,
  set: Record<string, number> = {},
): Promise<void> {
  const columns = Object.keys(set)
  const ctime = touchCtime(now)
  const key = columns.join()
  let sql = touchMetaSql.get(key)
  if (sql === undefined) {
    const extra = columns.map((c) => `${c} = ?`).join(', ')
    sql = `UPDATE fs_inode SET ${extra ? `${extra}, ` : ''}${CTIME_SQL} WHERE ino = ?`
    // The callers' column sets are a handful of literals; the bound keeps a stray one harmless.
    if (touchMetaSql.size < 64) touchMetaSql.set(key, sql)
  }
  await executeDeferred(q, {
    sql,
    params: [...columns.map((c) => set[c]!), ...ctime.params, ino],
  })
}

/** A directory's entries changed: its mtime and ctime move. */
export function touchDir(q: Executor, ino: number, now: Timestamp): Promise<void> {
  const ctime = touchCtime(now)
  return executeDeferred(q, {
    sql: TOUCH_DIR_SQL,
    params: [now.sec, now.nsec, ...ctime.params, ino],
  })
}

/**
 * Inserts an inode with all three times `now`; returns its number (the synced database's id, or
 * the engine's).
 */
export async function insertInode(
  q: Executor,
  mode: number,
  nlink: number,
  size: number,
  uid: number,
  gid: number,
  now: Timestamp,
  rdev = 0,
): Promise<number> {
  const values = [
    mode,
    nlink,
    uid,
    gid,
    size,
    now.sec,
    now.sec,
    now.sec,
    rdev,
    now.nsec,
    now.nsec,
    now.nsec,
  ]
  const id = await explicitId(q, 'fs_inode')
  if (id !== undefined) {
    await executeDeferred(q, { sql: INSERT_INODE_WITH_ID, params: [id, ...values] })
    return id
  }
  const inserted = await q.execute({
    sql: INSERT_INODE,
    params: values,
  })
  return insertedRowid(q, inserted)
}

/** Inserts a directory entry (with the synced database's id where it chooses ids). */
export async function insertDentry(
  q: Executor,
  parent: number,
  name: string,
  ino: number,
): Promise<void> {
  const id = await explicitId(q, 'fs_dentry')
  await executeDeferred(
    q,
    id === undefined
      ? {
          sql: 'INSERT INTO fs_dentry (name, parent_ino, ino) VALUES (?, ?, ?)',
          params: [name, parent, ino],
        }
      : {
          sql: 'INSERT INTO fs_dentry (id, name, parent_ino, ino) VALUES (?, ?, ?, ?)',
          params: [id, name, parent, ino],
        },
  )
}

/** Creates an inode and its directory entry (nlink 1); returns the new inode number. */
export async function createNode(
  q: Executor,
  parent: number,
  name: string,
  init: { mode: number; uid: number; gid: number; size?: number; rdev?: number; now: Timestamp },
): Promise<number> {
  const { now } = init
  const ino = await insertInode(q, init.mode, 1, init.size ?? 0, init.uid, init.gid, now, init.rdev)
  await insertDentry(q, parent, name, ino)
  await touchDir(q, parent, now)
  return ino
}

/**
 * Removes one directory entry and drops the inode (with its chunks and symlink target) when it
 * was the last link. The caller checks types and emptiness.
 */
export async function removeEntry(
  q: Queryable,
  parent: number,
  name: string,
  node: InodeRow,
  now: Timestamp,
  holds?: Holds,
) {
  await executeDeferred(q, {
    sql: 'DELETE FROM fs_dentry WHERE parent_ino = ? AND name = ?',
    params: [parent, name],
  })
  await dropLink(q, node.ino, 1, now, holds)
  await touchDir(q, parent, now)
}

/**
 * Whether an inode that lost its last link stays, as an orphan, because a handle of this
 * process holds it open (a synced database frees at once: its replay knows no orphans). Records
 * the orphan in the change's transaction.
 */
async function keptOpen(q: Queryable, ino: number, holds: Holds | undefined): Promise<boolean> {
  if (holds === undefined || !holds.held(ino) || q.capabilities?.sync !== undefined) return false
  await keepOrphan(q, ino)
  holds.kept(ino)
  return true
}

/**
 * Decrements nlink by `count`; frees the inode when no link is left, unless `holds` says this
 * process has it open (it is freed at the last close).
 */
export async function dropLink(
  q: Queryable,
  ino: number,
  count: number,
  now: Timestamp,
  holds?: Holds,
): Promise<void> {
  if (ino === ROOT_INO) return
  const ctime = touchCtime(now)
  // An update and a read rather than RETURNING: a remote driver sends both in one request.
  await executeDeferred(q, {
    sql: DROP_LINKS_SQL,
    params: [count, ...ctime.params, ino],
  })
  const { rows } = await q.execute<{ nlink: number }>({
    sql: 'SELECT nlink FROM fs_inode WHERE ino = ?',
    params: [ino],
  })
  if ((rows[0]?.nlink ?? 0) <= 0 && !(await keptOpen(q, ino, holds))) await freeInode(q, ino)
}

/**
 * {@link dropLink} for many inodes (`links`: inode → links removed), a batch of inodes per
 * statement: the link counts moved, the inodes left without links found, then their rows,
 * chunks, link targets and origins deleted. A synced database takes the per-inode path, whose
 * statement order its replay relies on.
 */
export async function dropLinks(
  q: Queryable,
  links: ReadonlyMap<number, number>,
  now: Timestamp,
  holds?: Holds,
): Promise<void> {
  if (q.capabilities?.sync !== undefined) {
    for (const [ino, count] of links) await dropLink(q, ino, count, now)
    return
  }
  const byCount = new Map<number, number[]>()
  for (const [ino, count] of links) {
    if (ino === ROOT_INO) continue
    const group = byCount.get(count)
    if (group) group.push(ino)
    else byCount.set(count, [ino])
  }
  const ctime = touchCtime(now)
  const dead: number[] = []
  for (const [count, inos] of byCount)
    for (let i = 0; i < inos.length; i += INODE_BATCH) {
      const batch = inos.slice(i, i + INODE_BATCH)
      await q.execute({
        sql: `UPDATE fs_inode SET nlink = nlink - ?, ${ctime.sql} WHERE ino IN (${placeholders(batch.length)})`,
        params: [count, ...ctime.params, ...batch],
      })
      for (const ino of await unlinkedOf(q, batch))
        if (!(await keptOpen(q, ino, holds))) dead.push(ino)
    }
  await freeInodes(q, dead)
}

/** Deepest directory nesting `pathOf` follows before it gives up (a cycle, or a damaged tree). */
const MAX_PATH_DEPTH = 4096

/** Absolute path of an inode, walking dentries up to the root (first link of each). */
export async function pathOf(q: Executor, ino: number): Promise<string> {
  if (!recursiveQueries(q)) return pathOfByLoop(q, ino)
  const { rows } = await q.execute<{ name: string }>({
    sql: `WITH RECURSIVE up(ino, name, depth) AS (
  SELECT parent_ino, name, 0 FROM (SELECT parent_ino, name FROM fs_dentry WHERE ino = ? ORDER BY id LIMIT 1)
  UNION ALL
  SELECT d.parent_ino, d.name, up.depth + 1 FROM up JOIN fs_dentry d ON d.id = (SELECT id FROM fs_dentry WHERE ino = up.ino ORDER BY id LIMIT 1)
  WHERE up.ino != ${ROOT_INO} AND up.depth < ${MAX_PATH_DEPTH}
)
SELECT name FROM up ORDER BY depth DESC`,
    params: [ino],
  })
  return `/${rows.map((r) => r.name).join('/')}`
}

/** {@link pathOf} one statement per level, for engines without `WITH RECURSIVE`. */
async function pathOfByLoop(q: Executor, ino: number): Promise<string> {
  const names: string[] = []
  let current = ino
  for (let depth = 0; current !== ROOT_INO && depth <= MAX_PATH_DEPTH; depth++) {
    const { rows } = await q.execute<{ parent_ino: number; name: string }>({
      sql: 'SELECT parent_ino, name FROM fs_dentry WHERE ino = ? ORDER BY id LIMIT 1',
      params: [current],
    })
    const row = rows[0]
    if (!row) break
    names.push(row.name)
    current = row.parent_ino
  }
  return `/${names.reverse().join('/')}`
}

/** True when directory `ino` is `ancestor` or lies below it. */
export async function isInside(q: Executor, ino: number, ancestor: number): Promise<boolean> {
  if (ino === ancestor) return true
  if (!recursiveQueries(q)) return isInsideByLoop(q, ino, ancestor)
  const { rows } = await q.execute<{ found: number }>({
    // UNION, not UNION ALL: each inode is visited once, so a crafted tree (a directory with
    // several parent entries, a cycle) costs at most one row per directory, never a row per
    // path through it.
    sql: `WITH RECURSIVE up(ino) AS (
  SELECT ?
  UNION
  SELECT d.parent_ino FROM up JOIN fs_dentry d ON d.ino = up.ino WHERE up.ino != ${ROOT_INO}
)
SELECT COUNT(*) AS found FROM up WHERE ino = ?`,
    params: [ino, ancestor],
  })
  return (rows[0]?.found ?? 0) > 0
}

/**
 * {@link isInside} one statement per level, for engines without `WITH RECURSIVE`: every parent
 * entry is followed (a damaged tree may give a directory two), each inode once, to the depth
 * limit.
 */
async function isInsideByLoop(q: Executor, ino: number, ancestor: number): Promise<boolean> {
  const seen = new Set<number>([ino])
  let level = [ino]
  for (let depth = 0; level.length > 0 && depth < MAX_PATH_DEPTH; depth++) {
    const next: number[] = []
    for (const current of level) {
      if (current === ROOT_INO) continue
      const { rows } = await q.execute<{ parent_ino: number }>({
        sql: 'SELECT parent_ino FROM fs_dentry WHERE ino = ?',
        params: [current],
      })
      for (const { parent_ino: parent } of rows) {
        if (parent === ancestor) return true
        if (seen.has(parent)) continue
        seen.add(parent)
        next.push(parent)
      }
    }
    level = next
  }
  return false
}
