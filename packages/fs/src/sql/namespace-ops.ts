import {
  executeDeferred,
  FsError,
  fsError,
  isFsError,
  MODE_PERMISSION_MASK,
  mkdirParents,
  normalizePath,
  parsePath,
  placeholders,
  type Queryable,
  ROOT_INO,
  S_IFBLK,
  S_IFCHR,
  S_IFDIR,
  S_IFIFO,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
  S_IFSOCK,
  type Timestamp,
  twoPathErrors,
} from '@agentfs/core'
import { mkdirOptions } from '../node/node-args.js'
import { walkTree } from '../search/walk.js'
import type { Holds } from '../storage/holds.js'
import type { InodeRow } from '../storage/inode.js'
import { isDir, isLnk } from '../storage/inode.js'
import {
  createNode,
  dropLink,
  dropLinks,
  insertDentry,
  isInside,
  pathOf,
  removeEntry,
  touchDir,
  touchMeta,
} from '../storage/mutate.js'
import { type Lookup, lookup } from '../storage/resolver.js'
import type { MkdirOptions, Mode, RmOptions } from '../types.js'
import { existing, type FsContext, write } from './context.js'

// Operations that change the namespace: entries, links, directories.

export async function unlink(ctx: FsContext, path: string): Promise<void> {
  await write(ctx, async (q, now, note) => {
    const { node, dirIno, name } = await existing(q, path, 'unlink', false)
    if (isDir(node.mode)) throw fsError('EISDIR', 'unlink', path)
    await removeEntry(q, dirIno, name!, node, now, ctx.holds)
    note({ op: 'unlink', path: normalizePath(path), ino: node.ino, dir: dirIno })
  })
}

export async function rmdir(ctx: FsContext, path: string): Promise<void> {
  await write(ctx, async (q, now, note) => {
    const { node, dirIno, name } = await existing(q, path, 'rmdir', false)
    if (node.ino === ROOT_INO)
      throw fsError('EPERM', 'rmdir', path, { hint: 'the root directory cannot be removed' })
    if (!isDir(node.mode)) throw fsError('ENOTDIR', 'rmdir', path)
    if (name === undefined) throw fsError('EINVAL', 'rmdir', path)
    const child = await q.execute({
      sql: 'SELECT 1 FROM fs_dentry WHERE parent_ino = ? LIMIT 1',
      params: [node.ino],
    })
    if (child.rows.length > 0) throw fsError('ENOTEMPTY', 'rmdir', path)
    await removeEntry(q, dirIno, name, node, now)
    note({ op: 'rmdir', path: normalizePath(path), ino: node.ino, dir: dirIno })
  })
}

export async function mkdir(
  ctx: FsContext,
  path: string,
  options?: MkdirOptions | Mode,
): Promise<string | undefined> {
  const opts = mkdirOptions(options, path)
  const mode = S_IFDIR | ((opts.mode ?? 0o777) & ~ctx.umask & MODE_PERMISSION_MASK)
  return write(ctx, async (q, now, note) => {
    const create = async (dirIno: number, name: string, at: string) => {
      const ino = await createNode(q, dirIno, name, { mode, uid: ctx.uid, gid: ctx.gid, now })
      note({ op: 'mkdir', path: normalizePath(at), ino, dir: dirIno })
    }
    if (!opts.recursive) {
      // mkdir(2) never follows a link in the last component: any existing entry is EEXIST.
      const found = await lookup(q, path, {
        followLast: false,
        syscall: 'mkdir',
        allowMissing: true,
      })
      if (found.node || found.name === undefined) throw fsError('EEXIST', 'mkdir', path)
      await create(found.dirIno, found.name, path)
      return undefined
    }
    return mkdirParents<InodeRow>(path, {
      async probe(prefix) {
        const found = await lookup(q, prefix, {
          followLast: false,
          syscall: 'mkdir',
          allowMissing: true,
        })
        if (!found.node && found.name === undefined) return undefined
        const name = found.name!
        return {
          entry: found.node,
          async create() {
            // Each directory is judged where it is really created (links in the path followed).
            if (ctx.policy) {
              const dir = found.dirIno === ROOT_INO ? '' : await pathOf(q, found.dirIno)
              ctx.policy.checkWrite(`${dir}/${name}`, 'create', 'mkdir', path)
            }
            await create(found.dirIno, name, prefix)
          },
        }
      },
      follow: async (prefix) =>
        (await lookup(q, prefix, { followLast: true, syscall: 'mkdir' })).node,
      isSymbolicLink: (entry) => isLnk(entry.mode),
      isDirectory: (entry) => isDir(entry.mode),
    })
  })
}

