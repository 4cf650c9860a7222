import { FsError, normalizePath, type Queryable, ROOT_INO } from '@agentfs/core'
import { pathOf } from './mutate.js'
import type { CompiledPolicy, FsOperation } from './policy.js'
import { lookup } from './resolver.js'
import type { Dirent } from './stats.js'
import type { FileSystem } from './types.js'

/** A path as the policy sees it. */
interface Resolved {
  readonly path: string
  readonly exists: boolean
}

/**
 * Applies a {@link CompiledPolicy} to one filesystem: resolves paths the way the operations
 * will (symlinks, `..`), checks them, and filters listings. `unchecked` is the same filesystem
 * without the policy, for the gate's own look-ups.
 */
export class PolicyGate {
  constructor(
    readonly policy: CompiledPolicy,
    readonly q: Queryable,
    readonly unchecked: FileSystem,
  ) {}

  /**
   * Where `path` really is: symlinks and `..` resolved (the last component too when `follow`);
   * a missing last component is its parent's real path plus the name.
   */
  async real(path: string, follow: boolean, syscall: string): Promise<Resolved> {
    try {
      const found = await lookup(this.q, path, { followLast: follow, syscall, allowMissing: true })
      if (found.name === undefined) return { path: '/', exists: true }
      const dir = found.dirIno === ROOT_INO ? '' : await pathOf(this.q, found.dirIno)
      return { path: `${dir}/${found.name}`, exists: found.node !== undefined }
    } catch (error) {
      // The operation itself will fail on this path (ENOENT, ELOOP, …); judge it lexically.
      if (error instanceof FsError) return { path: normalizePath(path, syscall), exists: false }
      throw error
    }
  }

  /** Refuses reading `path` unless the policy allows it; returns the real path. */
  async read(path: string, syscall: string, follow = true): Promise<string> {
    const real = (await this.real(path, follow, syscall)).path
    this.policy.checkRead(real, syscall, path)
    return real
  }

  /** Refuses a change the policy forbids; `create` names the operation when `path` is new. */
  async write(
    path: string,
    syscall: string,
    operation: FsOperation,
    options: { follow?: boolean; replaces?: boolean; create?: FsOperation } = {},
  ): Promise<void> {
    const real = await this.real(path, options.follow ?? true, syscall)
    const op = !real.exists && options.create ? options.create : operation
    const replaces = options.replaces === true && real.exists
    this.policy.checkWrite(real.path, op, syscall, path, replaces)
    // Deleting or moving a directory takes everything under it along.
    if (replaces && (operation === 'delete' || operation === 'rename')) {
      const stats = await this.unchecked.lstat(path).catch(() => undefined)
      if (stats?.isDirectory())
        for (const rel of await this.unchecked.readdir(path, { recursive: true }))
          this.policy.checkWrite(`${real.path}/${rel}`, operation, syscall, path, true)
    }
  }

  /** `entries` of the directory `path` (really at `real`) that may be read. */
  readableEntries<T extends string | Dirent>(path: string, real: string, entries: T[]): T[] {
    const prefix = real === '/' ? '' : real
    const base = normalizePath(path)
    return entries.filter((e) => {
      if (typeof e === 'string') return this.policy.readable(`${prefix}/${e}`)
      const rel = e.parentPath.slice(base.length).replace(/^\//, '')
      return this.policy.readable(`${prefix}/${rel ? `${rel}/` : ''}${e.name}`)
    })
  }

  /** The items whose `path` (absolute, links followed) may be read; one check per distinct path. */
  async readablePaths<T extends { path: string }>(items: T[], syscall: string): Promise<T[]> {
    const readable = new Map<string, boolean>()
    const out: T[] = []
    for (const item of items) {
      let ok = readable.get(item.path)
      if (ok === undefined) {
        ok = this.policy.readable((await this.real(item.path, true, syscall)).path)
        readable.set(item.path, ok)
      }
      if (ok) out.push(item)
    }
    return out
  }
}
