import {
  badEntryName,
  corruptError,
  FsError,
  joinPath,
  normalizePath,
  parentPath,
  undefinedIfAbsent,
} from '@agentfs/core'
import { MAX_TREE_DEPTH } from '../search/walk.js'
import type { CpOptions, FileSystem } from '../types.js'

/**
 * `cp` for any {@link FileSystem}, on its public operations: a file, a symlink (copied as a
 * link unless `dereference`; a relative target made absolute unless `verbatimSymlinks`), or
 * with `recursive` a directory tree. Like `fs.promises.cp`:
 * `force` (default true) replaces existing files, `errorOnExist` makes a skipped one EEXIST.
 * Wrap it in the filesystem's transaction to make it atomic.
 */
export async function copyTree(
  fs: FileSystem,
  src: string,
  dest: string,
  options: CpOptions = {},
): Promise<void> {
  await copyNode(fs, src, dest, options, new Set(), 0)
}

/** One level of {@link copyTree}; `entered` holds the directories being copied (by inode). */
async function copyNode(
  fs: FileSystem,
  src: string,
  dest: string,
  options: CpOptions,
  entered: Set<string>,
  depth: number,
): Promise<void> {
  const from = normalizePath(src, 'cp')
  const to = normalizePath(dest, 'cp')
  if (to === from || to.startsWith(`${from}/`)) {
    throw new FsError({
      code: 'EINVAL',
      syscall: 'cp',
      path: src,
      dest,
      hint: 'cannot copy a directory into itself',
    })
  }
  const stats = options.dereference ? await fs.stat(from) : await fs.lstat(from)
  const existing = await fs.lstat(to).catch(undefinedIfAbsent)
  if (stats.isDirectory()) {
    if (!options.recursive) {
      throw new FsError({
        code: 'EISDIR',
        syscall: 'cp',
        path: from,
        dest: to,
        hint: 'pass { recursive: true } to copy a directory',
      })
    }
    if (existing && !existing.isDirectory())
      throw new FsError({ code: 'ENOTDIR', syscall: 'cp', path: from, dest: to })
    // A damaged database can make a directory its own descendant: never enter one twice.
    const key = `${stats.dev}:${stats.ino}`
    if (entered.has(key) || depth >= MAX_TREE_DEPTH)
      throw new FsError({
        code: 'ELOOP',
        syscall: 'cp',
        path: from,
        dest: to,
        hint: 'the directory contains itself (a cycle in a damaged database); run `agentfs fsck`',
      })
    if (!existing) await fs.mkdir(to, { mode: stats.mode & 0o7777 })
    entered.add(key)
    for (const name of await fs.readdir(from)) {
      const bad = badEntryName(name)
      if (bad !== undefined) throw corruptError('cp', from, `an entry name ${bad}`)
      await copyNode(fs, joinPath(from, name), joinPath(to, name), options, entered, depth + 1)
    }
    entered.delete(key)
    return
  }
  if (existing) {
    if (existing.isDirectory())
      throw new FsError({ code: 'EISDIR', syscall: 'cp', path: from, dest: to })
    if (options.force === false) {
      if (options.errorOnExist)
        throw new FsError({ code: 'EEXIST', syscall: 'cp', path: from, dest: to })
      return
    }
    await fs.unlink(to)
  }
  if (stats.isSymbolicLink()) {
    // As Node's cp: a relative target is made absolute (from the link's directory), so the copy
    // leads where the original did; `verbatimSymlinks` keeps it as written.
    let target = await fs.readlink(from)
    if (!options.verbatimSymlinks && !target.startsWith('/'))
      target = normalizePath(joinPath(parentPath(from), target))
    await fs.symlink(target, to)
  } else await fs.copyFile(from, to)
}
