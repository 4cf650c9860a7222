import {
  AgentFsError,
  dropRefs,
  type Executor,
  FS_INODE_COLUMNS,
  META_ORPHAN,
  placeholders,
  SELECT_SNAP,
  type SnapInode,
} from '@agentfs/core'

/** The `fs_inode` columns a snapshot keeps, in order. */
export const INODE_COLUMNS = FS_INODE_COLUMNS

export {
  inodeAt,
  isDirMode,
  isLinkMode,
  isRegMode,
  type SnapInode,
  visibleAt,
} from '@agentfs/core'

/** Whether two inode states differ in anything but the access time (reads move it). */
export function sameInode(a: SnapInode, b: SnapInode): boolean {
  for (const column of INODE_COLUMNS) {
    if (column === 'atime' || column === 'atime_nsec') continue
    if (a[column] !== b[column]) return false
  }
  return a.target === b.target
}

/** The inode as the newest snapshot holds it (its open row). */
export async function openInode(q: Executor, ino: number): Promise<SnapInode | undefined> {
  const { rows } = await q.execute<SnapInode>({
    sql: `${SELECT_SNAP} WHERE ino = ? AND until IS NULL`,
    params: [ino],
  })
  return rows[0]
}

/**
 * The live inode with its symlink target (chunks are not read here). A file unlinked while open
 * (recorded as `orphan.<ino>`) is not part of the tree: a snapshot holds it as gone. The inode
 * comes in through the one-row start (ARCHITECTURE.md, "Statement shapes").
 */
export async function liveInode(q: Executor, ino: number): Promise<SnapInode | undefined> {
  const { rows } = await q.execute<SnapInode>({
    sql: `SELECT i.ino, ${INODE_COLUMNS.map((c) => `i.${c}`).join(', ')}, l.target AS target, NULL AS chunks
FROM (SELECT ? AS ino) s JOIN fs_inode i ON i.ino = s.ino LEFT JOIN fs_symlink l ON l.ino = i.ino
WHERE NOT EXISTS (SELECT 1 FROM agentfs_meta m WHERE m.key = '${META_ORPHAN}' || i.ino)`,
    params: [ino],
  })
  return rows[0]
}

/** Inserts an inode state valid from snapshot `since` on. */
export async function insertSnapInode(q: Executor, row: SnapInode, since: number): Promise<void> {
  await q.execute({
    sql: `INSERT INTO agentfs_snap_inode (ino, since, until, ${INODE_COLUMNS.join(', ')}, target, chunks)
VALUES (?, ?, NULL, ${placeholders(INODE_COLUMNS.length)}, ?, ?)`,
    params: [row.ino, since, ...INODE_COLUMNS.map((c) => row[c]), row.target, row.chunks],
  })
}

/**
 * Ends the open row of an inode at snapshot `until`. A row that began there (written for a
 * snapshot id not yet taken, after a restore) is replaced instead, its chunks released.
 */
export async function closeInode(q: Executor, ino: number, until: number): Promise<void> {
  const { rows } = await q.execute<{ chunks: Uint8Array | null }>({
    sql: 'DELETE FROM agentfs_snap_inode WHERE ino = ? AND until IS NULL AND since >= ? RETURNING chunks',
    params: [ino, until],
  })
  for (const row of rows) await dropRefs(q, row.chunks)
  await q.execute({
    sql: 'UPDATE agentfs_snap_inode SET until = ? WHERE ino = ? AND until IS NULL',
    params: [until, ino],
  })
}

/** Snapshot names: what a user can type in a shell without quoting. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$/

export function checkName(name: string): string {
  if (typeof name !== 'string' || !NAME.test(name))
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `snapshot name ${JSON.stringify(name)} is not 1–128 letters, digits and . _ : @ + - (starting with a letter or digit)`,
    )
  return name
}
