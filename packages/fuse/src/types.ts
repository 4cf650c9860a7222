/** The shapes of @agentfs/fuse: requests, what handlers answer, mount options. */

/** What every request carries: the node it is about, and who asked (for permission checks). */
export interface Request {
  /** The node; for calls on a name (lookup, mkdir, unlink, create…), the directory holding it. */
  readonly ino: number
  /** The name under `ino`. */
  readonly name?: string
  /** rename: the new parent; link: the new parent. */
  readonly ino2: number
  /** rename: the new name; link: the new name; symlink: the link's target. */
  readonly name2?: string
  /** The handle `open`, `opendir` or `create` answered, for calls on an open file. */
  readonly fh: number
  /** open/create/opendir: the open(2) flags; rename: RENAME_NOREPLACE (1) or RENAME_EXCHANGE (2). */
  readonly flags: number
  readonly mode: number
  readonly rdev: number
  /** read/readdir: how much to answer at most; setattr: the new size. */
  readonly size: number
  readonly offset: number
  /** fallocate: the length. */
  readonly length: number
  readonly datasync: number
  /** The caller (setattr: the new owner). */
  readonly uid: number
  readonly gid: number
  readonly pid: number
  readonly umask: number
  /** forget: how many references the kernel dropped. */
  readonly nlookup?: number
  /** write: the bytes. */
  readonly data?: Buffer
  /** setattr: which attributes to set (SET_ATTR bits). */
  readonly toSet?: number
  readonly atimeSec?: number
  readonly atimeNsec?: number
  readonly mtimeSec?: number
  readonly mtimeNsec?: number
}

/** The attributes the kernel caches; an AgentFS `Stats` has them all. */
export interface Attributes {
  readonly ino: number
  readonly mode: number
  readonly nlink: number
  readonly uid: number
  readonly gid: number
  readonly rdev: number
  readonly size: number
  readonly blocks: number
  readonly blksize: number
  readonly atimeNs: bigint
  readonly mtimeNs: bigint
  readonly ctimeNs: bigint
}

/** A name's node: `nodeid` is what the kernel will call it by; `attr.ino` is what stat shows. */
export interface Entry {
  readonly nodeid: number
  readonly attr: Attributes
}

export interface Opened {
  readonly fh: number
  /** Keep the kernel's cached pages of the file from an earlier open. */
  readonly keepCache?: boolean
}

/** One chunk of a directory listing: entries from index `start`; offsets are index + 1. */
export interface Listing {
  readonly names: readonly string[]
  /** The entries' modes (only the type bits matter). */
  readonly modes: Float64Array
}

/**
 * A listing with each entry's node and attributes (readdirplus): the kernel caches them as if
 * each name had been looked up, so `ls -l` and walks need no lookup per name.
 */
export interface PlusListing extends Listing {
  /** Per entry: its node and attributes, or undefined to give the kernel the name only. */
  readonly entries: readonly (Entry | undefined)[]
  /**
   * Entries `start` to `end - 1` were sent: the kernel counts one lookup of each sent entry's
   * node (but `.` and `..`), which a later `forget` gives back.
   */
  sent?(start: number, end: number): void
}

export interface StatfsResult {
  readonly bsize: number
  readonly blocks: number
  readonly bfree: number
  readonly bavail: number
  readonly files: number
  readonly ffree: number
  readonly namemax: number
}

export type Handler<T> = (request: Request) => Promise<T>

/** The calls a filesystem answers; see libfuse's `fuse_lowlevel_ops` for each one's meaning. */
export interface Operations {
  lookup?: Handler<Entry>
  /** The kernel forgot `nlookup` of its references to node `ino` (no answer is sent). */
  forget?: (ino: number, nlookup: number) => void
  getattr?: Handler<Attributes>
  setattr?: Handler<Attributes>
  readlink?: Handler<string>
  mknod?: Handler<Entry>
  mkdir?: Handler<Entry>
  unlink?: Handler<void>
  rmdir?: Handler<void>
  symlink?: Handler<Entry>
  rename?: Handler<void>
  link?: Handler<Entry>
  /**
   * Without it the kernel opens files itself ("no open": no `open` or `release` is sent, reads
   * and writes come with `fh` 0, cached data is kept across opens, and O_TRUNC comes as a
   * setattr of the size). Likewise without `create` the kernel sends `mknod`, and without
   * `flush` nothing at each close.
   */
  open?: Handler<Opened>
  /** Answers the bytes read (a Buffer no longer than `size`; shorter at the end of the file). */
  read?: Handler<Uint8Array>
  /** Answers how many bytes were written. */
  write?: Handler<number>
  flush?: Handler<void>
  release?: Handler<void>
  fsync?: Handler<void>
  opendir?: Handler<Opened>
  /** The listing of the open directory `fh`; entries from index `offset` are sent. */
  readdir?: Handler<Listing>
  /** The listing with its entries' nodes and attributes; without it the kernel asks `readdir`. */
  readdirplus?: Handler<PlusListing>
  releasedir?: Handler<void>
  fsyncdir?: Handler<void>
  statfs?: Handler<StatfsResult>
  create?: Handler<Entry & Opened>
  fallocate?: Handler<void>
}

/** setattr's `toSet` bits. */
export const SET_ATTR = {
  MODE: 1,
  UID: 2,
  GID: 4,
  SIZE: 8,
  ATIME: 16,
  MTIME: 32,
  ATIME_NOW: 128,
  MTIME_NOW: 256,
  CTIME: 1024,
} as const

export interface MountOptions {
  /** libfuse -o options, e.g. `allow_other`, `default_permissions`, `auto_unmount`, `ro`. */
  readonly options?: readonly string[]
  /** How long (s) the kernel may keep attributes and names it was given (default 1). */
  readonly attrTimeout?: number
  readonly entryTimeout?: number
  /** How long (s) the kernel may remember that a name is not there (default: entryTimeout). */
  readonly negativeTimeout?: number
  /**
   * Let the kernel keep written data and write it back later, in larger pieces (libfuse's
   * writeback cache). Only for a filesystem no one else changes while it is mounted.
   */
  readonly writebackCache?: boolean
  /** Errors without a POSIX code (answered EIO). */
  readonly onError?: (error: unknown, operation: string) => void
}

export interface Session {
  readonly mountpoint: string
  /** Resolves when the mount has gone, by {@link Session.unmount} or from outside (`umount`). */
  readonly ended: Promise<void>
  /** Whether the mount is still there. */
  readonly mounted: boolean
  /** Takes the mount away (lazily) and resolves once the session has ended. */
  unmount(): Promise<void>
  /**
   * Drops what the kernel cached about node `ino` (after a change it did not make). Queued and
   * sent by a thread of the binding; false when not queued (unmounted, or 65,536 waiting).
   */
  invalidate(ino: number): boolean
  /** Drops the kernel's cached name `name` under directory `parent`; as `invalidate`. */
  invalidateEntry(parent: number, name: string): boolean
}
