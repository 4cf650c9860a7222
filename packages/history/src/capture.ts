import {
  type ChunkFormat,
  captureChunks,
  type Executor,
  META_HISTORY_TIP,
  META_HISTORY_TRIMMED,
  type Queryable,
  readMeta,
  writeMeta,
} from '@agentfs/core'
import {
  closeInode,
  insertSnapInode,
  isDirMode,
  isRegMode,
  liveInode,
  openInode,
  type SnapInode,
  sameInode,
} from './rows.js'

/** What changed since the newest snapshot, as far as a snapshot needs to look. */
export interface Candidates {
  /** Inodes whose row may differ. */
  readonly inodes: Set<number>
  /** Directories whose entries may differ. */
  readonly dirs: Set<number>
  /** kv keys that may differ. */
  readonly keys: Set<string>
  /** kv prefixes cleared. */
  readonly prefixes: Set<string>
  /** Everything: the whole tree and store are compared. */
  full: boolean
}

export const noCandidates = (): Candidates => ({
  inodes: new Set(),
  dirs: new Set(),
  keys: new Set(),
  prefixes: new Set(),
  full: false,
})

/** The newest sequence number trimmed from the feed (0: none). */
export async function trimmedUpTo(q: Executor): Promise<number> {
  const value = Number((await readMeta(q, META_HISTORY_TRIMMED)) ?? 0)
  return Number.isSafeInteger(value) ? value : Number.MAX_SAFE_INTEGER
}

/** Records that feed rows up to `seq` were deleted. */
export async function recordTrim(q: Executor, seq: number): Promise<void> {
  if (seq > (await trimmedUpTo(q))) await writeMeta(q, META_HISTORY_TRIMMED, String(seq))
}

/**
 * The snapshot the open rows describe and the feed position it was taken at. A value that is
 * not one (a damaged or crafted database) counts as none: the next snapshot compares everything.
 */
export async function readTip(q: Executor): Promise<{ id: number; seq: number } | undefined> {
  const value = await readMeta(q, META_HISTORY_TIP)
  if (typeof value !== 'string') return undefined
  let tip: { id?: unknown; seq?: unknown } | null
  try {
    tip = JSON.parse(value) as { id?: unknown; seq?: unknown } | null
  } catch {
    return undefined
  }
  return Number.isSafeInteger(tip?.id) && Number.isSafeInteger(tip?.seq)
    ? { id: tip!.id as number, seq: tip!.seq as number }
    : undefined
}

export const writeTip = (q: Executor, tip: { id: number; seq: number } | undefined) =>
  writeMeta(q, META_HISTORY_TIP, tip === undefined ? undefined : JSON.stringify(tip))

/**
 * What the feed says changed after `seq`. Undefined when the feed cannot say: rows after `seq`
 * were trimmed, so the caller compares everything.
 */
export async function changedSince(q: Executor, seq: number): Promise<Candidates | undefined> {
  // Rows after the tip were trimmed from the feed: it no longer knows what changed.
  if ((await trimmedUpTo(q)) > seq) return undefined
  const found = noCandidates()
  const { rows } = await q.execute<{
    op: string
    path: string | null
    ino: number | null
    dir_ino: number | null
    dir2_ino: number | null
  }>({
    sql: 'SELECT op, path, ino, dir_ino, dir2_ino FROM agentfs_change WHERE seq > ? ORDER BY seq',
    params: [seq],
  })
  for (const row of rows) {
    if (row.op === 'kv-set' || row.op === 'kv-delete') {
      if (row.path !== null) found.keys.add(row.path)
      continue
    }
    if (row.op === 'kv-clear') {
      found.prefixes.add(row.path ?? '')
      continue
    }
    if (row.ino !== null) found.inodes.add(row.ino)
    for (const dir of [row.dir_ino, row.dir2_ino]) {
      if (dir === null) continue
      found.dirs.add(dir)
      found.inodes.add(dir)
    }
  }
  return found
}

/** Everything, for a first snapshot or a full comparison. */
async function everything(q: Executor): Promise<Candidates> {
  const all = noCandidates()
  all.full = true
  const inodes = await q.execute<{ ino: number; mode: number }>({
    sql: 'SELECT ino, mode FROM fs_inode UNION SELECT ino, mode FROM agentfs_snap_inode WHERE until IS NULL',
  })
  for (const { ino, mode } of inodes.rows) {
    all.inodes.add(ino)
    if (isDirMode(mode)) all.dirs.add(ino)
  }
  const keys = await q.execute<{ key: string }>({
    sql: 'SELECT key FROM kv_store UNION SELECT key FROM agentfs_snap_kv WHERE until IS NULL',
  })
  for (const { key } of keys.rows) all.keys.add(key)
  return all
}

/**
 * Brings the open rows to the live state for everything in `candidates`: rows that differ are
 * closed at snapshot `id` and the live state is inserted from `id` on. Work and space are
 * proportional to what differs (plus the entries of changed directories).
 */
