import type { FileSystem, Stats } from '@agentfs/fs'
import type { Request } from '@agentfs/fuse'
import { SET_ATTR } from '@agentfs/fuse'
import { decimal, NS } from './fuse-dirs.js'

/**
 * Applies what a setattr request changes on `path` (whose stats are `stats`): owner, mode, size
 * and times, each one call (one transaction) on the filesystem. Times set to "now" take the
 * mount's clock; times not set keep their current value.
 */
export async function applySetattr(
  fs: FileSystem,
  r: Request,
  path: string,
  stats: Stats,
): Promise<void> {
  const set = r.toSet ?? 0
  if (set & (SET_ATTR.UID | SET_ATTR.GID))
    await fs.lchown(
      path,
      set & SET_ATTR.UID ? r.uid : stats.uid,
      set & SET_ATTR.GID ? r.gid : stats.gid,
    )
  if (set & SET_ATTR.MODE) await fs.chmod(path, r.mode & 0o7777)
  if (set & SET_ATTR.SIZE) await fs.truncate(path, r.size)
  if (set & (SET_ATTR.ATIME | SET_ATTR.MTIME)) {
    const now = BigInt(Date.now()) * 1_000_000n
    const time = (given: number, isNow: number, sec = 0, nsec = 0, current = 0n) =>
      decimal(set & isNow ? now : set & given ? BigInt(sec) * NS + BigInt(nsec) : current)
    await fs.lutimes(
      path,
      time(SET_ATTR.ATIME, SET_ATTR.ATIME_NOW, r.atimeSec, r.atimeNsec, stats.atimeNs),
      time(SET_ATTR.MTIME, SET_ATTR.MTIME_NOW, r.mtimeSec, r.mtimeNsec, stats.mtimeNs),
    )
  }
}
