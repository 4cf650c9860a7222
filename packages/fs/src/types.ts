import type { Readable, Writable } from 'node:stream'
import type { GlobMatch, GlobOptions, GrepMatch, GrepOptions } from './search.js'
import type { Dirent, Stats } from './stats.js'
import type { ReadStreamOptions, WriteStreamOptions } from './streams.js'

/** Data accepted by writes. Strings are encoded as UTF-8 unless an encoding is given. */
export type WriteData = string | Uint8Array

/** Encodings accepted where Node accepts them. */
export type Encoding = BufferEncoding

/** `atime` policies, as the mount options of the same names. */
export type AtimeMode = 'relatime' | 'strictatime' | 'noatime'

/** Options of `writeFile` and `appendFile`. */
export interface WriteFileOptions {
  readonly encoding?: Encoding
  /** Node flags: `w` (default), `wx` (fail if it exists), `a`, `ax`. */
  readonly flag?: 'w' | 'wx' | 'a' | 'ax' | 'w+' | 'a+'
  /** Mode for a new file (default `0o666` less the umask). */
  readonly mode?: number
  /** Refuse the write with a {@link ConflictError} unless the file's version is this one. */
  readonly ifMatch?: string
}

/** Options of `mkdir`. */
export interface MkdirOptions {
  readonly recursive?: boolean
  readonly mode?: number
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
 * The filesystem interface shared by the AgentFS filesystem, the overlay, the read-only host
 * directory filesystem, agent tools, the CLI and the FUSE mount. Methods follow
 * `node:fs/promises` names and semantics; failures are `FsError`s with POSIX codes.
 */
export interface FileSystem {
  readFile(path: string): Promise<Buffer>
  readFile(path: string, options: Encoding | { encoding: Encoding }): Promise<string>
  writeFile(path: string, data: WriteData, options?: WriteFileOptions | Encoding): Promise<void>
  appendFile(path: string, data: WriteData, options?: WriteFileOptions | Encoding): Promise<void>
  truncate(path: string, length?: number): Promise<void>
  unlink(path: string): Promise<void>
  rename(from: string, to: string): Promise<void>
  link(existing: string, newPath: string): Promise<void>
  symlink(target: string, path: string): Promise<void>
  readlink(path: string): Promise<string>
  realpath(path: string): Promise<string>
  exists(path: string): Promise<boolean>
  access(path: string, mode?: number): Promise<void>
  mkdir(path: string, options?: MkdirOptions | number): Promise<string | undefined>
  rmdir(path: string): Promise<void>
  rm(path: string, options?: RmOptions): Promise<void>
  readdir(path: string): Promise<string[]>
  readdir(path: string, options: ReaddirOptions & { withFileTypes: true }): Promise<Dirent[]>
  readdir(path: string, options: ReaddirOptions): Promise<string[] | Dirent[]>
  stat(path: string): Promise<Stats>
  lstat(path: string): Promise<Stats>
  chmod(path: string, mode: number): Promise<void>
  chown(path: string, uid: number, gid: number): Promise<void>
  lchown(path: string, uid: number, gid: number): Promise<void>
  utimes(path: string, atime: TimeLike, mtime: TimeLike): Promise<void>
  lutimes(path: string, atime: TimeLike, mtime: TimeLike): Promise<void>
  copyFile(src: string, dest: string, mode?: number): Promise<void>
  statfs(path: string): Promise<StatFs>
  mknod(path: string, mode: number, rdev?: number): Promise<void>
  cp(src: string, dest: string, options?: CpOptions): Promise<void>
  open(path: string, flags?: string | number, mode?: number): Promise<FsFileHandle>
  opendir(path: string, options?: { bufferSize?: number }): Promise<FsDir>
  createReadStream(path: string, options?: ReadStreamOptions): Readable
  createWriteStream(path: string, options?: WriteStreamOptions): Writable
  glob(pattern: string, options?: GlobOptions): Promise<GlobMatch[]>
  grep(pattern: string | RegExp, options?: GrepOptions): Promise<GrepMatch[]>
}

/** Options of `cp`. */
export interface CpOptions {
  readonly recursive?: boolean
  readonly force?: boolean
  readonly errorOnExist?: boolean
  readonly dereference?: boolean
}

/** An open file, as every {@link FileSystem} returns it from `open`. */
export interface FsFileHandle {
  readonly fd: number
  read(
    buffer?: Uint8Array,
    offset?: number,
    length?: number,
    position?: number | null,
  ): Promise<{ bytesRead: number; buffer: Uint8Array }>
  write(
    data: WriteData,
    offsetOrOptions?:
      | number
      | null
      | { offset?: number; length?: number; position?: number | null; ifMatch?: string },
    lengthOrEncoding?: number | Encoding,
    position?: number | null,
  ): Promise<{ bytesWritten: number; buffer: WriteData }>
  readFile(): Promise<Buffer>
  readFile(options: Encoding | { encoding: Encoding }): Promise<string>
  writeFile(
    data: WriteData,
    options?: { encoding?: Encoding; ifMatch?: string } | Encoding,
  ): Promise<void>
  appendFile(data: WriteData, encoding?: Encoding): Promise<void>
  truncate(length?: number): Promise<void>
  stat(): Promise<Stats>
  sync(): Promise<void>
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
