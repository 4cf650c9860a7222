import { readFileSync, statSync } from 'node:fs'
import type { FileSystem } from '@agentfs/fs'
import * as binding from '@agentfs/fuse'
import { OverlayFs } from '@agentfs/overlay'
import { kernelOperations } from './fuse-kernel.js'

/** How `agentfs mount` and `agentfs run` mount a filesystem. */
export interface MountOptions {
  /** Refuse every change with EROFS (the kernel's `ro`, and the operations as well). */
  readonly readOnly?: boolean
  /** Called with errors that have no POSIX code (they reach the caller as EIO). */
  readonly report?: (error: unknown) => void
  /** Let other users reach the mount (default: when running as root). */
  readonly allowOther?: boolean
  /** Unmount when this process dies, however it dies (libfuse's `auto_unmount`). */
  readonly autoUnmount?: boolean
  /** Show every inode as owned by this user / group. */
  readonly uid?: number
  readonly gid?: number
  /** What `mount` lists as the source (the database). */
  readonly source?: string
  /**
   * Changes to the files from elsewhere (other processes, the SDK, sync): the kernel is told to
   * drop what it cached of each changed path at once, instead of keeping it until its timeout.
   */
  readonly changes?: ChangeSource
  /**
   * Commits the changes made so far, rejecting when some were lost: the view's database commits
   * in groups (`groupCommits`). Called by fsync and fsyncdir, and once the mount has gone.
   */
  readonly flush?: () => Promise<void>
}

/** A feed of the file changes made elsewhere than through this mount. */
export interface ChangeSource {
  /**
   * Every change from now on that the mount did not make (the kernel saw its own), until
   * `signal` aborts.
   */
  follow(signal: AbortSignal): AsyncIterable<{ path: string | null; path2: string | null }>
}

/** A mounted filesystem. */
export interface Mount {
  readonly mountpoint: string
  /** Which binding serves it. */
  readonly binding: 'libfuse3' | 'fuse-native'
  /** Resolves when the mount has gone, also when it was unmounted from outside. */
  readonly ended: Promise<void>
  /** Unmounts (lazily, so a busy mountpoint cannot block exit) and closes open handles. */
  unmount(): Promise<void>
}

/** A mount the kernel lists: what it shows, where, and its fuse type. */
export interface ActiveMount {
  readonly source: string
  readonly mountpoint: string
  readonly type: string
}

/** Unescapes a /proc/self/mountinfo field (`\040` for a space, and so on). */
const unescapeField = (field: string) =>
  field.replace(/\\([0-7]{3})/g, (_, octal: string) =>
    String.fromCharCode(Number.parseInt(octal, 8)),
  )

/** The AgentFS mounts the kernel has (type fuse.agentfs), from `/proc/self/mountinfo`. */
export function activeMounts(mountinfo = '/proc/self/mountinfo'): ActiveMount[] {
  let text: string
  try {
    text = readFileSync(mountinfo, 'utf8')
  } catch {
    return []
  }
  const found: ActiveMount[] = []
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ')
    if (left === undefined || right === undefined) continue
    const [type, source] = right.split(' ')
    const mountpoint = left.split(' ')[4]
    if (type === 'fuse.agentfs' && mountpoint !== undefined)
      found.push({
        type,
        source: unescapeField(source ?? ''),
        mountpoint: unescapeField(mountpoint),
      })
  }
  return found
}

/** Escapes a value for libfuse's comma-separated -o list. */
const optionValue = (value: string) => value.replace(/[\\,]/g, (c) => `\\${c}`)

const MUTATIONS = [
  'setattr',
  'mknod',
  'mkdir',
  'unlink',
  'rmdir',
  'symlink',
  'rename',
  'link',
  'write',
  'fallocate',
] as const

