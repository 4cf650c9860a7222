import {
  S_IFBLK,
  S_IFCHR,
  S_IFDIR,
  S_IFIFO,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
  S_IFSOCK,
} from '@agentfs/core'
import { type InodeRow, versionOf } from './storage/inode.js'

const ns = (sec: number, nsec: number) => BigInt(sec) * 1_000_000_000n + BigInt(nsec)
const ms = (sec: number, nsec: number) => sec * 1000 + nsec / 1e6

/**
 * File metadata shaped like Node's `fs.Stats` (numbers, `*Ms`, `*Ns` bigints, `Date`s, type
 * predicates), plus the AgentFS `version` token.
 */
export class Stats {
  readonly dev: number
  readonly ino: number
  readonly mode: number
  readonly nlink: number
  readonly uid: number
  readonly gid: number
  readonly rdev: number
  readonly size: number
  readonly blksize: number
  readonly blocks: number
  readonly atimeMs: number
  readonly mtimeMs: number
  readonly ctimeMs: number
  readonly birthtimeMs: number
  readonly atimeNs: bigint
  readonly mtimeNs: bigint
  readonly ctimeNs: bigint
  readonly birthtimeNs: bigint
  // Made when first read (see the accessors below the class), as Node.js 22 and later do.
  declare readonly atime: Date
  declare readonly mtime: Date
  declare readonly ctime: Date
  declare readonly birthtime: Date
  /** Changes on every content or metadata modification; pass it back as `ifMatch`. */
  readonly version: string

  constructor(
    row: InodeRow,
    options: { blksize: number; dev?: number; ino?: number; blocks?: number },
  ) {
    this.dev = options.dev ?? 0
    this.ino = options.ino ?? row.ino
    this.mode = row.mode
    this.nlink = row.nlink
    this.uid = row.uid
    this.gid = row.gid
    this.rdev = row.rdev
    this.size = row.size
    this.blksize = options.blksize
    this.blocks = options.blocks ?? Math.ceil(row.size / 512)
    this.atimeMs = ms(row.atime, row.atime_nsec)
    this.mtimeMs = ms(row.mtime, row.mtime_nsec)
    this.ctimeMs = ms(row.ctime, row.ctime_nsec)
    this.birthtimeMs = this.ctimeMs
    this.atimeNs = ns(row.atime, row.atime_nsec)
    this.mtimeNs = ns(row.mtime, row.mtime_nsec)
    this.ctimeNs = ns(row.ctime, row.ctime_nsec)
    this.birthtimeNs = this.ctimeNs
    this.version = versionOf(row)
  }

  isFile(): boolean {
    return (this.mode & S_IFMT) === S_IFREG
  }
  isDirectory(): boolean {
    return (this.mode & S_IFMT) === S_IFDIR
  }
  isSymbolicLink(): boolean {
    return (this.mode & S_IFMT) === S_IFLNK
  }
  isFIFO(): boolean {
    return (this.mode & S_IFMT) === S_IFIFO
  }
  isCharacterDevice(): boolean {
    return (this.mode & S_IFMT) === S_IFCHR
  }
  isBlockDevice(): boolean {
    return (this.mode & S_IFMT) === S_IFBLK
  }
  isSocket(): boolean {
    return (this.mode & S_IFMT) === S_IFSOCK
  }
}

/**
 * `atime`, `mtime`, `ctime` and `birthtime` as Node.js 22 and later define them: an accessor on
 * the prototype that makes the `Date` from the `*Ms` field when first read and keeps it as the
 * object's own property (so does assigning one). Four `Date`s per `Stats` took a fifth of a
 * `stat`'s JavaScript, and most callers read none. Works on any object with the `*Ms` fields
 * (a `Stats` rebuilt from its fields by the synchronous bridge, say).
 */
function lazyDate(name: 'atime' | 'mtime' | 'ctime' | 'birthtime'): PropertyDescriptor {
  const own = (target: object, value: Date) =>
    Object.defineProperty(target, name, {
      value,
      writable: true,
      enumerable: true,
      configurable: true,
    })
  return {
    get(this: Record<string, number>) {
      const value = new Date(this[`${name}Ms`]!)
      own(this, value)
      return value
    },
    set(this: object, value: Date) {
      own(this, value)
    },
    enumerable: true,
    configurable: true,
  }
}
Object.defineProperties(Stats.prototype, {
  atime: lazyDate('atime'),
  mtime: lazyDate('mtime'),
  ctime: lazyDate('ctime'),
  birthtime: lazyDate('birthtime'),
})

/** A directory entry, shaped like Node's `fs.Dirent`. */
export class Dirent {
  readonly name: string
  /** The directory the entry is in (Node ≥ 20.12 `parentPath`). */
  readonly parentPath: string
  /** Alias of `parentPath` (older Node name). */
  readonly path: string
  /** The entry's `lstat`, when the listing was asked for it (`readdir(…, { withStats })`). */
  readonly stats?: Stats
  readonly #mode: number

  constructor(name: string, parentPath: string, mode: number, stats?: Stats) {
    this.name = name
    this.parentPath = parentPath
    this.path = parentPath
    this.#mode = mode
    if (stats !== undefined) this.stats = stats
  }
  isFile(): boolean {
    return (this.#mode & S_IFMT) === S_IFREG
  }
  isDirectory(): boolean {
    return (this.#mode & S_IFMT) === S_IFDIR
  }
  isSymbolicLink(): boolean {
    return (this.#mode & S_IFMT) === S_IFLNK
  }
  isFIFO(): boolean {
    return (this.#mode & S_IFMT) === S_IFIFO
  }
  isCharacterDevice(): boolean {
    return (this.#mode & S_IFMT) === S_IFCHR
  }
  isBlockDevice(): boolean {
    return (this.#mode & S_IFMT) === S_IFBLK
  }
  isSocket(): boolean {
    return (this.#mode & S_IFMT) === S_IFSOCK
  }
}
