import {
  fsError,
  isFsError,
  normalizePath,
  parsePath,
  type Queryable,
  ROOT_INO,
} from '@agentfs/core'
import type { Dirent } from '../stats.js'
import { type InodeRow, isDir } from '../storage/inode.js'
import { pathOf } from '../storage/mutate.js'
import { lookup } from '../storage/resolver.js'
import type { FileSystem } from '../types.js'
import type { PermissionGate } from './permissions.js'
import type { CompiledPolicy, FsOperation } from './policy.js'

/** A path as the policy sees it. */
interface Resolved {
  readonly path: string
  readonly exists: boolean
  /** The entry there, when it exists. */
  readonly node?: InodeRow
}

/** Options of {@link PolicyGate.write}. */
export interface WriteCheck {
  /** Follow a symlink in the last component (default true). */
  readonly follow?: boolean
  /** The change removes or replaces an existing entry (delete, rename, overwrite by rename). */
  readonly replaces?: boolean
  /** The operation to check instead when the path does not exist yet. */
  readonly create?: FsOperation
  /**
   * Whether the change destroys content of the existing entry (an overwrite, a truncate to a
   * shorter length): `deny: ['delete']` refuses that too.
   */
  readonly destroys?: (node: InodeRow) => boolean
  /** For chown: the new owner and group (-1 keeps one), which decide who may change them. */
  readonly owner?: { readonly uid: number; readonly gid: number }
}

/** Operations that change an inode's content or metadata, seen through every name it has. */
const INODE_OPERATIONS: ReadonlySet<FsOperation> = new Set(['write', 'chmod', 'chown', 'utimes'])

/** Most names of one inode the gate checks before refusing a change as too ambiguous. */
const MAX_NAMES = 1000

/**
 * Applies a {@link CompiledPolicy} to one filesystem: resolves paths the way the operations
 * will (symlinks, `..`), checks them, and filters listings. It runs on the transaction of the
 * change it guards (see `SqlFileSystem`), so nothing can change between the check and the change.
 * `unchecked` is the same filesystem without the policy, for the gate's own look-ups.
 */
export class PolicyGate {
  constructor(
    /** The policy; undefined when only permissions are enforced. */
    readonly policy: CompiledPolicy | undefined,
    readonly q: Queryable,
    readonly unchecked: FileSystem,
    /** Mode bits against the caller, with `permissions: 'enforce'` (checked first). */
    readonly permissions?: PermissionGate,
  ) {}

