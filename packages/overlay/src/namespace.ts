import {
  FsError,
  fsError,
  mkdirParents,
  parentPath,
  parsePath,
  type Queryable,
  type Timestamp,
  twoPathErrors,
  undefinedIfAbsent,
} from '@agentfs/core'
import { type RmOptions, rmDirectoryError, type SqlFileSystem } from '@agentfs/fs'
import { type CopyUp, pump } from './copy-up.js'
import type { MergedView, Node } from './merged-view.js'

/**
 * The overlay's namespace changes (mkdir, unlink, rmdir, rm, rename, link, symlink, mknod) on
 * the merged view: the entries they touch are copied up first, base entries they remove become
 * whiteouts, directories they create are opaque. The caller runs each in one transaction of
 * the delta and passes that transaction's view, copy-up and time.
 */
export class OverlayNamespace {
  constructor(
    readonly view: MergedView,
    readonly up: CopyUp,
    readonly delta: SqlFileSystem,
    readonly q: Queryable,
  ) {}

  async mkdir(
    path: string,
    opts: { recursive?: boolean; mode?: number },
    now: Timestamp,
  ): Promise<string | undefined> {
    if (!opts.recursive) {
      await this.mkdirOne(path, opts.mode, now)
      return undefined
    }
    return mkdirParents(path, {
      probe: async (prefix) => ({
        entry: (await this.view.resolve(prefix, false, 'mkdir', true)).node,
        create: () => this.mkdirOne(prefix, opts.mode, now),
      }),
      follow: async (prefix) => (await this.view.resolve(prefix, true, 'mkdir')).node,
      isSymbolicLink: (entry) => entry.stats.isSymbolicLink(),
      isDirectory: (entry) => entry.stats.isDirectory(),
    })
  }

  async mkdirOne(path: string, mode: number | undefined, now: Timestamp): Promise<void> {
    const r = await this.view.resolve(path, false, 'mkdir', true)
    if (r.node || r.path === '/') throw fsError('EEXIST', 'mkdir', path)
    await this.up.copyUp(parentPath(r.path))
    await this.up.unwhiteout(r.path)
    await this.delta.mkdir(r.path, mode === undefined ? {} : { mode })
    await this.up.opaque(r.path, now)
  }

  async unlink(path: string, now: Timestamp): Promise<void> {
    const { path: real, node } = await this.view.existing(path, 'unlink', false)
    if (node.stats.isDirectory()) throw fsError('EISDIR', 'unlink', path)
    if (node.layer === 'delta') await this.delta.unlink(real)
    await this.up.whiteout(real, now)
  }

  async rmdir(path: string, now: Timestamp): Promise<void> {
    const { path: real, node } = await this.view.existing(path, 'rmdir', false)
    if (real === '/') throw fsError('EPERM', 'rmdir', path)
    if (!node.stats.isDirectory()) throw fsError('ENOTDIR', 'rmdir', path)
    if ((await this.view.list(real)).length > 0) throw fsError('ENOTEMPTY', 'rmdir', path)
    await this.removeDir(real, now)
  }

  async removeDir(real: string, now: Timestamp): Promise<void> {
    if (await this.delta.lstat(real).catch(undefinedIfAbsent))
      await this.delta.rm(real, { recursive: true })
    // Whiteouts below are covered by the one on the directory itself.
    await this.q.execute({
      sql: 'DELETE FROM fs_whiteout WHERE path >= ? AND path < ?',
      params: [`${real}/`, `${real}0`],
    })
    await this.up.whiteout(real, now)
  }

  async rm(path: string, options: RmOptions = {}, now: Timestamp): Promise<void> {
    let found: { path: string; node: Node }
    try {
      found = await this.view.existing(path, 'rm', false)
    } catch (error) {
      if (options.force && (error as { code?: string }).code === 'ENOENT') return
      throw error
    }
    if (found.path === '/') throw fsError('EPERM', 'rm', path)
    if (found.node.stats.isDirectory()) {
      if (!options.recursive) throw rmDirectoryError(path)
      await this.removeDir(found.path, now)
      return
    }
    if (found.node.layer === 'delta') await this.delta.unlink(found.path)
    await this.up.whiteout(found.path, now)
  }

