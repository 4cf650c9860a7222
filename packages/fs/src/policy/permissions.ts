import {
  fsError,
  type PathSteps,
  parsePath,
  type Queryable,
  ROOT_INO,
  resolvePath,
} from '@agentfs/core'
import type { OpenMode } from '../sql/flags.js'
import { INODE_COLUMNS, type InodeRow, inodeColumnsOf, isDir, isLnk } from '../storage/inode.js'
import type { FsOperation } from './policy.js'
import type { WriteCheck } from './policy-gate.js'

/** Who calls, for `permissions: 'enforce'`: the owner of new inodes is also the caller. */
export interface Caller {
  readonly uid: number
  readonly gid: number
  /** Supplementary groups. */
  readonly groups: readonly number[]
}

const R = 4
const W = 2
const X = 1
const STICKY = 0o1000
/** Calls that read what the path names (not only reach it), so need r on it. */
const READS = new Set(['open', 'scandir', 'opendir', 'copyfile', 'watch', 'grep', 'glob', 'search'])

/** Whether `caller` may do `want` (R/W/X bits) on `node`, as the kernel decides. */
export function permits(caller: Caller, node: InodeRow, want: number): boolean {
  if (caller.uid === 0) {
    // Root reads and writes anything; it executes a file only when some x bit is set.
    if (!(want & X) || isDir(node.mode)) return true
    return (node.mode & 0o111) !== 0
  }
  const mode = node.mode
  const bits =
    caller.uid === node.uid
      ? (mode >> 6) & 7
      : caller.gid === node.gid || caller.groups.includes(node.gid)
        ? (mode >> 3) & 7
        : mode & 7
  return (bits & want) === want
}

async function row(q: Queryable, sql: string, params: unknown[]): Promise<InodeRow | undefined> {
  const { rows } = await q.execute<InodeRow>({ sql, params: params as never })
  return rows[0]
}

const BY_INO = `SELECT ${INODE_COLUMNS} FROM fs_inode WHERE ino = ?`
const CHILD = `SELECT ${inodeColumnsOf('i')} FROM fs_dentry d JOIN fs_inode i ON i.ino = d.ino WHERE d.parent_ino = ? AND d.name = ?`
const PARENT = 'SELECT parent_ino FROM fs_dentry WHERE ino = ? LIMIT 1'

interface Found {
  /** The directory holding the last component. */
  readonly dir: InodeRow
  readonly node: InodeRow | undefined
}

/**
 * Mode bits checked against a caller, as the kernel checks them (`permissions: 'enforce'`):
 * search (x) on every directory a path walks through — link targets included —, read or write
 * on the file, write and search on the directory whose entries change, the sticky bit, owner-only
 * chmod and utimes, root-only chown. Refusals are EACCES (EPERM for chmod, chown, utimes and
 * the sticky bit). It runs in the transaction of the change it guards, like the policy.
 */
export class PermissionGate {
  constructor(
    readonly caller: Caller,
    readonly q: Queryable,
  ) {}

