import type { Dirent, FileSystem, Stats } from '@agentfs/fs'
import type { StatfsResult } from '@agentfs/fuse'

export const S_IFMT = 0o170000
export const S_IFDIR = 0o040000
export const S_IFREG = 0o100000
export const S_ISGID = 0o2000
/** Bytes of one name the kernel takes. */
export const NAME_MAX = 255
export const RENAME_NOREPLACE = 1
export const RENAME_EXCHANGE = 2
export const NS = 1_000_000_000n

/** Throws an error with a POSIX code, which the binding answers as its errno. */
export const fail = (code: string, message: string): never => {
  throw Object.assign(new Error(message), { code })
}

/** The filesystem's statfs as the kernel wants it. */
export async function statfsOf(fs: FileSystem): Promise<StatfsResult> {
  const s = await fs.statfs('/')
  return {
    bsize: s.bsize,
    blocks: s.blocks,
    bfree: s.bfree,
    bavail: s.bavail,
    files: s.files,
    ffree: s.ffree,
    namemax: 255,
  }
}

/** Nanoseconds since the epoch as decimal seconds, which the filesystem takes exactly. */
export const decimal = (ns: bigint): string =>
  ns < 0n ? `-${decimal(-ns)}` : `${ns / NS}.${String(ns % NS).padStart(9, '0')}`

/** The type bits of a directory entry, for the kernel's listing. */
export function direntMode(entry: Dirent): number {
  if (entry.isDirectory()) return S_IFDIR
  if (entry.isFile()) return 0o100000
  if (entry.isSymbolicLink()) return 0o120000
  if (entry.isFIFO()) return 0o010000
  if (entry.isSocket()) return 0o140000
  if (entry.isCharacterDevice()) return 0o020000
  if (entry.isBlockDevice()) return 0o060000
  return 0
}

/**
 * Subdirectories per directory node, for its nlink (2 + subdirectories, as Linux reports):
 * counted once, then kept up to date by the mount's own mkdir/rmdir, and counted again when the
 * directory changed in a way the mount did not make (its mtime moved). Counting lists the
 * directory, so it is not done again for every file created or removed in it.
 */
export class SubdirCounts {
  readonly #fs: FileSystem
  /** `mtime` undefined: changed here; the next stat's mtime is taken as the known one. */
  readonly #known = new Map<number, { count: number; mtime: bigint | undefined }>()

  constructor(fs: FileSystem) {
    this.#fs = fs
  }

  /** This mount changed directory `nodeid`: `delta` subdirectories more (or fewer). */
  changed(nodeid: number, delta = 0): void {
    const known = this.#known.get(nodeid)
    if (known === undefined) return
    known.count += delta
    known.mtime = undefined
  }

  delete(nodeid: number): void {
    this.#known.delete(nodeid)
  }

  /** `path`: the directory's path, or how to find it (asked only when it must be listed). */
  async nlink(nodeid: number, path: string | (() => Promise<string>), s: Stats): Promise<number> {
    let known = this.#known.get(nodeid)
    if (known === undefined || (known.mtime !== undefined && known.mtime !== s.mtimeNs)) {
      let count = 0
      const at = typeof path === 'string' ? path : await path()
      for (const entry of await this.#fs.readdir(at, { withFileTypes: true }))
        if (entry.isDirectory()) count++
      known = { count, mtime: s.mtimeNs }
      this.#known.set(nodeid, known)
    }
    known.mtime ??= s.mtimeNs
    return 2 + known.count
  }
}
