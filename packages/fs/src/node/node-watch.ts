import { EventEmitter } from 'node:events'
import { Stats } from '../stats.js'
import { pathArg } from './node-args.js'

type WatchIterable = AsyncIterable<{ eventType: string; filename: string | Buffer | null }>
type Listener = (...args: unknown[]) => void

/**
 * `fs.watch(path, [options], [listener])` over the filesystem's `promises.watch`: an
 * `FSWatcher`-like emitter of `change` events `(eventType, filename)` (and `error`), stopped by
 * `close()` or `using`. Without `promises.watch` (a filesystem that cannot watch) it throws
 * ENOSYS-like, as Node does on platforms without watching.
 */
export function watchApi(
  promises: Record<string, unknown>,
  /** A synchronous stat, when there is one: `watchFile` then takes its first stat at once. */
  statSync?: (path: string) => Stats | undefined,
) {
  const watch = (path: unknown, a?: unknown, b?: unknown) => {
    const listener = (typeof a === 'function' ? a : b) as Listener | undefined
    const options = (
      typeof a === 'object' && a !== null ? a : typeof a === 'string' ? { encoding: a } : {}
    ) as object
    const start = promises.watch as ((p: string, o: object) => WatchIterable) | undefined
    if (!start) {
      const error = new Error('fs.watch is not available on this filesystem') as Error & {
        code: string
      }
      error.code = 'ERR_FEATURE_UNAVAILABLE_ON_PLATFORM'
      throw error
    }
    const abort = new AbortController()
    const watcher = new EventEmitter() as EventEmitter & {
      close(): void
      ref(): typeof watcher
      unref(): typeof watcher
      [Symbol.dispose](): void
    }
    if (listener) watcher.on('change', listener)
    const iterable = start(pathArg(path), { ...options, signal: abort.signal })
    ;(async () => {
      for await (const event of iterable) watcher.emit('change', event.eventType, event.filename)
    })().catch((error: Error) => {
      if (error.name !== 'AbortError' && !abort.signal.aborted) watcher.emit('error', error)
    })
    let closed = false
    watcher.close = () => {
      if (closed) return
      closed = true
      abort.abort()
      process.nextTick(() => watcher.emit('close'))
    }
    watcher.ref = () => watcher
    watcher.unref = () => watcher
    watcher[Symbol.dispose] = () => watcher.close()
    return watcher
  }

  /** Polled watchers by path: one timer per path, as Node shares a StatWatcher. */
  const polled = new Map<string, { timer: NodeJS.Timeout; listeners: Set<Listener> }>()
  const watchFile = (path: unknown, a?: unknown, b?: unknown) => {
    const listener = (typeof a === 'function' ? a : b) as Listener
    const options = (typeof a === 'object' && a !== null ? a : {}) as {
      interval?: number
      persistent?: boolean
    }
    const p = pathArg(path)
    let entry = polled.get(p)
    if (!entry) {
      const listeners = new Set<Listener>()
      // The state the first change is compared with is the one when watching starts.
      let previous: Stats | undefined = statSync
        ? (() => {
            try {
              return statSync(p) ?? zeroStats()
            } catch {
              return zeroStats()
            }
          })()
        : undefined
      let busy = false
      const stat = promises.stat as (p: string) => Promise<Stats>
      const poll = async () => {
        if (busy) return
        busy = true
        try {
          const current = await stat(p).catch(() => zeroStats())
          if (previous && changed(previous, current))
            for (const l of [...listeners]) l(current, previous)
          previous = current
        } finally {
          busy = false
        }
      }
      if (!previous) void poll()
      const timer = setInterval(() => void poll(), options.interval ?? 5007)
      if (options.persistent === false) timer.unref()
      entry = { timer, listeners }
      polled.set(p, entry)
    }
    entry.listeners.add(listener)
    return entry
  }
  const unwatchFile = (path: unknown, listener?: Listener) => {
    const p = pathArg(path)
    const entry = polled.get(p)
    if (!entry) return
    if (listener) entry.listeners.delete(listener)
    else entry.listeners.clear()
    if (entry.listeners.size === 0) {
      clearInterval(entry.timer)
      polled.delete(p)
    }
  }
  return { watch, watchFile, unwatchFile }
}

const changed = (a: Stats, b: Stats) =>
  a.mtimeMs !== b.mtimeMs || a.ctimeMs !== b.ctimeMs || a.size !== b.size || a.ino !== b.ino

/** What Node reports for a missing file in watchFile: every field zero. */
function zeroStats(): Stats {
  const zero = Object.create(Stats.prototype) as Record<string, unknown>
  for (const key of [
    'dev',
    'ino',
    'mode',
    'nlink',
    'uid',
    'gid',
    'rdev',
    'size',
    'blksize',
    'blocks',
  ])
    zero[key] = 0
  for (const t of ['atime', 'mtime', 'ctime', 'birthtime']) {
    zero[`${t}Ms`] = 0
    zero[`${t}Ns`] = 0n
    zero[t] = new Date(0)
  }
  return zero as unknown as Stats
}