  /** The absolute path of directory `ino`. */
  async #dirPath(ino: number): Promise<string> {
    return ino === ROOT_INO ? '' : pathOf(this.q, ino)
  }

  /**
   * Where `path` really is: symlinks and `..` resolved (the last component too when `follow`).
   * Missing components are appended to the real path of the deepest existing ancestor, itself
   * resolved through links, so `mkdir -p link/x/y` is judged where it will land.
   */
  async real(path: string, follow: boolean, syscall: string): Promise<Resolved> {
    try {
      const found = await lookup(this.q, path, { followLast: follow, syscall, allowMissing: true })
      if (found.name === undefined) return { path: '/', exists: true, ...nodeOf(found.node) }
      const dir = await this.#dirPath(found.dirIno)
      return {
        path: `${dir}/${found.name}`,
        exists: found.node !== undefined,
        ...nodeOf(found.node),
      }
    } catch (error) {
      if (!isFsError(error)) throw error
      // Two or more components are missing (or the path is broken): judge it where it lands.
      return { path: await this.#deepest(path, syscall), exists: false }
    }
  }

  /** The real path of the deepest existing ancestor of `path`, plus the missing rest. */
  async #deepest(path: string, syscall: string, pass = 0): Promise<string> {
    const parts = parsePath(path, syscall).parts
    for (let k = parts.length - 1; k >= 0; k--) {
      const prefix = `/${parts.slice(0, k).join('/')}`
      const found = await lookup(this.q, prefix, { followLast: true, syscall }).catch(
        (error: unknown) => {
          if (isFsError(error)) return undefined
          throw error
        },
      )
      if (!found?.node) continue
      // A non-directory ancestor: the operation fails with ENOTDIR; judge the text.
      if (!isDir(found.node.mode)) return normalizePath(path, syscall)
      const base = await this.#dirPath(found.node.ino)
      const rest = parts.slice(k)
      const joined = normalizePath(`${base}/${rest.join('/')}`, syscall)
      // The rest does not exist, so its `..` steps are lexical once the names are created; but
      // after a `..` the path may re-enter existing entries (links): resolve once more.
      if (!rest.includes('..') || pass > 0) return joined
      return this.#deepest(joined, syscall, pass + 1)
    }
    return normalizePath(path, syscall)
  }

  /** Refuses reading `path` unless the policy allows it; returns the real path. */
  async read(path: string, syscall: string, follow = true): Promise<string> {
    await this.permissions?.read(path, syscall, follow)
    if (!this.policy) return path
    const real = (await this.real(path, follow, syscall)).path
    this.policy.checkRead(real, syscall, path)
    return real
  }

  /** `access(path, mode)`'s R_OK/W_OK/X_OK, when permissions are enforced. */
  async access(path: string, mode: number): Promise<void> {
    await this.permissions?.access(path, mode)
  }

  /** Refuses a change the policy forbids; `create` names the operation when `path` is new. */
  async write(
    path: string,
    syscall: string,
    operation: FsOperation,
    options: WriteCheck = {},
  ): Promise<void> {
    await this.permissions?.write(path, syscall, operation, options)
    if (!this.policy) return
    const policy = this.policy
    const real = await this.real(path, options.follow ?? true, syscall)
    const op = !real.exists && options.create ? options.create : operation
    const replaces = options.replaces === true && real.exists
    policy.checkWrite(real.path, op, syscall, path, replaces)
    const node = real.node
    if (node && op !== 'delete' && policy.denies('delete')) {
      if (replaces || options.destroys?.(node))
        throw fsError('EPERM', syscall, path, {
          hint: `the policy denies delete, and this change would destroy the existing content of ${real.path}`,
        })
    }
    // A change to an inode shows through every name it has: each must allow it.
    if (node && !isDir(node.mode) && node.nlink > 1 && INODE_OPERATIONS.has(op))
      await this.#checkEveryName(node.ino, op, syscall, path)
    // Deleting or moving a directory takes everything under it along.
    if (replaces && (operation === 'delete' || operation === 'rename')) {
      const stats = await this.unchecked.lstat(path).catch(() => undefined)
      if (stats?.isDirectory())
        for (const rel of await this.unchecked.readdir(path, { recursive: true }))
          policy.checkWrite(`${real.path}/${rel}`, operation, syscall, path, true)
    }
  }

  async #checkEveryName(ino: number, op: FsOperation, syscall: string, path: string) {
    const { rows } = await this.q.execute<{ parent_ino: number; name: string }>({
      sql: 'SELECT parent_ino, name FROM fs_dentry WHERE ino = (SELECT ?) LIMIT (SELECT ?)',
      params: [ino, MAX_NAMES + 1],
    })
    if (rows.length > MAX_NAMES)
      throw fsError('EPERM', syscall, path, {
        hint: `the file has more than ${MAX_NAMES} names; the policy cannot check them all`,
      })
    for (const row of rows)
      this.policy!.checkWrite(
        `${await this.#dirPath(row.parent_ino)}/${row.name}`,
        op,
        syscall,
        path,
      )
  }

  /**
   * Refuses linking to `existing` unless the policy would let the caller change it: a new name
   * must not become a way to write a file the policy protects (like Linux's protected_hardlinks).
   */
  async link(existing: string, syscall: string): Promise<void> {
    await this.permissions?.read(existing, syscall, false)
    if (!this.policy) return
    const real = await this.real(existing, false, syscall)
    this.policy.checkRead(real.path, syscall, existing)
    if (real.exists) this.policy.checkWrite(real.path, 'write', syscall, existing)
  }

  /** Whether a name inside directory `real` may be listed. */
  listable(real: string, name: string): boolean {
    if (!this.policy) return true
    return this.policy.readable(`${real === '/' ? '' : real}/${name}`)
  }

  /** `entries` of the directory `path` (really at `real`) that may be read. */
  readableEntries<T extends string | Dirent>(path: string, real: string, entries: T[]): T[] {
    const policy = this.policy
    if (!policy) return entries
    const prefix = real === '/' ? '' : real
    const base = normalizePath(path)
    return entries.filter((e) => {
      if (typeof e === 'string') return policy.readable(`${prefix}/${e}`)
      const rel = e.parentPath.slice(base.length).replace(/^\//, '')
      return policy.readable(`${prefix}/${rel ? `${rel}/` : ''}${e.name}`)
    })
  }

  /**
   * Whether the caller's mode bits let it list the directory `path` was found in (a search
   * walked it) and, following, read what `path` leads to (grep reads it).
   */
  async #readableByMode(path: string, follow: boolean): Promise<boolean> {
    if (!this.permissions) return true
    try {
      const slash = path.lastIndexOf('/')
      await this.permissions.read(path.slice(0, slash) || '/', 'scandir', true)
      if (follow) await this.permissions.read(path, 'open', true)
      return true
    } catch (error) {
      if (isFsError(error, 'EACCES')) return false
      throw error
    }
  }

  /**
   * The items whose `path` (absolute) may be read: with `follow`, where the path leads (content
   * read through a link); without, the entry itself (a listing). One check per distinct path.
   */
  async readablePaths<T extends { path: string }>(
    items: T[],
    syscall: string,
    follow = true,
  ): Promise<T[]> {
    const readable = new Map<string, boolean>()
    const out: T[] = []
    for (const item of items) {
      let ok = readable.get(item.path)
      if (ok === undefined) {
        ok = await this.#readableByMode(item.path, follow)
        if (ok && this.policy)
          ok = this.policy.readable((await this.real(item.path, follow, syscall)).path)
        readable.set(item.path, ok)
      }
      if (ok) out.push(item)
    }
    return out
  }
}

const nodeOf = (node: InodeRow | undefined) => (node ? { node } : {})
