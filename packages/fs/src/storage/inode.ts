import { S_IFDIR, S_IFLNK, S_IFMT, S_IFREG } from '@agentfs/core'

/** One `fs_inode` row as the filesystem reads it. */
export interface InodeRow {
  readonly ino: number
  readonly mode: number
  readonly nlink: number
  readonly uid: number
  readonly gid: number
  readonly size: number
  readonly atime: number
  readonly mtime: number
  readonly ctime: number
  readonly rdev: number
  readonly atime_nsec: number
  readonly mtime_nsec: number
  readonly ctime_nsec: number
}

/** The columns of {@link InodeRow}, for SELECT lists. */
export const INODE_COLUMNS =
  'ino, mode, nlink, uid, gid, size, atime, mtime, ctime, rdev, atime_nsec, mtime_nsec, ctime_nsec'

/** One inode's {@link INODE_COLUMNS} by number (a constant: the statement cache hashes it once). */
export const INODE_BY_INO = `SELECT ${INODE_COLUMNS} FROM fs_inode WHERE ino = ?`

/** {@link INODE_COLUMNS} of the table named `alias` in a join (`i.ino, i.mode, …`). */
export const inodeColumnsOf = (alias: string): string =>
  INODE_COLUMNS.split(', ')
    .map((c) => `${alias}.${c}`)
    .join(', ')

/** The {@link InodeRow} of an array row holding {@link INODE_COLUMNS} in order from `at`. */
export function inodeOf(values: readonly unknown[], at = 0): InodeRow {
  return {
    ino: values[at] as number,
    mode: values[at + 1] as number,
    nlink: values[at + 2] as number,
    uid: values[at + 3] as number,
    gid: values[at + 4] as number,
    size: values[at + 5] as number,
    atime: values[at + 6] as number,
    mtime: values[at + 7] as number,
    ctime: values[at + 8] as number,
    rdev: values[at + 9] as number,
    atime_nsec: values[at + 10] as number,
    mtime_nsec: values[at + 11] as number,
    ctime_nsec: values[at + 12] as number,
  }
}

export const isDir = (mode: number) => (mode & S_IFMT) === S_IFDIR
export const isReg = (mode: number) => (mode & S_IFMT) === S_IFREG
export const isLnk = (mode: number) => (mode & S_IFMT) === S_IFLNK

/**
 * The version token of an inode: its change time in nanoseconds, as a decimal string. Every
 * content or metadata change moves ctime strictly forward (see `touchCtimeSql`), so the token
 * changes on every modification, across processes and clocks.
 */
export function versionOf(row: Pick<InodeRow, 'ctime' | 'ctime_nsec'>): string {
  return (BigInt(row.ctime) * 1_000_000_000n + BigInt(row.ctime_nsec)).toString()
}

/**
 * The version token an inode has after {@link touchCtime} with `now` (computed as the SQL does:
 * `now`, or the old ctime plus 1 ns when that is not earlier). `node` must be its row as read in
 * the same transaction.
 */
export function touchedVersion(
  node: Pick<InodeRow, 'ctime' | 'ctime_nsec'>,
  now: { sec: number; nsec: number },
): string {
  const old = BigInt(node.ctime) * 1_000_000_000n + BigInt(node.ctime_nsec)
  const at = BigInt(now.sec) * 1_000_000_000n + BigInt(now.nsec)
  return (old < at ? at : old + 1n).toString()
}

/**
 * SET clause that moves ctime to `max(now, old ctime + 1 ns)`, with its parameters. SQLite
 * evaluates every SET expression against the row as it was before the update, so both columns
 * see the old ctime.
 */
export function touchCtime(now: { sec: number; nsec: number }): { sql: string; params: number[] } {
  const nowNs = BigInt(now.sec) * 1_000_000_000n + BigInt(now.nsec)
  return {
    sql: CTIME_SQL,
    params: [nowNs as unknown as number, now.sec, nowNs as unknown as number, now.nsec],
  }
}

const OLDER = 'ctime * 1000000000 + ctime_nsec < ?'
/**
 * {@link touchCtime}'s SET clause. Statements that use it are built once too (module constants):
 * the driver finds a prepared statement by its text, and a text built per call is hashed and
 * compared in full on every lookup.
 */
export const CTIME_SQL = `ctime = CASE WHEN ${OLDER} THEN ? ELSE ctime + (ctime_nsec + 1) / 1000000000 END, ctime_nsec = CASE WHEN ${OLDER} THEN ? ELSE (ctime_nsec + 1) % 1000000000 END`
