import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { constants } from 'node:os'
import type {
  Attributes,
  Entry,
  Handler,
  Listing,
  MountOptions,
  Opened,
  Operations,
  PlusListing,
  Request,
  Session,
  StatfsResult,
} from './types.js'

export type {
  Attributes,
  Entry,
  Listing,
  MountOptions,
  Opened,
  Operations,
  PlusListing,
  Request,
  Session,
  StatfsResult,
} from './types.js'
export { SET_ATTR } from './types.js'

/**
 * libfuse 3's low-level API for Node.js. The kernel names files by node id (`ino` here), which
 * the filesystem chooses in `lookup` and the other calls that answer an entry; the root is 1.
 * Requests are read from the FUSE device on this thread's event loop and dispatched as they
 * come; every handler is asynchronous, so a slow one does not hold up the rest. A handler
 * answers by resolving (the value the kernel needs) or by throwing an error carrying a POSIX
 * code (`code: 'ENOENT'` or a negative `errno`); anything else is reported through `onError`
 * and answered EIO. A missing handler answers ENOSYS.
 */

interface Native {
  mount(mountpoint: string, options: string, dispatch: Dispatch, features: number): object
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
  replyDirectoryPlus(
    handle: object,
    names: readonly string[],
    nodeids: Float64Array,
    attrs: Float64Array,
    start: number,
    size: number,
    attrTimeout: number,
    entryTimeout: number,
  ): number
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
  'readdirplus',
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
const ENOENT = ERRNO.ENOENT as number
const ENOSYS = ERRNO.ENOSYS as number

/** The positive errno of an error, or undefined when it has none. */
export function errnoOf(error: unknown): number | undefined {
  const { code, errno } = (error ?? {}) as { code?: unknown; errno?: unknown }
  if (typeof errno === 'number' && Number.isInteger(errno) && errno !== 0) return Math.abs(errno)
  if (typeof code === 'string' && typeof ERRNO[code] === 'number') return ERRNO[code]
  return undefined
}

const NS = 1_000_000_000n
/** Numbers per attributes as the binding reads them (A_COUNT in native/replies.c). */
const ATTR_COUNT = 15
const attrBuffer = new Float64Array(ATTR_COUNT)
const noAttributes = new Float64Array(ATTR_COUNT)
const statfsBuffer = new Float64Array(8)
const FEATURE_READDIRPLUS = 1
const FEATURE_WRITEBACK_CACHE = 2
const FEATURE_NO_OPEN = 4

/** Packs attributes as the binding reads them, into `b` at `at` (one buffer: replies copy it). */
function packed(a: Attributes, b = attrBuffer, at = 0): Float64Array {
  b[at] = a.ino
  b[at + 1] = a.mode
  b[at + 2] = a.nlink
  b[at + 3] = a.uid
  b[at + 4] = a.gid
  b[at + 5] = a.rdev
  b[at + 6] = a.size
  b[at + 7] = a.blocks
  b[at + 8] = a.blksize
  b[at + 9] = Number(a.atimeNs / NS)
  b[at + 10] = Number(a.atimeNs % NS)
  b[at + 11] = Number(a.mtimeNs / NS)
  b[at + 12] = Number(a.mtimeNs % NS)
  b[at + 13] = Number(a.ctimeNs / NS)
  b[at + 14] = Number(a.ctimeNs % NS)
  return b
}

/**
 * The smallest entry of a readdirplus reply, in bytes (the kernel's entry_out and dirent header
 * before the name): a reply of `size` bytes holds at most size / 152 entries, so no more are
 * packed for it (the kernel asks a page at a time).
 */
const PLUS_ENTRY_MIN = 152

/** Answers a readdirplus: the entries from `start`, packed, and which of them were sent. */
function replyPlus(
  binding: Native,
  handle: object,
  listing: PlusListing,
  start: number,
  size: number,
  attrTimeout: number,
  entryTimeout: number,
): void {
  const names = listing.names.slice(start, start + Math.ceil(size / PLUS_ENTRY_MIN))
  const nodeids = new Float64Array(names.length)
  const attrs = new Float64Array(names.length * ATTR_COUNT)
  for (let i = 0; i < names.length; i++) {
    const entry = listing.entries[start + i]
    if (entry === undefined) {
      // The name and type only, with the inode number libfuse uses for "unknown" (a dirent
      // numbered 0 is skipped by readdir(3)).
      attrs[i * ATTR_COUNT] = 0xffffffff
      attrs[i * ATTR_COUNT + 1] = listing.modes[start + i] ?? 0
      continue
    }
    nodeids[i] = entry.nodeid
    packed(entry.attr, attrs, i * ATTR_COUNT)
  }
  const sent = binding.replyDirectoryPlus(
    handle,
    names,
    nodeids,
    attrs,
    start,
    size,
    attrTimeout,
    entryTimeout,
  )
  listing.sent?.(start, start + sent)
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
  const negativeTimeout = options.negativeTimeout ?? entryTimeout
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
      // A name that is not there: the kernel may remember that for the entry timeout too
      // (a negative entry), so programs probing for files do not ask again and again.
      if (errno === ENOENT && op === 'lookup' && negativeTimeout > 0)
        binding.replyEntry(handle, 0, noAttributes, 0, negativeTimeout)
      else binding.replyError(handle, errno)
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
    readdirplus: (h, l: PlusListing, r) =>
      replyPlus(binding, h, l, r.offset, r.size, attrTimeout, entryTimeout),
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

  const features =
    (operations.readdirplus ? FEATURE_READDIRPLUS : 0) |
    (options.writebackCache ? FEATURE_WRITEBACK_CACHE : 0) |
    (operations.open ? 0 : FEATURE_NO_OPEN)
  const session = binding.mount(mountpoint, (options.options ?? []).join(','), dispatch, features)
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
    invalidate: (ino) => mounted && binding.notifyInvalidate(session, ino) === 0,
    invalidateEntry: (parent, name) =>
      mounted && binding.notifyInvalidateEntry(session, parent, name) === 0,
  }
}