  /** Resolves `path` checking x on each directory searched; the last component as asked. */
  async #walk(path: string, syscall: string, follow: boolean): Promise<Found> {
    const { q, caller } = this
    const deny = () => fsError('EACCES', syscall, path)
    const steps: PathSteps<InodeRow, InodeRow> = {
      root: async () => (await row(q, BY_INO, [ROOT_INO]))!,
      async step(dir, names) {
        if (!permits(caller, dir, X)) throw deny()
        const entry = await row(q, CHILD, [dir.ino, names[0]])
        return { found: entry ? 1 : 0, entry, dir, exhausted: entry === undefined }
      },
      isDirectory: (e) => isDir(e.mode),
      isSymbolicLink: (e) => isLnk(e.mode),
      async readlink(_dir, _name, e) {
        const { rows } = await q.execute<{ target: string }>({
          sql: 'SELECT target FROM fs_symlink WHERE ino = ?',
          params: [e.ino],
        })
        return rows[0]?.target ?? ''
      },
      enter: (_dir, _name, e) => e,
      async parent(dir) {
        if (!permits(caller, dir, X)) throw deny()
        if (dir.ino === ROOT_INO) return dir
        const { rows } = await q.execute<{ parent_ino: number }>({ sql: PARENT, params: [dir.ino] })
        return (await row(q, BY_INO, [rows[0]?.parent_ino ?? ROOT_INO]))!
      },
    }
    const r = await resolvePath(steps, parsePath(path, syscall), {
      followLast: follow,
      syscall,
      allowMissing: true,
    })
    if (r.name !== undefined) return { dir: r.dir, node: r.entry }
    // The path is a directory reached as a whole (`/`, `..`, a link to one).
    return { dir: r.dir, node: r.dir }
  }

  #need(ok: boolean, syscall: string, path: string, code: 'EACCES' | 'EPERM' = 'EACCES') {
    if (!ok) throw fsError(code, syscall, path)
  }

  /** Entries of `dir` may be added or removed: w and x on it. */
  #changesEntries(found: Found, syscall: string, path: string) {
    this.#need(permits(this.caller, found.dir, W | X), syscall, path)
  }

  /** The sticky bit: only the entry's owner, the directory's owner or root removes an entry. */
  #sticky(found: Found, syscall: string, path: string) {
    const { caller } = this
    if (!(found.dir.mode & STICKY) || !found.node || caller.uid === 0) return
    this.#need(
      caller.uid === found.node.uid || caller.uid === found.dir.uid,
      syscall,
      path,
      'EPERM',
    )
  }

  /** A read of `path`: search on the way; read on what `syscall` reads (a file, a directory). */
  async read(path: string, syscall: string, follow = true): Promise<void> {
    const found = await this.#walk(path, syscall, follow)
    if (READS.has(syscall) && found.node)
      this.#need(permits(this.caller, found.node, R), syscall, path)
  }

  /** `access(path, mode)`: R_OK/W_OK/X_OK against the caller. */
  async access(path: string, mode: number): Promise<void> {
    const found = await this.#walk(path, 'access', true)
    if (found.node && mode & 7)
      this.#need(permits(this.caller, found.node, mode & 7), 'access', path)
  }

  /** A change of `path`, by its operation (see {@link FsOperation}). */
  async write(path: string, syscall: string, operation: FsOperation, check: WriteCheck = {}) {
    const found = await this.#walk(path, syscall, check.follow !== false)
    const { caller } = this
    const node = found.node
    switch (operation) {
      case 'write':
        if (node) this.#need(permits(caller, node, W), syscall, path)
        else this.#changesEntries(found, syscall, path)
        return
      case 'create':
      case 'symlink':
      case 'link':
        if (!node) this.#changesEntries(found, syscall, path)
        return
      case 'delete':
      case 'rename':
        if (!node && operation === 'delete') return
        this.#changesEntries(found, syscall, path)
        this.#sticky(found, syscall, path)
        if (operation === 'delete' && node && isDir(node.mode))
          await this.#tree(node, syscall, path)
        return
      case 'chmod':
      case 'utimes':
        if (node) this.#need(caller.uid === 0 || caller.uid === node.uid, syscall, path, 'EPERM')
        return
      case 'chown': {
        if (!node || caller.uid === 0) return
        // The owner may only give the file to one of its own groups, keeping it.
        const uid = check.owner?.uid ?? -1
        const gid = check.owner?.gid ?? -1
        const keepsOwner = caller.uid === node.uid && (uid === -1 || uid === node.uid)
        const ownGroup =
          gid === -1 || gid === node.gid || gid === caller.gid || caller.groups.includes(gid)
        this.#need(keepsOwner && ownGroup, syscall, path, 'EPERM')
        return
      }
    }
  }

  /** A directory moved to another parent: its `..` changes, so it must be writable too. */
  async movesDirectory(from: string, to: string): Promise<void> {
    const source = await this.#walk(from, 'rename', false)
    if (!source.node || !isDir(source.node.mode)) return
    const target = await this.#walk(to, 'rename', false)
    if (source.dir.ino !== target.dir.ino)
      this.#need(permits(this.caller, source.node, W), 'rename', from)
  }

  /**
   * Removing a directory with what is in it (`rm -r`, in one transaction): each directory that
   * is emptied needs r, w and x, and a sticky one only gives up entries the caller owns — all
   * checked before anything is removed.
   */
  async #tree(top: InodeRow, syscall: string, path: string): Promise<void> {
    const { rows } = await this.q.execute<InodeRow & { child_uid: number | null }>({
      sql: `WITH RECURSIVE sub(ino) AS (
        SELECT ? UNION
        SELECT d.ino FROM fs_dentry d JOIN sub ON d.parent_ino = sub.ino
        JOIN fs_inode i ON i.ino = d.ino WHERE (i.mode & 61440) = 16384)
      SELECT ${inodeColumnsOf('p')}, c.uid AS child_uid
      FROM sub JOIN fs_inode p ON p.ino = sub.ino
      JOIN fs_dentry d ON d.parent_ino = p.ino JOIN fs_inode c ON c.ino = d.ino`,
      params: [top.ino],
    })
    const { caller } = this
    for (const dir of rows) {
      this.#need(permits(caller, dir, R | W | X), syscall, path)
      if (dir.mode & STICKY && caller.uid !== 0 && caller.uid !== dir.uid)
        this.#need(dir.child_uid === caller.uid, syscall, path, 'EPERM')
    }
  }

  /** `open(path, flags)`: read and write as the flags ask; creating needs the directory. */
  async open(path: string, want: OpenMode): Promise<void> {
    const found = await this.#walk(path, 'open', true)
    if (!found.node) {
      if (want.create) this.#changesEntries(found, 'open', path)
      return
    }
    const bits = (want.read ? R : 0) | (want.write || want.truncate || want.append ? W : 0)
    this.#need(permits(this.caller, found.node, bits), 'open', path)
  }
}
