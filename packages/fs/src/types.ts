import type { Readable, Writable } from 'node:stream'
import type { GlobMatch, GlobOptions, GrepMatch, GrepOptions } from './search/search.js'
import type { InodeReads } from './sql/inode-reads.js'
import type { ReadStreamOptions, WriteStreamOptions } from './sql/streams.js'
import type { Dirent, Stats } from './stats.js'

/** Data accepted by writes. Strings are encoded as UTF-8 unless an encoding is given. */
export type WriteData = string | Uint8Array

/** Encodings accepted where Node accepts them. */
export type Encoding = BufferEncoding

/** `atime` policies, as the mount options of the same names. */
export type AtimeMode = 'relatime' | 'strictatime' | 'noatime'

/** A mode as Node takes it: a number, or an octal string (`'755'`). */
export type Mode = number | string

/** Options of `writeFile` and `appendFile`. */
export interface WriteFileOptions {
  readonly encoding?: Encoding
  /** Node flags: `w` (default), `wx` (fail if it exists), `a`, `ax`. */
  readonly flag?: 'w' | 'wx' | 'a' | 'ax' | 'w+' | 'a+'
  /** Mode for a new file (default `0o666` less the umask). */
  readonly mode?: Mode
  /** Refuse the write with a {@link ConflictError} unless the file's version is this one. */
  readonly ifMatch?: string
  /**
   * Apply this write once: a retry with the same key, path, data and options changes nothing
   * (an append is not appended twice); the same key with other arguments is refused
   * (`IDEMPOTENCY_MISMATCH`). 1 to 256 characters, e.g. a UUID. Database filesystems only.
   */
  readonly idempotencyKey?: string
  /** How long the key is remembered (default 48 hours). */
  readonly idempotencyTtlMs?: number
  /**
   * The file's media type (`text/markdown`), stored with the file in the write's transaction and
   * answered by `mimeType(path)`; without it, the type is derived from the name and content.
   * Database filesystems only.
   */
  readonly mimeType?: string
  /**
   * Why: recorded with the change in the feed (1 to 4,096 characters) and shown by `log`,
   * `history` and `blame`. For a group of changes, `withMessage`. Database filesystems only.
   */
  readonly message?: string
}

/** Options of `mkdir`. */
export interface MkdirOptions {
  readonly recursive?: boolean
  readonly mode?: Mode
}

/** Options of `rm`. */
export interface RmOptions {
  readonly recursive?: boolean
  readonly force?: boolean
}

/** Options of `readdir`. */
export interface ReaddirOptions {
  readonly withFileTypes?: boolean
  readonly recursive?: boolean
  /**
   * With `withFileTypes` (not `recursive`): each Dirent also carries its entry's `lstat` as
   * `stats`, read in the listing's own statement — one query for a directory and all its
   * entries' metadata. Filesystems that cannot do this cheaply leave `stats` undefined.
   */
  readonly withStats?: boolean
}

/** Filesystem totals, shaped like Node's `StatFs`. */
export interface StatFs {
  readonly type: number
  readonly bsize: number
  readonly blocks: number
  readonly bfree: number
  readonly bavail: number
  readonly files: number
  readonly ffree: number
}

/**
 * The filesystem contract shared by the database filesystem (`SqlFileSystem`), the overlay, the
 * host-directory filesystem, and everything that consumes them (agent tools, the CLI, the FUSE
 * mount). Methods follow `node:fs/promises` names and semantics. `runFileSystemSuite` checks an
 * implementation against it.
 *
 * Every implementation:
 * - MUST take absolute POSIX paths (`/a/b`); `.`, `..`, repeated and trailing slashes follow
 *   POSIX (a trailing slash demands a directory). A path is resolved through symbolic links in
 *   every directory component; a chain longer than 40 links MUST fail with ELOOP.
 * - MUST fail with an `FsError` whose `code` is the POSIX code Node would give (ENOENT, EEXIST,
 *   ENOTDIR, EISDIR, ENOTEMPTY, EINVAL, EACCES, EROFS, ELOOP, …) and whose message names the
 *   syscall and the path (both paths for two-path calls); never a bare engine error.
 * - MUST make each mutating call atomic: it happens completely or not at all, and a failed call
 *   leaves no trace.
 * - MUST refuse before any effect what it does not allow (a read-only implementation: EROFS; a
 *   policy: EACCES).
 */
