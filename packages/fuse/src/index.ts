import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { constants } from 'node:os'

/**
 * libfuse 3's low-level API for Node.js. The kernel names files by node id (`ino` here), which
 * the filesystem chooses in `lookup` and the other calls that answer an entry; the root is 1.
 * Every handler is asynchronous and requests are dispatched as they come: a slow one does not
 * hold up the rest. A handler answers by resolving (the value the kernel needs) or by throwing an
 * error carrying a POSIX code (`code: 'ENOENT'` or a negative `errno`); anything else is
 * reported through `onError` and answered EIO. A missing handler answers ENOSYS.
 */

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

export interface StatfsResult {
  readonly bsize: number
  readonly blocks: number
  readonly bfree: number
  readonly bavail: number
  readonly files: number
  readonly ffree: number
  readonly namemax: number
}

type Handler<T> = (request: Request) => Promise<T>

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
  /** Drops what the kernel cached about node `ino` (after a change it did not make). */
  invalidate(ino: number): void
  /** Drops the kernel's cached name `name` under directory `parent`. */
  invalidateEntry(parent: number, name: string): void
}

interface Native {
  mount(mountpoint: string, options: string, dispatch: Dispatch): object
  unmount(session: object): void
  notifyInvalidate(session: object, ino: number): number
  notifyInvalidateEntry(session: object, parent: number, name: string): number
  replyError(handle: object, errno: number): void
  replyEntry(handle: object, nodeid: number, attr: Float64Array, at: number, et: number): void
  replyCreate(
    handle: object,
    nodeid: number,
    attr: Float64Array,
    at: number,
    et: number,
    fh: number,
    keepCache: number,
  ): void
  replyAttr(handle: object, attr: Float64Array, timeout: number): void
  replyReadlink(handle: object, target: string): void
  replyOpen(handle: object, fh: number, keepCache: number): void
  replyWrite(handle: object, count: number): void
  replyBuffer(handle: object, data: Uint8Array, length: number): void
  replyStatfs(handle: object, stat: Float64Array): void
  replyDirectory(
    handle: object,
    names: readonly string[],
    modes: Float64Array,
    start: number,
    size: number,
  ): void
  version(): number
}

type Dispatch = (op: number, handle: object | undefined, request: Request) => void

/** Operation numbers of the binding (native/agentfs_fuse.c), in order. */
const OPERATIONS = [
  'lookup',
  'forget',
  'getattr',
  'setattr',
  'readlink',
  'mknod',
  'mkdir',
  'unlink',
  'rmdir',
  'symlink',
  'rename',
  'link',
  'open',
  'read',
  'write',
  'flush',
  'release',
  'fsync',
  'opendir',
  'readdir',
  'releasedir',
  'fsyncdir',
  'statfs',
  'create',
  'fallocate',
  'ended',
] as const
const ENDED = OPERATIONS.length - 1

let loaded: Native | Error | undefined

function native(): Native {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)('../build/Release/agentfs_fuse.node') as Native
    } catch (error) {
      loaded = new Error(
        `the @agentfs/fuse binding is not built (${(error as Error).message.split('\n')[0]}); install libfuse3-dev, pkg-config and a C compiler (apt-get install libfuse3-dev pkg-config build-essential), then reinstall @agentfs/fuse`,
      )
    }
  }
  if (loaded instanceof Error) throw loaded
  return loaded
}

/** Why this binding cannot mount here, or undefined when it can. */
export function unavailable(): string | undefined {
  if (process.platform !== 'linux') return 'FUSE mounts need Linux'
  if (!existsSync('/dev/fuse')) return '/dev/fuse is missing (Linux with the fuse module)'
  try {
    native()
  } catch (error) {
    return (error as Error).message
  }
  return undefined
}

/** The libfuse version the binding runs on, e.g. 314 for 3.14. */
export const libfuseVersion = (): number => native().version()

const ERRNO = constants.errno as Record<string, number>
const EIO = ERRNO.EIO as number
const ENOSYS = ERRNO.ENOSYS as number

/** The positive errno of an error, or undefined when it has none. */
export function errnoOf(error: unknown): number | undefined {
  const { code, errno } = (error ?? {}) as { code?: unknown; errno?: unknown }
  if (typeof errno === 'number' && Number.isInteger(errno) && errno !== 0) return Math.abs(errno)
  if (typeof code === 'string' && typeof ERRNO[code] === 'number') return ERRNO[code]
  return undefined
}

const NS = 1_000_000_000n
const attrBuffer = new Float64Array(15)
const statfsBuffer = new Float64Array(8)

