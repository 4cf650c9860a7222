import {
  type Executor,
  FsError,
  fsError,
  MAX_SYMLINK_HOPS,
  normalizePath,
  parsePath,
  ROOT_INO,
  readChunks,
} from '@agentfs/core'
import { inodeAt, isDirMode, isLinkMode, isRegMode, type SnapInode, visibleAt } from './rows.js'

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
 * Resolves `path` in snapshot `id` the way the live filesystem would have then: symlinks
 * followed (the last one only when `follow`), at most {@link MAX_SYMLINK_HOPS} of them.
 */
export async function resolveAt(
  q: Executor,
  id: number,
  path: string,
  follow: boolean,
  syscall: string,
): Promise<SnapInode> {
  const queue = [...parsePath(path, syscall).parts]
  const stack: number[] = [ROOT_INO]
  let hops = 0
  let node = await inodeAt(q, ROOT_INO, id)
  if (!node) throw fsError('ENOENT', syscall, path)
  while (queue.length > 0) {
    const name = queue.shift()!
    if (!isDirMode(node.mode)) throw fsError('ENOTDIR', syscall, path)
    if (name === '.') continue
    if (name === '..') {
      if (stack.length > 1) stack.pop()
      node = (await inodeAt(q, stack.at(-1)!, id))!
      continue
    }
    const ino = await entryAt(q, id, stack.at(-1)!, name)
    const child = ino === undefined ? undefined : await inodeAt(q, ino, id)
    if (!child) throw fsError('ENOENT', syscall, path)
    if (isLinkMode(child.mode) && (queue.length > 0 || follow)) {
      if (++hops > MAX_SYMLINK_HOPS) throw fsError('ELOOP', syscall, path)
      const target = child.target ?? ''
      if (target.startsWith('/')) stack.length = 1
      queue.unshift(...target.split('/').filter((c) => c.length > 0))
      node = (await inodeAt(q, stack.at(-1)!, id))!
      continue
    }
    stack.push(child.ino)
    node = child
  }
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
