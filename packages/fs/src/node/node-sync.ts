import { FsError } from '@agentfs/core'
import type { Dirent } from '../stats.js'
import { fdArg, pathArg } from './node-args.js'
import type { SyncBridge } from './node-fs.js'

type Fn = (...args: unknown[]) => unknown

/**
 * The `…Sync` calls of `toNodeFs`, run through `bridge`: paths are made plain here (so a bad
 * one throws at once, as Node's do), descriptor reads and writes copy into and out of the
 * caller's buffer, `opendirSync` lists the directory in one call. Without a bridge every call
 * fails with ENOSYS, saying what to use instead.
 */
export function syncApi(
  bridge: SyncBridge | undefined,
  onePath: readonly string[],
  twoPaths: readonly string[],
  noSync?: string,
): Record<string, Fn> {
  const call = (name: string, args: readonly unknown[]): unknown => {
    if (!bridge)
      throw new FsError({
        code: 'ENOSYS',
        syscall: name.replace(/^fd\./, ''),
        hint: `${name.replace(/^fd\./, '')}Sync needs a synchronous bridge: ${noSync ?? 'use agent.nodeFs() of @agentfs/sdk on a database file'}; or use the promise or callback form`,
      })
    // Descriptors are checked as Node checks them, before they are looked up.
    return bridge.call(
      name,
      name.startsWith('fd.') && name !== 'fd.open' ? [fdArg(args[0]), ...args.slice(1)] : args,
    )
  }
  const api: Record<string, Fn> = {}
  for (const name of onePath)
    api[`${name}Sync`] = (path, ...rest) => call(name, [pathArg(path), ...rest])
  for (const name of twoPaths)
    api[`${name}Sync`] = (a, b, ...rest) =>
      call(name, [
        name === 'symlink' && typeof a === 'string' ? a : pathArg(a, 'src'),
        pathArg(b, 'dest'),
        ...rest,
      ])
  api.existsSync = (path) => {
    let p: string
    try {
      p = pathArg(path)
    } catch {
      return false
    }
    return call('exists', [p]) as boolean
  }
  api.openSync = (path, flags, mode) => call('fd.open', [pathArg(path), flags ?? 'r', mode])
  api.closeSync = (fd) => call('fd.close', [fd])
  api.fstatSync = (fd) => call('fd.fstat', [fd])
  api.ftruncateSync = (fd, len) => call('fd.ftruncate', [fd, len ?? 0])
  api.fsyncSync = (fd) => call('fd.fsync', [fd])
  api.fdatasyncSync = (fd) => call('fd.fdatasync', [fd])
  api.fchmodSync = (fd, mode) => call('fd.fchmod', [fd, mode])
  api.fchownSync = (fd, uid, gid) => call('fd.fchown', [fd, uid, gid])
  api.futimesSync = (fd, atime, mtime) => call('fd.futimes', [fd, atime, mtime])
  api.readSync = (fd, buffer, a, b, c) => {
    const target = buffer as Uint8Array
    const o = range(a, b, c)
    const offset = o.offset ?? 0
    const length = o.length ?? target.byteLength - offset
    const data = call('fd.read', [fd, length, o.position ?? null]) as Uint8Array
    target.set(data, offset)
    return data.byteLength
  }
  api.writeSync = (fd, data, a, b, c) => {
    if (typeof data === 'string') return call('fd.write', [fd, data, a ?? null, b ?? 'utf8'])
    const bytes = data as Uint8Array
    const o = range(a, b, c)
    const offset = o.offset ?? 0
    const slice = bytes.subarray(offset, offset + (o.length ?? bytes.byteLength - offset))
    return call('fd.write', [fd, slice, o.position ?? null])
  }
  api.mkdtempDisposableSync = (prefix) => {
    const path = call('mkdtemp', [pathArg(prefix, 'prefix')]) as string
    const remove = () => {
      call('rm', [path, { recursive: true, force: true }])
    }
    return { path, remove, [Symbol.dispose]: remove }
  }
  api.opendirSync = (path) => {
    const p = pathArg(path)
    return listedDir(p, call('readdir', [p, { withFileTypes: true }]) as Dirent[])
  }
  return api
}

/** `readSync`/`writeSync`'s `(offset, length, position)` or `{ offset, length, position }`. */
function range(
  a: unknown,
  b: unknown,
  c: unknown,
): {
  offset?: number | undefined
  length?: number | undefined
  position?: number | null | undefined
} {
  if (a !== null && typeof a === 'object')
    return a as { offset?: number; length?: number; position?: number | null }
  return {
    offset: a as number | undefined,
    length: b as number | undefined,
    position: c as number | null | undefined,
  }
}

/** A `fs.Dir` over entries listed at once (`opendirSync`): read, readSync, close, iteration. */
function listedDir(path: string, entries: Dirent[]) {
  let closed = false
  let next = 0
  const check = () => {
    if (closed) {
      const error = new Error('Directory handle was closed') as Error & { code: string }
      error.code = 'ERR_DIR_CLOSED'
      throw error
    }
  }
  const readSync = (): Dirent | null => {
    check()
    return entries[next++] ?? null
  }
  return {
    path,
    readSync,
    read: async () => readSync(),
    closeSync: () => {
      check()
      closed = true
    },
    close: async () => {
      check()
      closed = true
    },
    *[Symbol.iterator]() {
      for (let e = readSync(); e; e = readSync()) yield e
      closed = true
    },
    async *[Symbol.asyncIterator]() {
      for (let e = readSync(); e; e = readSync()) yield e
      closed = true
    },
  }
}
