import type { FileSystem } from '@agentfs/fs'
import type { Request } from '@agentfs/fuse'
import { S_ISGID } from './fuse-dirs.js'

/** A user and group id. */
export interface Owner {
  readonly uid: number
  readonly gid: number
}

/** `fn` on `fs` bound to one transaction, where it offers that (AgentFS, overlays). */
function atomically<T>(fs: FileSystem, fn: (f: FileSystem) => Promise<T>): Promise<T> {
  const scoped = fs as FileSystem & {
    transaction?: (fn: (f: FileSystem) => Promise<T>) => Promise<T>
  }
  return scoped.transaction ? scoped.transaction(fn) : fn(fs)
}

/**
 * Who owns the inodes the kernel asks a mount to create, as on Linux: the caller, and a setgid
 * parent's group. `defaults` is the owner `fs` gives new inodes itself; `parentOf` the mode and
 * group of the directory a request names.
 */
export function ownership(
  fs: FileSystem,
  defaults: Owner,
  parentOf: (nodeid: number) => { mode: number; gid: number },
) {
  /** Makes the caller (and a setgid parent's group) own a new inode; its mode for a directory. */
  const owner = (r: Request) => {
    const parent = parentOf(r.ino)
    const gid = parent.mode & S_ISGID ? parent.gid : r.gid
    return { uid: r.uid, gid, inherit: (parent.mode & S_ISGID) !== 0 }
  }
  /** The owner a new inode must be given, when it is not the filesystem's own default. */
  const foreignOwner = (r: Request): Owner | undefined => {
    const { uid, gid } = owner(r)
    return uid === defaults.uid && gid === defaults.gid ? undefined : { uid, gid }
  }
  /**
   * Makes a new inode at `path` (with `make`) owned by `set` (from {@link foreignOwner}; none:
   * the default owner). The chown goes in the create's own transaction: a refused or failed
   * chown leaves no inode behind with the wrong owner.
   */
  const makeOwned = async (
    path: string,
    set: Owner | undefined,
    make: (f: FileSystem) => Promise<void>,
  ) => {
    if (set === undefined) return make(fs)
    await atomically(fs, async (f) => {
      await make(f)
      await f.lchown(path, set.uid, set.gid)
    })
  }
  return { owner, foreignOwner, makeOwned }
}