/** Checks the mountpoint before libfuse does, for an error that says what to do. */
function checkMountpoint(mountpoint: string): void {
  let isDir: boolean
  try {
    isDir = statSync(mountpoint).isDirectory()
  } catch {
    throw new Error(`mountpoint ${mountpoint} does not exist; create it with mkdir first`)
  }
  if (!isDir) throw new Error(`mountpoint ${mountpoint} is not a directory`)
  if (activeMounts().some((m) => m.mountpoint === mountpoint))
    throw new Error(
      `${mountpoint} is already an AgentFS mountpoint; unmount it first (umount ${mountpoint})`,
    )
}

/** Mounts `fs` through the libfuse 3 binding (`@agentfs/fuse`). */
export function mountKernel(fs: FileSystem, mountpoint: string, options: MountOptions): Mount {
  checkMountpoint(mountpoint)
  // One way out for errors with no POSIX code (context: the operation), damage met while
  // serving (its message is the line), and a change feed that could not be followed.
  const report = (error: unknown, context?: string) => {
    if (options.report) return options.report(error)
    const line =
      context !== undefined
        ? `${context}: ${String(error)}`
        : error instanceof Error
          ? error.message
          : String(error)
    process.stderr.write(`agentfs mount: ${line}\n`)
  }
  const ops = kernelOperations(fs, {
    uid: process.getuid?.() ?? 0,
    gid: process.getgid?.() ?? 0,
    report,
    ...(options.flush ? { flush: options.flush } : {}),
    ...(fs instanceof OverlayFs ? { copyOnWrite: true } : {}),
    ...(options.uid !== undefined ? { reportUid: options.uid } : {}),
    ...(options.gid !== undefined ? { reportGid: options.gid } : {}),
  })
  if (options.readOnly) {
    const refuse = async () => {
      throw Object.assign(new Error('read-only mount'), { code: 'EROFS' })
    }
    const table = ops as unknown as Record<string, unknown>
    for (const name of MUTATIONS) if (table[name] !== undefined) table[name] = refuse
  }
  const root = process.getuid?.() === 0
  const list = [
    `fsname=${optionValue(options.source ?? 'agentfs')}`,
    'subtype=agentfs',
    'default_permissions',
  ]
  if (options.allowOther ?? root) list.push('allow_other')
  if (options.autoUnmount) list.push('auto_unmount')
  if (options.readOnly) list.push('ro')
  const session = binding.mount(mountpoint, ops, {
    options: list,
    onError: (error, op) => report(error, op),
  })
  const stopFollowing = new AbortController()
  if (options.changes) followChanges(options.changes, stopFollowing.signal, ops, session, report)
  let done: Promise<void> | undefined
  const ended = session.ended.then(async () => {
    stopFollowing.abort()
    await ops.closeAll()
    await options.flush?.().catch((error: unknown) => report(error, 'committing at unmount'))
  })
  return {
    mountpoint,
    binding: 'libfuse3',
    ended,
    unmount: () => {
      done ??= session.unmount().then(() => ended)
      return done
    },
  }
}

/**
 * Invalidates what the kernel cached of each path changed elsewhere (the source leaves out the
 * mount's own changes: the kernel saw them). Runs until `signal` aborts; an error ends it with a report, and
 * the kernel's timeouts (1 s) still bound how stale anything can be.
 */
function followChanges(
  source: ChangeSource,
  signal: AbortSignal,
  ops: ReturnType<typeof kernelOperations>,
  session: binding.Session,
  report: (error: unknown, context: string) => void,
): void {
  const invalidate = (path: string | null) => {
    if (path === null) return
    const { nodes, entry } = ops.cachedFor(path)
    if (entry) session.invalidateEntry(entry[0], entry[1])
    for (const node of nodes) session.invalidate(node)
  }
  void (async () => {
    for await (const change of source.follow(signal)) {
      invalidate(change.path)
      invalidate(change.path2)
    }
  })().catch((error: unknown) => {
    if (!signal.aborted) report(error, 'following changes')
  })
}

/** Why the libfuse 3 binding cannot mount here, or undefined when it can. */
export const kernelBindingProblem = (): string | undefined => binding.unavailable()
