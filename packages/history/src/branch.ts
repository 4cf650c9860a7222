import {
  type AgentDatabase,
  AgentFsError,
  appendChange,
  type Executor,
  hashChunks,
  lastChange,
  placeholders,
  withMessage,
} from '@agentfs/core'
import { createFileSystem, type SqlFileSystem } from '@agentfs/fs'
import {
  type CommitResult,
  createOverlay,
  type OverlayChange,
  type OverlayFs,
} from '@agentfs/overlay'
import type { History, SnapshotInfo } from './history.js'
import { writeChunks } from './restore.js'
import { INODE_COLUMNS, isRegMode, liveInode, type SnapInode, visibleAt } from './rows.js'

/**
 * Writes the tree of snapshot `id` (inodes with their numbers, entries, link targets, chunks)
 * into `target`, a fresh database with the same chunk size. Time and space: the snapshot's size.
 */
export async function materialize(q: Executor, id: number, target: AgentDatabase): Promise<void> {
  const inodes = await q.execute<SnapInode>({
    sql: `SELECT ino, ${INODE_COLUMNS.join(', ')}, target, chunks FROM agentfs_snap_inode s WHERE ${visibleAt('s')} ORDER BY s.ino`,
    params: [id, id],
  })
  const entries = await q.execute<{ parent_ino: number; name: string; ino: number }>({
    sql: `SELECT parent_ino, name, ino FROM agentfs_snap_dentry d WHERE ${visibleAt('d')} ORDER BY d.parent_ino, d.name`,
    params: [id, id],
  })
  // A live inode that still holds exactly the snapshot's state (a restore moved only its ctime)
  // lends the base its version token: a branch commit then sees it unchanged, not a conflict.
  const tokens = new Map<number, { ctime: number; ctime_nsec: number }>()
  for (const row of inodes.rows) {
    const live = await liveInode(q, row.ino)
    if (!live || (live.ctime === row.ctime && live.ctime_nsec === row.ctime_nsec)) continue
    const same =
      live.mode === row.mode &&
      live.uid === row.uid &&
      live.gid === row.gid &&
      live.size === row.size &&
      live.mtime === row.mtime &&
      live.mtime_nsec === row.mtime_nsec &&
      live.target === row.target &&
      (!isRegMode(row.mode) ||
        Buffer.compare(
          await hashChunks(q, row.ino, live.size, target.chunks),
          row.chunks ?? new Uint8Array(0),
        ) === 0)
    if (same) tokens.set(row.ino, { ctime: live.ctime, ctime_nsec: live.ctime_nsec })
  }
  await target.transaction(async (tx) => {
    for (const snap of inodes.rows) {
      const row = { ...snap, ...tokens.get(snap.ino) }
      await tx.execute({
        sql: `INSERT INTO fs_inode (ino, ${INODE_COLUMNS.join(', ')}) VALUES (?, ${placeholders(INODE_COLUMNS.length)})
ON CONFLICT(ino) DO UPDATE SET ${INODE_COLUMNS.map((c) => `${c} = excluded.${c}`).join(', ')}`,
        params: [row.ino, ...INODE_COLUMNS.map((c) => row[c])],
      })
      if (row.target !== null)
        await tx.execute({
          sql: 'INSERT INTO fs_symlink (ino, target) VALUES (?, ?)',
          params: [row.ino, row.target],
        })
      if (isRegMode(row.mode)) await writeChunks(q, tx, row.ino, row.chunks, target.chunks)
    }
    for (const e of entries.rows)
      await tx.execute({
        sql: 'INSERT INTO fs_dentry (name, parent_ino, ino) VALUES (?, ?, ?)',
        params: [e.name, e.parent_ino, e.ino],
      })
  })
}

/**
 * The tree of snapshot `name` as a read-only-in-spirit filesystem in `target` (a fresh database
 * with the same chunk size): the base of a branch. Time and space: the snapshot's size.
 */
export async function snapshotBase(
  q: Executor,
  history: History,
  name: string,
  target: AgentDatabase,
): Promise<SqlFileSystem> {
  const snapshot = await history.getSnapshot(name)
  if (!snapshot) throw noSnapshot(name)
  await history.checkExpansion(q, snapshot.id, name)
  await materialize(q, snapshot.id, target)
  return createFileSystem(target, { feed: { enabled: false } })
}

const noSnapshot = (name: string) =>
  new AgentFsError(
    'INVALID_ARGUMENT',
    `there is no snapshot named '${name}'; history.listSnapshots() lists the snapshots there are`,
  )

/**
 * A writable view of a snapshot: an overlay whose base is the snapshot's tree. Its changes can
 * be reviewed (`diff`), applied to the live tree (`commit`, refused on conflicts exactly like an
 * overlay commit: a path the branch changed that the live tree also changed since the
 * snapshot), or dropped (`discard`).
 */