export interface FileSystem {
  /** The whole file (following links). MUST fail with EISDIR on a directory, ENOENT if absent. */
  readFile(path: string): Promise<Buffer>
  readFile(path: string, options: Encoding | { encoding: Encoding }): Promise<string>
  /**
   * Creates or replaces a file's content. The parent MUST exist (ENOENT otherwise); `ifMatch`
   * (where supported) MUST compare the version token in the same atomic step (CONFLICT).
   */
  writeFile(path: string, data: WriteData, options?: WriteFileOptions | Encoding): Promise<void>
  /** Appends to a file, creating it if absent; the same rules as `writeFile`. */
  appendFile(path: string, data: WriteData, options?: WriteFileOptions | Encoding): Promise<void>
  /** Shortens or extends (with zeros) a file to `length` bytes (default 0). */
  truncate(path: string, length?: number): Promise<void>
  /** Removes a name that is not a directory (EISDIR or EPERM for a directory); links are not followed. */
  unlink(path: string): Promise<void>
  /**
   * Moves a name atomically, replacing an existing target as rename(2) does (a file over a file,
   * an empty directory over an empty directory). A directory MUST NOT move into itself (EINVAL).
   */
  rename(from: string, to: string): Promise<void>
  /** A second name for a file (`nlink` grows); MUST refuse directories (EPERM) and existing names (EEXIST). */
  link(existing: string, newPath: string): Promise<void>
  /** Creates a symbolic link holding `target` as given (relative targets resolve from the link's directory). */
  symlink(target: string, path: string): Promise<void>
  /** The target stored in a link (EINVAL if `path` is not one). */
  readlink(path: string): Promise<string>
  /** The canonical absolute path: every link resolved, no `.` or `..`. */
  realpath(path: string): Promise<string>
  /** Whether `path` resolves (following links); MUST NOT throw for a missing path. */
  exists(path: string): Promise<boolean>
  /** Resolves when `path` exists and allows `mode` (F_OK/R_OK/W_OK/X_OK); fails like `stat` otherwise. */
  access(path: string, mode?: number): Promise<void>
  /**
   * Creates a directory; with `recursive`, missing parents too, and then returns the first
   * directory created (undefined if none). Without it, MUST fail with EEXIST or ENOENT as Node does.
   */
  mkdir(path: string, options?: MkdirOptions | Mode): Promise<string | undefined>
  /** Removes an empty directory (ENOTEMPTY otherwise, ENOTDIR for a non-directory). */
  rmdir(path: string): Promise<void>
  /**
   * Removes a file or link, or with `recursive` a whole tree, in one atomic step; `force`
   * ignores a missing path. A directory without `recursive` MUST fail with EISDIR.
   */
  rm(path: string, options?: RmOptions): Promise<void>
  /** Names in a directory (not `.`/`..`), or Dirents; `recursive` walks the tree and MUST terminate on cycles. */
  readdir(path: string): Promise<string[]>
  readdir(path: string, options: ReaddirOptions & { withFileTypes: true }): Promise<Dirent[]>
  readdir(path: string, options: ReaddirOptions): Promise<string[] | Dirent[]>
  /** Metadata, following links (ENOENT for a dangling link). */
  stat(path: string): Promise<Stats>
  /** Metadata of the name itself (a link is reported as a link). */
  lstat(path: string): Promise<Stats>
  /** Sets the permission bits (the low 12 bits of `mode`), following links. */
  chmod(path: string, mode: Mode): Promise<void>
  /** Sets owner and group, following links. */
  chown(path: string, uid: number, gid: number): Promise<void>
  /** Sets owner and group of the name itself. */
  lchown(path: string, uid: number, gid: number): Promise<void>
  /** Sets access and modification times (seconds or Dates), following links. */
  utimes(path: string, atime: TimeLike, mtime: TimeLike): Promise<void>
  /** Sets the times of the name itself. */
  lutimes(path: string, atime: TimeLike, mtime: TimeLike): Promise<void>
  /** Copies a file's content; `COPYFILE_EXCL` in `mode` MUST fail with EEXIST on an existing target. */
  copyFile(src: string, dest: string, mode?: number): Promise<void>
  /** Capacity figures as `statfs(2)` reports them. */
  statfs(path: string): Promise<StatFs>
  /** Creates a FIFO, socket or device node (the type in `mode`). */
  mknod(path: string, mode: number, rdev?: number): Promise<void>
  /** Copies a file, link or (with `recursive`) a tree, atomically, as `fs.promises.cp` does. */
  cp(src: string, dest: string, options?: CpOptions): Promise<void>
  /** Opens a file with Node's flags (`r`, `r+`, `w`, `wx`, `a`, …) and returns a handle. */
  open(path: string, flags?: string | number, mode?: Mode): Promise<FsFileHandle>
  /** Iterates a directory entry by entry. */
  opendir(path: string, options?: { bufferSize?: number }): Promise<FsDir>
  /** Streams a file (or a byte range) without reading it whole. */
  createReadStream(path: string, options?: ReadStreamOptions): Readable
  /** A writable stream into a file; its writes MUST land atomically per chunk written. */
  createWriteStream(path: string, options?: WriteStreamOptions): Writable
  /**
   * Paths matching a glob (relative to `cwd`, default `/`), as absolute paths. MUST run in time
   * linear in the tree and the pattern (no backtracking blow-up on hostile patterns).
   */
  glob(pattern: string, options?: GlobOptions): Promise<GlobMatch[]>
  /**
   * Lines matching a regular expression in the regular files below `path`, with absolute paths.
   * MUST match in linear time and stop at its byte and time budget rather than run unbounded.
   */
  grep(pattern: string | RegExp, options?: GrepOptions): Promise<GrepMatch[]>
  /**
   * Reads by inode number, where the filesystem has stable inode numbers and decides nothing by
   * path (no policy, no permission checks): what a server that names files by inode (the FUSE
   * mount) answers `getattr` and `lookup` with. Undefined elsewhere: callers resolve paths.
   */
  readonly inodes?: InodeReads | undefined
}

