import { readChunks } from '../content/blob-store.js'
import type { Executor } from '../driver/driver.js'
import { FsError, fsError } from '../errors.js'
import { normalizePath, parsePath } from '../paths/path.js'
import { type PathSteps, resolvePath } from '../paths/resolve.js'
import { FS_INODE_COLUMNS, ROOT_INO, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG } from '../schema/schema.js'

/**
 * Reading a snapshot (`agentfs_snap_inode`, `agentfs_snap_dentry`) as a tree: what history's
 * diff, restore and branch and the filesystem's undelete share.
 */

/** One inode as a snapshot holds it. */
export interface SnapInode {
  ino: number
  mode: number
  nlink: number
  uid: number
  gid: number
  size: number
  atime: number
  mtime: number
  ctime: number
  rdev: number
  atime_nsec: number
  mtime_nsec: number
  ctime_nsec: number
  target: string | null
  chunks: Uint8Array | null
}

export const isDirMode = (mode: number) => (mode & S_IFMT) === S_IFDIR
export const isRegMode = (mode: number) => (mode & S_IFMT) === S_IFREG
export const isLinkMode = (mode: number) => (mode & S_IFMT) === S_IFLNK

/** SQL condition: the row of table alias `t` is part of the snapshot bound twice after it. */
export const visibleAt = (t: string) => `${t}.since <= ? AND (${t}.until IS NULL OR ${t}.until > ?)`

export const SELECT_SNAP = `SELECT ino, ${FS_INODE_COLUMNS.join(', ')}, target, chunks FROM agentfs_snap_inode`

/** The inode as snapshot `id` holds it. */
export async function inodeAt(
  q: Executor,
  ino: number,
  id: number,
): Promise<SnapInode | undefined> {
  const { rows } = await q.execute<SnapInode>({
    sql: `${SELECT_SNAP} s WHERE s.ino = ? AND ${visibleAt('s')}`,
    params: [ino, id, id],
  })
  return rows[0]
}

/** Largest file `readFile` of a snapshot returns in one buffer. */
export const MAX_SNAPSHOT_READ = 512 * 1024 * 1024

/** The entry `name` of directory `dir` in snapshot `id`. */
export async function entryAt(
  q: Executor,
  id: number,
  dir: number,
  name: string,
): Promise<number | undefined> {
  const { rows } = await q.execute<{ ino: number }>({
    sql: `SELECT d.ino FROM agentfs_snap_dentry d WHERE d.parent_ino = ? AND d.name = ? AND ${visibleAt('d')}`,
    params: [dir, name, id, id],
  })
  return rows[0]?.ino
}

/** The entries of directory `dir` in snapshot `id`, by name. */
export async function entriesAt(
  q: Executor,
  id: number,
  dir: number,
): Promise<{ name: string; ino: number }[]> {
  const { rows } = await q.execute<{ name: string; ino: number }>({
    sql: `SELECT d.name, d.ino FROM agentfs_snap_dentry d WHERE d.parent_ino = ? AND ${visibleAt('d')} ORDER BY d.name`,
    params: [dir, id, id],
  })
  return rows
}

/**
 * Where names lead in snapshot `id`, for core's {@link resolvePath}: a directory is the chain of
 * inodes from the root (so `..` is the physical parent), an entry the snapshot's inode row.
 */
function snapshotSteps(q: Executor, id: number): PathSteps<readonly number[], SnapInode> {
  return {
    root: () => [ROOT_INO],
    async step(dir, names) {
      const ino = await entryAt(q, id, dir.at(-1)!, names[0]!)
      const entry = ino === undefined ? undefined : await inodeAt(q, ino, id)
      return { found: entry ? 1 : 0, entry, dir }
    },
    isDirectory: (entry) => isDirMode(entry.mode),
    isSymbolicLink: (entry) => isLinkMode(entry.mode),
    readlink: async (_dir, _name, entry) => entry.target ?? '',
    enter: (dir, _name, entry) => [...dir, entry.ino],
    parent: (dir) => (dir.length > 1 ? dir.slice(0, -1) : dir),
  }
}

/**
 * Resolves `path` in snapshot `id` the way the live filesystem would have then, by the one
 * resolver every filesystem uses (core's `resolvePath`): symlinks followed (the last one only
 * when `follow`), at most 40 of them (core's `MAX_SYMLINK_HOPS`), `..` physically.
 */
export async function resolveAt(
  q: Executor,
  id: number,
  path: string,
  follow: boolean,
  syscall: string,
): Promise<SnapInode> {
  const root = await inodeAt(q, ROOT_INO, id)
  if (!root) throw fsError('ENOENT', syscall, path)
  const r = await resolvePath(snapshotSteps(q, id), parsePath(path, syscall), {
    followLast: follow,
    syscall,
  })
  if (r.name !== undefined) return r.entry ?? Promise.reject(fsError('ENOENT', syscall, path))
  const node = await inodeAt(q, r.dir.at(-1)!, id)
  if (!node) throw fsError('ENOENT', syscall, path)
  return node
}

/** The bytes of a regular file of a snapshot. */
export async function contentOf(q: Executor, node: SnapInode, path: string): Promise<Buffer> {
  if (isDirMode(node.mode)) throw fsError('EISDIR', 'read', path)
  if (!isRegMode(node.mode))
    throw new FsError({ code: 'EINVAL', syscall: 'read', path, hint: 'not a regular file' })
  if (node.size > MAX_SNAPSHOT_READ)
    throw fsError('EFBIG', 'read', path, {
      hint: `the file is ${node.size} bytes; restore or branch the snapshot to read it in parts`,
    })
  return readChunks(q, node.chunks, node.size)
}

/** Every path of snapshot `id` with its inode, depth first in name order (bounded). */
export async function* walkAt(
  q: Executor,
  id: number,
  from = '/',
  limit = 10_000_000,
): AsyncGenerator<{ path: string; node: SnapInode }> {
  const root = await resolveAt(q, id, normalizePath(from, 'walk'), true, 'walk')
  const stack: { path: string; node: SnapInode; depth: number }[] = [
    { path: normalizePath(from, 'walk'), node: root, depth: 0 },
  ]
  let seen = 0
  // A directory has one entry; a crafted database may link one twice or in a cycle.
  const dirs = new Set<number>()
  while (stack.length > 0) {
    const item = stack.pop()!
    if (++seen > limit) throw fsError('EFBIG', 'walk', from, { hint: `more than ${limit} entries` })
    yield { path: item.path, node: item.node }
    if (!isDirMode(item.node.mode) || item.depth >= 4096 || dirs.has(item.node.ino)) continue
    dirs.add(item.node.ino)
    const children = await entriesAt(q, id, item.node.ino)
    for (let i = children.length - 1; i >= 0; i--) {
      const { name, ino } = children[i]!
      const node = await inodeAt(q, ino, id)
      if (!node) continue
      const path = item.path === '/' ? `/${name}` : `${item.path}/${name}`
      stack.push({ path, node, depth: item.depth + 1 })
    }
  }
}