export class Branch {
  readonly #history: History
  readonly #live: SqlFileSystem
  readonly #close: () => Promise<void>

  private constructor(
    readonly fs: OverlayFs,
    readonly snapshot: SnapshotInfo,
    history: History,
    live: SqlFileSystem,
    close: () => Promise<void>,
  ) {
    this.#history = history
    this.#live = live
    this.#close = close
  }

  /**
   * Opens a branch of snapshot `name`. `base` and `delta` are fresh in-memory databases that
   * `close()` closes: the snapshot's tree is written to `base`, changes go to `delta`.
   */
  static async open(options: {
    history: History
    live: SqlFileSystem
    q: Executor
    name: string
    base: AgentDatabase
    delta: AgentDatabase
  }): Promise<Branch> {
    const snapshot = await options.history.getSnapshot(options.name)
    if (!snapshot) throw noSnapshot(options.name)
    const fs = await createOverlay({
      base: await snapshotBase(options.q, options.history, options.name, options.base),
      delta: createFileSystem(options.delta, { feed: { enabled: false } }),
      // The snapshot is the ancestor of every file the branch copies up.
      ancestors: false,
    })
    const close = async () => {
      await options.delta.close()
      await options.base.close()
    }
    return new Branch(fs, snapshot, options.history, options.live, close)
  }

  /** What the branch changed relative to its snapshot. */
  diff(): Promise<OverlayChange[]> {
    return this.fs.diff()
  }

  /**
   * Applies the branch's changes to the live tree in one transaction (all or nothing, also
   * when the process dies midway), after an automatic snapshot (so `restore(before.name)`
   * undoes the commit). Nothing is applied on a conflict.
   */
  async commit(
    options: { merge?: boolean } = {},
  ): Promise<CommitResult & { before: SnapshotInfo }> {
    return commitOnto(this.fs, this.#live, this.#history, this.snapshot.name, options)
  }

  /**
   * Marks `path` resolved against the live tree's current version: after writing the
   * resolution of a merge conflict in the branch, the next commit applies it (see
   * `OverlayFs.resolve`).
   */
  resolve(path: string): Promise<void> {
    return this.fs.resolve(path, this.#live)
  }

  /** Drops the branch's changes. */
  discard(): Promise<void> {
    return this.fs.discard()
  }

  /** Closes the branch's databases. */
  close(): Promise<void> {
    return this.#close()
  }
}

/**
 * Applies a branch (an overlay over snapshot `snapshot` of the live database) onto the live tree
 * in one transaction, after an automatic snapshot of the live state (returned as `before`;
 * `restore(before.name)` undoes the commit), with a `commit` row in the change feed. Refused
 * with `OverlayConflictError`, nothing applied, when a path the branch changed was changed live
 * since the snapshot — unless `merge`: then a text file both changed is merged line by line with
 * the snapshot's content as the common ancestor (`MergeConflictError`, nothing applied, where
 * both changed the same lines; see `CommitOptions.merge`), and the `commit` row's message names
 * both parents and the merged files.
 */
export async function commitOnto(
  branch: OverlayFs,
  live: SqlFileSystem,
  history: History,
  snapshot: string,
  options: { merge?: boolean } = {},
): Promise<CommitResult & { before: SnapshotInfo }> {
  const before = await history.snapshot(undefined, {
    kind: 'auto',
    reason: `before commit of a branch of ${snapshot}`,
  })
  try {
    const result = await live.transaction(async (fs) => {
      // Into the database, not onto a host: a mode stays as the branch gave it (an export or
      // an overlay commit to a host drops special bits).
      const parent = await lastChange(fs.queryable)
      const applied = await branch.commit(fs, {
        keepSpecialBits: true,
        ...(options.merge
          ? {
              // The branch started from the snapshot: its tree is the common ancestor, unless a
              // conflict was resolved against a later live version (OverlayFs.resolve).
              merge: {
                ancestor: async (path: string) =>
                  (await branch.ancestor(path)) ??
                  (await branch.base.readFile(path).catch(() => undefined)),
              },
            }
          : {}),
      })
      const message = applied.merged?.length
        ? `merge of a branch of ${snapshot} onto change #${parent}: ${applied.merged.slice(0, 20).join(', ')}${applied.merged.length > 20 ? ` and ${applied.merged.length - 20} more` : ''}`
        : undefined
      const row = () =>
        appendChange(
          fs.queryable,
          { op: 'commit', path: '/', path2: snapshot },
          history.clock.now(),
          undefined,
        )
      await (message === undefined ? row() : withMessage(message, row))
      return applied
    })
    return { ...result, before }
  } catch (error) {
    // Nothing was applied (a conflict, a bad path): the snapshot would only be clutter.
    await history.deleteSnapshot(before.name).catch(() => undefined)
    throw error
  }
}