  async rename(from: string, to: string, now: Timestamp): Promise<void> {
    const { fail, wrap } = twoPathErrors('rename', from, to)
    const source = await wrap(this.view.resolve(from, false, 'rename', true))
    const target = await wrap(this.view.resolve(to, false, 'rename', true))
    if (!source.node) throw fail('ENOENT')
    if (source.path === '/' || target.path === '/') throw fail('EBUSY')
    const moving = source.node.stats
    if (
      moving.isDirectory() &&
      (target.path === source.path || target.path.startsWith(`${source.path}/`))
    ) {
      if (target.path !== source.path) throw fail('EINVAL')
    }
    if (target.path === source.path) return
    if (target.node) {
      if (
        target.node.layer === source.node.layer &&
        target.node.stats.ino === moving.ino &&
        !moving.isDirectory()
      )
        return
      if (target.node.stats.isDirectory() && source.path.startsWith(`${target.path}/`))
        throw fail('ENOTEMPTY')
      if (moving.isDirectory()) {
        if (!target.node.stats.isDirectory()) throw fail('ENOTDIR')
        if ((await this.view.list(target.path)).length > 0) throw fail('ENOTEMPTY')
      } else if (target.node.stats.isDirectory()) {
        throw fail('EISDIR')
      }
    } else if (parsePath(to, 'rename').trailingSlash && !moving.isDirectory()) {
      throw fail('ENOTDIR')
    }
    await this.up.copyUpTree(source.path)
    await this.up.copyUp(parentPath(target.path))
    if (target.node) {
      if (target.node.stats.isDirectory()) await this.removeDir(target.path, now)
      else {
        if (target.node.layer === 'delta') await this.delta.unlink(target.path)
        await this.up.whiteout(target.path, now)
      }
    }
    await this.up.unwhiteout(target.path)
    await this.delta.rename(source.path, target.path)
    if (moving.isDirectory()) await this.up.opaque(target.path, now)
    await this.up.whiteout(source.path, now)
  }

  async link(existing: string, newPath: string): Promise<void> {
    const { fail, wrap } = twoPathErrors('link', existing, newPath)
    const source = await wrap(this.view.resolve(existing, false, 'link', true))
    if (!source.node) throw fail('ENOENT')
    const target = await wrap(this.view.resolve(newPath, false, 'link', true))
    if (target.node) throw fail('EEXIST')
    if (source.node.stats.isDirectory()) throw fail('EPERM')
    await this.up.copyUp(source.path)
    await this.up.copyUp(parentPath(target.path))
    await this.up.unwhiteout(target.path)
    await this.delta.link(source.path, target.path)
  }

  async symlink(target: string, path: string): Promise<void> {
    const r = await this.view.resolve(path, false, 'symlink', true).catch((e: FsError) => {
      throw new FsError({ code: e.code, syscall: 'symlink', path: target, dest: path })
    })
    if (r.node) throw new FsError({ code: 'EEXIST', syscall: 'symlink', path: target, dest: path })
    await this.up.copyUp(parentPath(r.path))
    await this.up.unwhiteout(r.path)
    await this.delta.symlink(target, r.path)
  }

  async mknod(path: string, mode: number, rdev = 0): Promise<void> {
    const r = await this.view.resolve(path, false, 'mknod', true)
    if (r.node) throw fsError('EEXIST', 'mknod', path)
    await this.up.copyUp(parentPath(r.path))
    await this.up.unwhiteout(r.path)
    await this.delta.mknod(r.path, mode, rdev)
  }

  async copyFile(src: string, dest: string, mode = 0): Promise<void> {
    const { fail, wrap } = twoPathErrors('copyfile', src, dest)
    const source = await wrap(this.view.resolve(src, true, 'copyfile', true))
    if (!source.node) throw fail('ENOENT')
    const target = await wrap(this.view.resolve(dest, true, 'copyfile', true))
    if (source.node.stats.isDirectory()) throw fail('EISDIR')
    if (target.node) {
      if (mode & 1) throw fail('EEXIST')
      if (target.node.stats.isDirectory()) throw fail('EISDIR')
      // The same file (one path, or two hard links to one inode): copying is a no-op.
      if (target.path === source.path) return
      if (
        target.node.layer === source.node.layer &&
        target.node.stats.ino === source.node.stats.ino
      )
        return
    }
    await this.prepareForWrite(target.path)
    await pump(
      await this.view.layer(source.node).open(source.path, 'r'),
      await this.delta.open(target.path, 'w', source.node.stats.mode & 0o7777),
    )
  }

  /** Makes `real` writable in the delta: copies a base entry up, or prepares its parent and clears a whiteout. */
  async prepareForWrite(real: string): Promise<void> {
    const node = await this.view.node(real)
    if (node?.layer === 'base') await this.up.copyUp(real)
    else if (!node) {
      await this.up.copyUp(parentPath(real))
      await this.up.unwhiteout(real)
    }
  }
}