export async function advance(
  q: Queryable,
  id: number,
  format: ChunkFormat,
  given: Candidates,
): Promise<void> {
  const c = given.full ? await everything(q) : given
  const doneDirs = new Set<number>()
  const doneInodes = new Set<number>()
  const dirs = [...c.dirs]
  const inodes = [...c.inodes]
  while (dirs.length > 0 || inodes.length > 0) {
    const dir = dirs.pop()
    if (dir !== undefined) {
      if (doneDirs.has(dir)) continue
      doneDirs.add(dir)
      for (const ino of await advanceEntries(q, id, dir)) inodes.push(ino)
      continue
    }
    const ino = inodes.pop()!
    if (doneInodes.has(ino)) continue
    doneInodes.add(ino)
    const outcome = await advanceInode(q, id, format, ino)
    // A directory that appears or goes: its entries appear or go with it.
    if (outcome.dirChanged) dirs.push(ino)
  }
  await advanceKv(q, id, c)
}

/** Diffs one directory's entries; returns the inodes that gained or lost an entry. */
async function advanceEntries(q: Executor, id: number, dir: number): Promise<number[]> {
  const live = await q.execute<{ name: string; ino: number }>({
    sql: 'SELECT name, ino FROM fs_dentry WHERE parent_ino = ?',
    params: [dir],
  })
  const open = await q.execute<{ name: string; ino: number }>({
    sql: 'SELECT name, ino FROM agentfs_snap_dentry WHERE parent_ino = ? AND until IS NULL',
    params: [dir],
  })
  const before = new Map(open.rows.map((r) => [r.name, r.ino]))
  const touched: number[] = []
  for (const { name, ino } of live.rows) {
    const was = before.get(name)
    before.delete(name)
    if (was === ino) continue
    if (was !== undefined) {
      await closeEntry(q, id, dir, name)
      touched.push(was)
    }
    await q.execute({
      sql: 'INSERT INTO agentfs_snap_dentry (parent_ino, name, ino, since, until) VALUES (?, ?, ?, ?, NULL)',
      params: [dir, name, ino, id],
    })
    touched.push(ino)
  }
  for (const [name, was] of before) {
    await closeEntry(q, id, dir, name)
    touched.push(was)
  }
  return touched
}

async function closeEntry(q: Executor, id: number, dir: number, name: string) {
  await q.execute({
    sql: 'DELETE FROM agentfs_snap_dentry WHERE parent_ino = ? AND name = ? AND until IS NULL AND since >= ?',
    params: [dir, name, id],
  })
  await q.execute({
    sql: 'UPDATE agentfs_snap_dentry SET until = ? WHERE parent_ino = ? AND name = ? AND until IS NULL',
    params: [id, dir, name],
  })
}

async function advanceInode(
  q: Executor,
  id: number,
  format: ChunkFormat,
  ino: number,
): Promise<{ dirChanged: boolean }> {
  const live = await liveInode(q, ino)
  const open = await openInode(q, ino)
  if (!live) {
    if (!open) return { dirChanged: false }
    await closeInode(q, ino, id)
    return { dirChanged: isDirMode(open.mode) }
  }
  if (open && sameInode(open, live)) return { dirChanged: false }
  const row: SnapInode = {
    ...live,
    chunks: isRegMode(live.mode) ? await captureChunks(q, ino, live.size, format) : null,
  }
  if (open) await closeInode(q, ino, id)
  await insertSnapInode(q, row, id)
  return { dirChanged: isDirMode(live.mode) && (!open || !isDirMode(open.mode)) }
}

async function advanceKv(q: Executor, id: number, c: Candidates): Promise<void> {
  const keys = new Set(c.keys)
  for (const prefix of c.prefixes) {
    const { rows } = await q.execute<{ key: string }>({
      sql: `SELECT key FROM agentfs_snap_kv WHERE until IS NULL AND substr(key, 1, length(?)) = ?
UNION SELECT key FROM kv_store WHERE substr(key, 1, length(?)) = ?`,
      params: [prefix, prefix, prefix, prefix],
    })
    for (const { key } of rows) keys.add(key)
  }
  for (const key of keys) {
    const live = await q.execute<{
      value: string
      created_at: number | null
      updated_at: number | null
    }>({
      sql: 'SELECT value, created_at, updated_at FROM kv_store WHERE key = ?',
      params: [key],
    })
    const open = await q.execute<{
      value: string
      created_at: number | null
      updated_at: number | null
    }>({
      sql: 'SELECT value, created_at, updated_at FROM agentfs_snap_kv WHERE key = ? AND until IS NULL',
      params: [key],
    })
    const now = live.rows[0]
    const was = open.rows[0]
    if (now && was && now.value === was.value && now.updated_at === was.updated_at) continue
    if (!now && !was) continue
    if (was) {
      await q.execute({
        sql: 'DELETE FROM agentfs_snap_kv WHERE key = ? AND until IS NULL AND since >= ?',
        params: [key, id],
      })
      await q.execute({
        sql: 'UPDATE agentfs_snap_kv SET until = ? WHERE key = ? AND until IS NULL',
        params: [id, key],
      })
    }
    if (now)
      await q.execute({
        sql: 'INSERT INTO agentfs_snap_kv (key, since, until, value, created_at, updated_at) VALUES (?, ?, NULL, ?, ?, ?)',
        params: [key, id, now.value, now.created_at, now.updated_at],
      })
  }
}