/** `rm` of a directory without `recursive`: EISDIR saying what to pass (every FileSystem's). */
export function rmDirectoryError(path: string): FsError {
  return new FsError({
    code: 'EISDIR',
    syscall: 'rm',
    path,
    hint: 'pass { recursive: true } to remove a directory',
  })
}

export async function rm(ctx: FsContext, path: string, options: RmOptions = {}): Promise<void> {
  await write(ctx, async (q, now, note) => {
    let found: Lookup & { node: InodeRow }
    try {
      found = await existing(q, path, 'rm', false)
    } catch (error) {
      if (options.force && isFsError(error) && error.code === 'ENOENT') return
      throw error
    }
    const { node, dirIno, name } = found
    if (node.ino === ROOT_INO || name === undefined) {
      throw fsError('EPERM', 'rm', path, { hint: 'the root directory cannot be removed' })
    }
    if (isDir(node.mode)) {
      if (!options.recursive) {
        throw rmDirectoryError(path)
      }
      await removeTree(q, node.ino, now, ctx.holds)
    }
    await removeEntry(q, dirIno, name, node, now, ctx.holds)
    note({
      op: isDir(node.mode) ? 'rm' : 'unlink',
      path: normalizePath(path),
      ino: node.ino,
      dir: dirIno,
    })
  })
}

/** Removes everything below directory `ino` (not the directory itself). */
export async function removeTree(
  q: Queryable,
  ino: number,
  now: Timestamp,
  holds?: Holds,
): Promise<void> {
  const rows = await walkTree(q, ino, { syscall: 'rm' })
  const links = new Map<number, number>()
  for (const row of rows) links.set(row.ino, (links.get(row.ino) ?? 0) + 1)
  for (let i = 0; i < rows.length; i += 500) {
    const ids = rows.slice(i, i + 500).map((r) => r.id)
    await q.execute({
      sql: `DELETE FROM fs_dentry WHERE id IN (${placeholders(ids.length)})`,
      params: ids,
    })
  }
  await dropLinks(q, links, now, holds)
}

export async function rename(ctx: FsContext, from: string, to: string): Promise<void> {
  await write(ctx, async (q, now, note) => {
    const { fail, wrap } = twoPathErrors('rename', from, to)
    const source = await wrap(
      lookup(q, from, { followLast: false, syscall: 'rename', allowMissing: true }),
    )
    if (source.node && (source.node.ino === ROOT_INO || source.name === undefined))
      throw fail('EBUSY')
    const target = await wrap(
      lookup(q, to, { followLast: false, syscall: 'rename', allowMissing: true }),
    )
    // Like rename(2): both parents are resolved before a missing source is reported.
    if (!source.node) throw fail('ENOENT')
    if (target.name === undefined) throw fail('EBUSY')
    const moving = source.node
    if (isDir(moving.mode) && (await isInside(q, target.dirIno, moving.ino))) throw fail('EINVAL')
    if (target.node) {
      if (target.node.ino === moving.ino) return
      // The target may not be an ancestor of the source (rename(2) checks this first).
      if (isDir(target.node.mode) && (await isInside(q, source.dirIno, target.node.ino)))
        throw fail('ENOTEMPTY')
      if (isDir(moving.mode)) {
        if (!isDir(target.node.mode)) throw fail('ENOTDIR')
        const child = await q.execute({
          sql: 'SELECT 1 FROM fs_dentry WHERE parent_ino = ? LIMIT 1',
          params: [target.node.ino],
        })
        if (child.rows.length > 0) throw fail('ENOTEMPTY')
      } else if (isDir(target.node.mode)) {
        throw fail('EISDIR')
      }
      await executeDeferred(q, {
        sql: 'DELETE FROM fs_dentry WHERE parent_ino = ? AND name = ?',
        params: [target.dirIno, target.name],
      })
      await dropLink(q, target.node.ino, 1, now, ctx.holds)
    } else if (parsePath(to, 'rename').trailingSlash && !isDir(moving.mode)) {
      throw fail('ENOTDIR')
    }
    await executeDeferred(q, {
      sql: 'UPDATE fs_dentry SET parent_ino = ?, name = ? WHERE parent_ino = ? AND name = ?',
      params: [target.dirIno, target.name, source.dirIno, source.name!],
    })
    await touchMeta(q, moving.ino, now)
    await touchDir(q, source.dirIno, now)
    if (target.dirIno !== source.dirIno) await touchDir(q, target.dirIno, now)
    note({
      op: 'rename',
      path: normalizePath(from),
      path2: normalizePath(to),
      ino: moving.ino,
      dir: source.dirIno,
      dir2: target.dirIno,
      movedDirectory: isDir(moving.mode),
    })
  })
}