/** Packs attributes as the binding reads them (one buffer: replies copy it at once). */
function packed(a: Attributes): Float64Array {
  const b = attrBuffer
  b[0] = a.ino
  b[1] = a.mode
  b[2] = a.nlink
  b[3] = a.uid
  b[4] = a.gid
  b[5] = a.rdev
  b[6] = a.size
  b[7] = a.blocks
  b[8] = a.blksize
  b[9] = Number(a.atimeNs / NS)
  b[10] = Number(a.atimeNs % NS)
  b[11] = Number(a.mtimeNs / NS)
  b[12] = Number(a.mtimeNs % NS)
  b[13] = Number(a.ctimeNs / NS)
  b[14] = Number(a.ctimeNs % NS)
  return b
}

/** Mounts `operations` at `mountpoint`. Throws when the kernel or libfuse refuses. */
export function mount(
  mountpoint: string,
  operations: Operations,
  options: MountOptions = {},
): Session {
  const binding = native()
  const attrTimeout = options.attrTimeout ?? 1
  const entryTimeout = options.entryTimeout ?? 1
  const onError =
    options.onError ??
    ((error: unknown, op: string) =>
      process.stderr.write(`agentfs fuse: ${op}: ${String(error)}\n`))
  let mounted = true
  let endedResolve!: () => void
  const ended = new Promise<void>((resolve) => {
    endedResolve = resolve
  })

  const fail = (handle: object, op: string, error: unknown) => {
    let errno = errnoOf(error)
    if (errno === undefined) {
      onError(error, op)
      errno = EIO
    }
    try {
      binding.replyError(handle, errno)
    } catch (replyError) {
      onError(replyError, op)
    }
  }
  const entry = (handle: object, e: Entry) =>
    binding.replyEntry(handle, e.nodeid, packed(e.attr), attrTimeout, entryTimeout)
  const none = (handle: object) => binding.replyError(handle, 0)

  /** How each operation's result is sent. */
  const answer: Record<string, (handle: object, result: never, request: Request) => void> = {
    lookup: entry,
    mknod: entry,
    mkdir: entry,
    symlink: entry,
    link: entry,
    getattr: (h, a: Attributes) => binding.replyAttr(h, packed(a), attrTimeout),
    setattr: (h, a: Attributes) => binding.replyAttr(h, packed(a), attrTimeout),
    readlink: (h, target: string) => binding.replyReadlink(h, target),
    open: (h, o: Opened) => binding.replyOpen(h, o.fh, o.keepCache ? 1 : 0),
    opendir: (h, o: Opened) => binding.replyOpen(h, o.fh, 0),
    read: (h, data: Uint8Array, r) =>
      binding.replyBuffer(
        h,
        Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength),
        Math.min(data.byteLength, r.size),
      ),
    write: (h, count: number) => binding.replyWrite(h, count),
    readdir: (h, l: Listing, r) => binding.replyDirectory(h, l.names, l.modes, r.offset, r.size),
    statfs: (h, s: StatfsResult) => {
      const b = statfsBuffer
      b[0] = s.bsize
      b[1] = s.bsize
      b[2] = s.blocks
      b[3] = s.bfree
      b[4] = s.bavail
      b[5] = s.files
      b[6] = s.ffree
      b[7] = s.namemax
      binding.replyStatfs(h, b)
    },
    create: (h, c: Entry & Opened) =>
      binding.replyCreate(
        h,
        c.nodeid,
        packed(c.attr),
        attrTimeout,
        entryTimeout,
        c.fh,
        c.keepCache ? 1 : 0,
      ),
  }

  const dispatch: Dispatch = (op, handle, request) => {
    const name = OPERATIONS[op] ?? 'unknown'
    if (op === ENDED) {
      mounted = false
      endedResolve()
      return
    }
    if (name === 'forget') {
      operations.forget?.(request.ino, request.nlookup ?? 0)
      return
    }
    if (handle === undefined) return
    const handler = operations[name as keyof Operations] as Handler<unknown> | undefined
    if (handler === undefined) {
      binding.replyError(handle, ENOSYS)
      return
    }
    const send = answer[name] ?? none
    let pending: Promise<unknown>
    try {
      pending = handler(request)
    } catch (error) {
      fail(handle, name, error)
      return
    }
    pending.then(
      (result) => {
        try {
          send(handle, result as never, request)
        } catch (error) {
          // A result of the wrong shape: the request is still answered.
          onError(error, name)
          binding.replyError(handle, EIO)
        }
      },
      (error) => fail(handle, name, error),
    )
  }

  const session = binding.mount(mountpoint, (options.options ?? []).join(','), dispatch)
  return {
    mountpoint,
    ended,
    get mounted() {
      return mounted
    },
    unmount() {
      if (mounted) binding.unmount(session)
      return ended
    },
    invalidate: (ino) => {
      if (mounted) binding.notifyInvalidate(session, ino)
    },
    invalidateEntry: (parent, name) => {
      if (mounted) binding.notifyInvalidateEntry(session, parent, name)
    },
  }
}