/** Options of `cp`. */
export interface CpOptions {
  readonly recursive?: boolean
  readonly force?: boolean
  readonly errorOnExist?: boolean
  readonly dereference?: boolean
  /** Copy link targets as written (default false: a relative target is made absolute, as Node does). */
  readonly verbatimSymlinks?: boolean
}

/**
 * An open file, as every {@link FileSystem} returns it from `open`. Positions are byte offsets;
 * a `null` position means "at the handle's current offset" (advanced by the call). After
 * `close`, every call MUST fail with EBADF.
 */
export interface FsFileHandle {
  /** A number that identifies the handle while it is open. */
  readonly fd: number
  /** Reads up to `length` bytes into `buffer` at `offset`; 0 bytes read means end of file. */
  read(
    buffer?: Uint8Array,
    offset?: number,
    length?: number,
    position?: number | null,
  ): Promise<{ bytesRead: number; buffer: Uint8Array }>
  /**
   * Writes at `position` (a gap past the end reads as zeros); a handle opened for append MUST
   * write at the end whatever the position. Each call is atomic.
   */
  write(
    data: WriteData,
    offsetOrOptions?:
      | number
      | null
      | { offset?: number; length?: number; position?: number | null; ifMatch?: string },
    lengthOrEncoding?: number | Encoding,
    position?: number | null,
  ): Promise<{ bytesWritten: number; buffer: WriteData }>
  /** The whole file from the start. */
  readFile(): Promise<Buffer>
  readFile(options: Encoding | { encoding: Encoding }): Promise<string>
  /** Replaces the whole content. */
  writeFile(
    data: WriteData,
    options?: { encoding?: Encoding; ifMatch?: string } | Encoding,
  ): Promise<void>
  /** Appends at the end. */
  appendFile(data: WriteData, encoding?: Encoding): Promise<void>
  /** Shortens or extends (with zeros) the file. */
  truncate(length?: number): Promise<void>
  /** The file's metadata now. */
  stat(): Promise<Stats>
  /** Resolves once what was written is durable as far as the implementation can make it. */
  sync(): Promise<void>
  /** Releases the handle; a second close MUST be harmless. */
  close(): Promise<void>
}

/** A directory being iterated, as every {@link FileSystem} returns it from `opendir`. */
export interface FsDir extends AsyncIterable<Dirent> {
  readonly path: string
  read(): Promise<Dirent | null>
  close(): Promise<void>
}

/** A time as Node accepts it: seconds (number or numeric string), or a Date. */
export type TimeLike = number | string | Date

/** Options of `readFile`. */
export interface ReadFileOptions {
  readonly encoding?: Encoding
  /** Read this version of the file instead of the current one (see `history`). */
  readonly version?: string
}