export async function link(ctx: FsContext, existing: string, newPath: string): Promise<void> {
  await write(ctx, async (q, now, note) => {
    const { fail, wrap } = twoPathErrors('link', existing, newPath)
    const source = await wrap(lookup(q, existing, { followLast: false, syscall: 'link' }))
    if (!source.node) throw fail('ENOENT')
    const target = await wrap(
      lookup(q, newPath, { followLast: false, syscall: 'link', allowMissing: true }),
    )
    if (target.node || target.name === undefined) throw fail('EEXIST')
    if (isDir(source.node.mode)) throw fail('EPERM')
    await insertDentry(q, target.dirIno, target.name, source.node.ino)
    await touchMeta(q, source.node.ino, now, { nlink: source.node.nlink + 1 })
    await touchDir(q, target.dirIno, now)
    note({
      op: 'link',
      path: normalizePath(existing),
      path2: normalizePath(newPath),
      ino: source.node.ino,
      dir2: target.dirIno,
    })
  })
}

export async function symlink(ctx: FsContext, target: string, path: string): Promise<void> {
  if (typeof target !== 'string' || target.length === 0 || target.includes('\0')) {
    throw new FsError({
      code: target === '' ? 'ENOENT' : 'EINVAL',
      syscall: 'symlink',
      path: String(target),
      dest: path,
    })
  }
  await write(ctx, async (q, now, note) => {
    const found = await lookup(q, path, {
      followLast: false,
      syscall: 'symlink',
      allowMissing: true,
    }).catch((error: unknown) => {
      if (isFsError(error))
        throw new FsError({ code: error.code, syscall: 'symlink', path: target, dest: path })
      throw error
    })
    if (found.node || found.name === undefined)
      throw new FsError({ code: 'EEXIST', syscall: 'symlink', path: target, dest: path })
    const ino = await createNode(q, found.dirIno, found.name, {
      mode: S_IFLNK | 0o777,
      uid: ctx.uid,
      gid: ctx.gid,
      size: Buffer.byteLength(target),
      now,
    })
    await q.execute({
      sql: 'INSERT INTO fs_symlink (ino, target) VALUES (?, ?)',
      params: [ino, target],
    })
    note({ op: 'symlink', path: normalizePath(path), ino, dir: found.dirIno })
  })
}

export async function mknod(ctx: FsContext, path: string, mode: number, rdev = 0): Promise<void> {
  const type = mode & S_IFMT
  if (![S_IFIFO, S_IFCHR, S_IFBLK, S_IFSOCK, S_IFREG].includes(type)) {
    throw new FsError({
      code: 'EINVAL',
      syscall: 'mknod',
      path,
      hint: 'mode must include a FIFO, character, block, socket or regular file type',
    })
  }
  await write(ctx, async (q, now, note) => {
    const found = await lookup(q, path, {
      followLast: false,
      syscall: 'mknod',
      allowMissing: true,
    })
    if (found.node || found.name === undefined) throw fsError('EEXIST', 'mknod', path)
    const ino = await createNode(q, found.dirIno, found.name, {
      mode: type | (mode & ~ctx.umask & MODE_PERMISSION_MASK),
      uid: ctx.uid,
      gid: ctx.gid,
      rdev: type === S_IFCHR || type === S_IFBLK ? rdev : 0,
      now,
    })
    note({ op: 'mknod', path: normalizePath(path), ino, dir: found.dirIno })
  })
}
