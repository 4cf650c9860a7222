import {
  type Change,
  FsError,
  followChanges,
  isWithin,
  lastChange,
  normalizePath,
} from '@agentfs/core'
import type { Guard } from '../policy/guard.js'
import { isDir } from '../storage/inode.js'
import { existing, type FsContext } from './context.js'

/** Options of `fs.watch`, as `node:fs/promises` `watch` takes them, plus the probe interval. */
export interface WatchOptions {
  /** Also report changes anywhere below a watched directory (filename: the relative path). */
  readonly recursive?: boolean
  readonly signal?: AbortSignal
  /** `'buffer'` gives filenames as Buffers; any other encoding gives strings. */
  readonly encoding?: BufferEncoding | 'buffer'
  /** Accepted for Node compatibility; the iteration never keeps the process alive by itself. */
  readonly persistent?: boolean
  /** How often to look for new changes (default 50 ms; see `followChanges`). */
  readonly intervalMs?: number
}

/** One event, shaped like `node:fs/promises` `watch`'s. */
export interface WatchEvent<F = string> {
  readonly eventType: 'rename' | 'change'
  readonly filename: F
}

const RENAMES = new Set([
  'create',
  'unlink',
  'mkdir',
  'rmdir',
  'rm',
  'symlink',
  'mknod',
  'rename',
  'link',
])

/**
 * What `watched` (a directory when `dir`) sees of one changed path: the filename relative to it,
 * or undefined when the path is outside what it watches.
 */
function relativeName(
  watched: string,
  dir: boolean,
  recursive: boolean,
  path: string,
): string | undefined {
  if (!dir) return path === watched ? path.slice(path.lastIndexOf('/') + 1) : undefined
  if (path === watched || !isWithin(path, watched)) return undefined
  const rel = watched === '/' ? path.slice(1) : path.slice(watched.length + 1)
  if (!recursive && rel.includes('/')) return undefined
  return rel
}

/**
 * Changes of `path` as `node:fs/promises` `watch` reports them, read from the change feed: so
 * changes made by other processes and through a FUSE mount of the same database show too.
 * `rename` for entries that appear or go, `change` for content and metadata.
 */
export async function* watchPath(
  ctx: FsContext,
  path: string,
  options: WatchOptions = {},
  readable: (path: string) => boolean = () => true,
): AsyncGenerator<WatchEvent<string | Buffer>, void, undefined> {
  if (!ctx.feed)
    throw new FsError({
      code: 'ENOSYS',
      syscall: 'watch',
      path,
      hint: 'watch reads the change feed, which this filesystem was opened without; open it with the feed on',
    })
  if (options.signal?.aborted) throw abortError(options.signal)
  const watched = normalizePath(path, 'watch')
  // Like Node: a path that does not exist is ENOENT at the start, not an empty stream.
  const cursor = await ctx.q.transaction(async (tx) => {
    const { node } = await existing(tx, watched, 'watch')
    return { dir: isDir(node.mode), seq: await lastChange(tx) }
  })
  const recursive = options.recursive === true
  const encode = (name: string): string | Buffer =>
    options.encoding === 'buffer'
      ? Buffer.from(name)
      : options.encoding === undefined ||
          options.encoding === 'utf8' ||
          options.encoding === 'utf-8'
        ? name
        : Buffer.from(name).toString(options.encoding)
  const follow = followChanges(ctx.q, {
    cursor: cursor.seq,
    store: 'fs',
    path: watched,
    recursive: cursor.dir,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.intervalMs === undefined ? {} : { intervalMs: options.intervalMs }),
  })
  for await (const change of follow) {
    for (const event of eventsOf(change, watched, cursor.dir, recursive, readable))
      yield { eventType: event.eventType, filename: encode(event.filename) }
  }
  // Like Node: an aborted watch ends its iteration with an AbortError.
  if (options.signal?.aborted) throw abortError(options.signal)
}

/** The error Node's fs.promises.watch throws when its signal aborts. */
function abortError(signal: AbortSignal): Error {
  const error = new Error('The operation was aborted', { cause: signal.reason })
  error.name = 'AbortError'
  Object.assign(error, { code: 'ABORT_ERR' })
  return error
}

function eventsOf(
  change: Change,
  watched: string,
  dir: boolean,
  recursive: boolean,
  readable: (path: string) => boolean,
): WatchEvent[] {
  const eventType = RENAMES.has(change.op) ? 'rename' : 'change'
  const events: WatchEvent[] = []
  for (const path of [
    change.path,
    change.op === 'rename' || change.op === 'link' ? change.path2 : null,
  ]) {
    if (path === null || !readable(path)) continue
    const filename = relativeName(watched, dir, recursive, path)
    if (filename !== undefined) events.push({ eventType, filename })
  }
  return events
}

/** {@link watchPath} with a policy: the watched path must be readable, and so must each event's. */
export function watchGuarded(
  ctx: FsContext,
  guard: Guard,
  path: string,
  options: WatchOptions,
): AsyncIterable<WatchEvent<string | Buffer>> {
  const policy = ctx.policy
  if (!policy) return watchPath(ctx, path, options)
  return (async function* () {
    await guard.reading(path, 'watch', async () => undefined)
    yield* watchPath(ctx, path, options, (p) => policy.readable(p))
  })()
}
