import { constants, existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { FileSystem, FsFileHandle, Stats } from '@agentfs/fs'
import { errnoOf as posixErrno } from '@agentfs/fuse'
import { kernelBindingProblem, type Mount, type MountOptions, mountKernel } from './fuse-mount.js'

export type { Mount, MountOptions } from './fuse-mount.js'
export { activeMounts } from './fuse-mount.js'

/**
 * The FUSE side of `agentfs mount` and `agentfs run`: every kernel request becomes one call on a
 * {@link FileSystem} (the AgentFS filesystem or an overlay), so each mutation is one transaction
 * and the database stays usable by other processes (WAL, no exclusive lock) while mounted.
 *
 * fuse-native runs libfuse's multithreaded loop and hands each request to this event loop;
 * handlers are asynchronous and independent, so a slow request (a large read) never holds up
 * the others behind a lock of ours.
 */

type Callback = (errno: number, ...result: unknown[]) => void

interface FuseInstance {
  mount(cb: (error: Error | null) => void): void
  unmount(cb: (error: Error | null) => void): void
}
interface FuseModule {
  new (mountpoint: string, ops: object, options: object): FuseInstance
  unmount(mountpoint: string, cb: (error: Error | null) => void): void
}

const onPath = (command: string) =>
  (process.env.PATH ?? '').split(':').some((dir) => dir !== '' && existsSync(`${dir}/${command}`))

/**
 * Which binding mounts here: `libfuse3` (`@agentfs/fuse`, built from source on install) or,
 * when it could not be built, `fuse-native` (libfuse 2) if that is installed.
 */
export function fuseBinding(): 'libfuse3' | 'fuse-native' | undefined {
  if (kernelBindingProblem() === undefined) return 'libfuse3'
  try {
    loadFuse()
    return 'fuse-native'
  } catch {
    return undefined
  }
}

/**
 * Why FUSE mounts cannot work on this machine, or undefined when they can: the kernel device,
 * the `fusermount3` helper and a binding.
 */
export function fuseProblem(): string | undefined {
  if (!existsSync('/dev/fuse')) return '/dev/fuse is missing (Linux with the fuse module)'
  if (!onPath('fusermount3') && !onPath('fusermount'))
    return 'fusermount3 is not installed (apt-get install fuse3)'
  const problem = kernelBindingProblem()
  if (problem === undefined) return undefined
  try {
    loadFuse()
  } catch {
    return problem
  }
  return undefined
}

/**
 * What the installed fuse-native cannot do, or undefined. The published fuse-native 2.2.6 passes
 * atime where mtime belongs and lets libfuse drop `utimensat` calls that set one time only; this
 * repository builds it with a patch. An unpatched copy (what `npm install` brings) loses every
 * modification time set through the mount (`touch -m`, `tar x`, `cp -p`) — said at mount time.
 * `source` is the binding's C source, looked up next to the installed package by default.
 */
export function fuseLimitation(source?: string): string | undefined {
  let text: string
  try {
    const file =
      source ??
      join(
        dirname(createRequire(import.meta.url).resolve('fuse-native/package.json')),
        'fuse-native.c',
      )
    text = readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
  if (text.includes('flag_utime_omit_ok')) return undefined
  return 'this fuse-native is the unpatched upstream build: modification times set through the mount (touch -m, tar x, cp -p) are lost; build fuse-native with the AgentFS patch (see the CLI README) to keep them'
}

/** Loads fuse-native (an optional dependency) with an error that says what to do. */
function loadFuse(): FuseModule {
  if (!existsSync('/dev/fuse'))
    throw new Error('/dev/fuse is missing: FUSE mounts need Linux with the fuse kernel module')
  try {
    return createRequire(import.meta.url)('fuse-native') as FuseModule
  } catch (error) {
    throw new Error(
      `cannot load fuse-native (${(error as Error).message.split('\n')[0]}); install it next to the CLI with "npm install fuse-native@2.2.6" and install fuse3 (apt-get install fuse3)`,
    )
  }
}

const EIO = -5
const EBADF = -9
const EROFS = -30
const ELOOP = -40

/** A negative errno for FUSE: POSIX codes pass through; anything else is reported and is EIO. */
function errnoOf(error: unknown, report: (error: unknown) => void): number {
  const errno = posixErrno(error)
  if (errno !== undefined) return -errno
  report(error)
  return EIO
}

/** How the (patched) fuse-native passes UTIME_NOW and UTIME_OMIT, in milliseconds. */
const UTIME_NOW_MS = 2 ** 52
const UTIME_OMIT_MS = 2 ** 52 + 1

/** A utimens argument in seconds: "now", "leave as is" (`current` ms), or the time given. */
const timeArg = (ms: number, current: number) =>
  (ms === UTIME_NOW_MS ? Date.now() : ms === UTIME_OMIT_MS ? current : ms) / 1000

function attrs(s: Stats) {
  return {
    mode: s.mode,
    uid: s.uid,
    gid: s.gid,
    size: s.size,
    nlink: s.nlink,
    rdev: s.rdev,
    blksize: s.blksize,
    blocks: s.blocks,
    atime: s.atimeMs,
    mtime: s.mtimeMs,
    ctime: s.ctimeMs,
  }
}

export interface FuseOperationsOptions {
  /** Refuse every change with EROFS. */
  readonly readOnly?: boolean
  /** Called with errors that have no POSIX code (they reach the caller as EIO). */
  readonly report?: (error: unknown) => void
  /** Commits the changes made so far (fsync); see `MountOptions.flush`. */
  readonly flush?: () => Promise<void>
}

/** The fuse-native operation table for a {@link FileSystem}; open files are tracked by number. */
export function fuseOperations(fs: FileSystem, options: FuseOperationsOptions = {}) {
  const report =
    options.report ??
    ((error: unknown) => process.stderr.write(`agentfs mount: ${String(error)}\n`))
  const handles = new Map<number, FsFileHandle>()
  let nextFd = 1

  /** Runs `work` and answers the kernel: 0 (or the result) on success, a negative errno on failure. */
  const reply = (cb: Callback, work: () => Promise<unknown[] | undefined>) => {
    work().then(
      (result) => cb(0, ...(result ?? [])),
      (error) => cb(errnoOf(error, report)),
    )
  }
  const change = (cb: Callback, work: () => Promise<unknown>) =>
    options.readOnly
      ? process.nextTick(cb, EROFS)
      : reply(cb, async () => {
          await work()
          return undefined
        })
  const handle = (fd: number) => {
    const open = handles.get(fd)
    if (!open) throw Object.assign(new Error('unknown file handle'), { errno: EBADF })
    return open
  }
  const track = (open: FsFileHandle) => {
    const fd = nextFd++
    handles.set(fd, open)
    return [fd]
  }
  const writable = (flags: number) => (flags & 3) !== constants.O_RDONLY

  return {
    init: (cb: Callback) => cb(0),
    getattr: (path: string, cb: Callback) =>
      reply(cb, async () => {
        const stats = await fs.lstat(path)
        // The kernel resolves links itself, so every path it sends is physical: a directory
        // whose real path differs was reached through a second entry (a cycle or directory
        // hard link in a damaged database). Refusing it keeps cp -r, find and du from looping.
        if (stats.isDirectory() && path !== '/' && (await fs.realpath(path)) !== path)
          throw Object.assign(new Error(`directory cycle at ${path}; run agentfs fsck`), {
            errno: ELOOP,
          })
        return [attrs(stats)]
      }),
    fgetattr: (_path: string, fd: number, cb: Callback) =>
      reply(cb, async () => [attrs(await handle(fd).stat())]),
    access: (path: string, mode: number, cb: Callback) =>
      reply(cb, async () => {
        if (options.readOnly && mode & constants.W_OK)
          throw Object.assign(new Error('read-only mount'), { errno: EROFS })
        await fs.access(path, mode)
        return undefined
      }),
    statfs: (path: string, cb: Callback) =>
      reply(cb, async () => {
        const s = await fs.statfs(path)
        return [
          {
            bsize: s.bsize,
            frsize: s.bsize,
            blocks: s.blocks,
            bfree: s.bfree,
            bavail: s.bavail,
            files: s.files,
            ffree: s.ffree,
            favail: s.ffree,
            namemax: 255,
          },
        ]
      }),
    readdir: (path: string, cb: Callback) =>
      reply(cb, async () => [['.', '..', ...(await fs.readdir(path))]]),
    readlink: (path: string, cb: Callback) => reply(cb, async () => [await fs.readlink(path)]),
    open: (path: string, flags: number, cb: Callback) =>
      options.readOnly && writable(flags)
        ? process.nextTick(cb, EROFS)
        : reply(cb, async () => track(await fs.open(path, flags & ~constants.O_CREAT))),
    create: (path: string, mode: number, cb: Callback) =>
      options.readOnly
        ? process.nextTick(cb, EROFS)
        : reply(cb, async () =>
            track(await fs.open(path, constants.O_CREAT | constants.O_RDWR, mode & 0o7777)),
          ),
    read: (_path: string, fd: number, buf: Buffer, len: number, pos: number, cb: Callback) =>
      handle(fd)
        .read(buf, 0, len, pos)
        .then(
          ({ bytesRead }) => cb(bytesRead),
          (error) => cb(errnoOf(error, report)),
        ),
    write: (_path: string, fd: number, buf: Buffer, len: number, pos: number, cb: Callback) =>
      handle(fd)
        .write(buf, 0, len, pos)
        .then(
          ({ bytesWritten }) => cb(bytesWritten),
          (error) => cb(errnoOf(error, report)),
        ),
    flush: (_path: string, _fd: number, cb: Callback) => cb(0),
    fsync: (_path: string, _datasync: boolean, fd: number, cb: Callback) =>
      reply(cb, async () => {
        await handle(fd).sync()
        await options.flush?.()
        return undefined
      }),
    release: (_path: string, fd: number, cb: Callback) =>
      reply(cb, async () => {
        const open = handles.get(fd)
        handles.delete(fd)
        await open?.close()
        return undefined
      }),
    truncate: (path: string, size: number, cb: Callback) =>
      change(cb, () => fs.truncate(path, size)),
    ftruncate: (_path: string, fd: number, size: number, cb: Callback) =>
      change(cb, async () => handle(fd).truncate(size)),
    utimens: (path: string, atime: number, mtime: number, cb: Callback) =>
      change(cb, async () => {
        // The current times are only needed for a time left as it is (UTIME_OMIT).
        const s =
          atime === UTIME_OMIT_MS || mtime === UTIME_OMIT_MS ? await fs.lstat(path) : undefined
        await fs.lutimes(path, timeArg(atime, s?.atimeMs ?? 0), timeArg(mtime, s?.mtimeMs ?? 0))
      }),
    chmod: (path: string, mode: number, cb: Callback) =>
      change(cb, () => fs.chmod(path, mode & 0o7777)),
    chown: (path: string, uid: number, gid: number, cb: Callback) =>
      change(cb, async () => {
        // chown(2) passes -1 (as 0xffffffff) for "leave unchanged".
        const s = await fs.lstat(path)
        await fs.lchown(path, uid === 0xffffffff ? s.uid : uid, gid === 0xffffffff ? s.gid : gid)
      }),
    mknod: (path: string, mode: number, dev: number, cb: Callback) =>
      change(cb, () => fs.mknod(path, mode, dev)),
    mkdir: (path: string, mode: number, cb: Callback) =>
      change(cb, () => fs.mkdir(path, { mode: mode & 0o7777 })),
    unlink: (path: string, cb: Callback) => change(cb, () => fs.unlink(path)),
    rmdir: (path: string, cb: Callback) => change(cb, () => fs.rmdir(path)),
    rename: (from: string, to: string, cb: Callback) => change(cb, () => fs.rename(from, to)),
    link: (existing: string, path: string, cb: Callback) =>
      change(cb, () => fs.link(existing, path)),
    symlink: (target: string, path: string, cb: Callback) =>
      change(cb, () => fs.symlink(target, path)),
    /** Open handles, for tests and for closing them at unmount. */
    handles,
  }
}

/**
 * Mounts `fs` at `mountpoint` through FUSE; resolves once the kernel has the mount. The libfuse 3
 * binding serves it; fuse-native only when that binding could not be built (`Mount.binding`).
 */
export async function mount(
  fs: FileSystem,
  mountpoint: string,
  options: MountOptions = {},
): Promise<Mount> {
  if (kernelBindingProblem() === undefined) return mountKernel(fs, mountpoint, options)
  const Fuse = loadFuse()
  const ops = fuseOperations(fs, options)
  const fuse = new Fuse(mountpoint, ops, {
    force: true,
    // fuse-native has no option for these libfuse flags; its -o list is comma-joined, so they
    // ride along with the filesystem name. big_writes lets the kernel send 128 KiB writes
    // instead of 4 KiB ones (one transaction each).
    fsname: 'agentfs,big_writes,max_write=131072',
    subtype: 'agentfs',
    ...(options.allowOther ? { allowOther: true } : {}),
  })
  await new Promise<void>((resolve, reject) =>
    fuse.mount((error) => (error ? reject(mountError(error, mountpoint)) : resolve())),
  )
  let done: Promise<void> | undefined
  let ended!: () => void
  return {
    mountpoint,
    binding: 'fuse-native',
    ended: new Promise<void>((resolve) => {
      ended = resolve
    }),
    unmount: () => {
      done ??= new Promise<void>((resolve, reject) =>
        fuse.unmount((error) => (error ? reject(error) : resolve())),
      ).finally(async () => {
        const open = [...ops.handles.values()]
        ops.handles.clear()
        await Promise.allSettled(open.map((h) => h.close()))
        ended()
      })
      return done
    },
  }
}

function mountError(error: Error, mountpoint: string): Error {
  const message = error.message || String(error)
  if (/does not exist/.test(message))
    return new Error(`mountpoint ${mountpoint} does not exist; create it with mkdir first`)
  if (/in use/.test(message))
    return new Error(
      `${mountpoint} is already a mountpoint; unmount it first (umount ${mountpoint})`,
    )
  return new Error(`cannot mount at ${mountpoint}: ${message}`)
}
