import {
  AgentFsError,
  appendChange,
  type ChunkFormat,
  type Clock,
  checkExpansion,
  dropRefs,
  EXPANSION_LIMIT,
  type Executor,
  type ExpansionLimit,
  lastChange,
  micros,
  normalizePath,
  type Queryable,
} from '@agentfs/core'
import {
  advance,
  type Candidates,
  changedSince,
  noCandidates,
  readTip,
  writeTip,
} from './capture.js'
import { type DiffOptions, diffSnapshots, type SnapshotChange } from './diff.js'
import { readOverlayState, writeOverlayState } from './overlay-state.js'
import { applySnapshot } from './restore.js'
import { checkName } from './rows.js'
import { contentOf, resolveAt, walkAt } from './view.js'

/** A snapshot as listed. */
export interface SnapshotInfo {
  readonly id: number
  readonly name: string
  /** When it was taken, ms since the epoch. */
  readonly createdAt: number
  /** The change feed's sequence number when it was taken. */
  readonly seq: number
  /** `manual`, or `auto` for the ones taken before runs, commits and restores. */
  readonly kind: 'manual' | 'auto'
  readonly reason: string | null
}

/** Options of {@link History.snapshot}. */
export interface SnapshotOptions {
  readonly kind?: 'manual' | 'auto'
  /** Why it was taken (shown by `listSnapshots` and `agentfs snapshots`). */
  readonly reason?: string
  /**
   * Compare the whole tree instead of trusting the change feed for what changed. Needed only
   * when something wrote the database without recording changes (another implementation, or a
   * filesystem opened with the feed off).
   */
  readonly full?: boolean
}

interface SnapshotRow {
  id: number
  name: string
  created_us: number
  seq: number
  kind: 'manual' | 'auto'
  reason: string | null
  overlay: string | null
}

const toInfo = (r: SnapshotRow): SnapshotInfo => ({
  id: r.id,
  name: r.name,
  createdAt: Math.floor(r.created_us / 1000),
  seq: r.seq,
  kind: r.kind,
  reason: r.reason,
})

const SELECT = 'SELECT id, name, created_us, seq, kind, reason, overlay FROM agentfs_snapshot'

/** Thrown to roll back a transaction whose result is still wanted (`diff` against now). */
class Rollback<T> {
  constructor(readonly value: T) {}
}

/**
 * Snapshots of the whole database state (files and kv; the tool-call log is insert-only
 * already): each costs time and space in proportion to what changed since the previous one,
 * with file contents kept once per distinct chunk. Restore is one transaction and can itself be
 * undone (it snapshots first).
 */
export class History {
  readonly #q: Queryable
  readonly #clock: Clock
  readonly #chunks: ChunkFormat
  readonly #sessionId: string | undefined
  readonly #expansion: ExpansionLimit

  constructor(
    q: Queryable,
    options: {
      clock: Clock
      /** How the database stores `fs_data` chunks (`AgentDatabase.chunks`). */
      chunks: ChunkFormat
      sessionId?: string
      /**
       * What one snapshot may expand to on restore or branch (default `EXPANSION_LIMIT`: 100x
       * its distinct stored bytes, or 64 MiB); past it, TOO_BIG before any change.
       */
      expansion?: ExpansionLimit
    },
  ) {
    this.#q = q
    this.#clock = options.clock
    this.#chunks = options.chunks
    this.#sessionId = options.sessionId
    this.#expansion = options.expansion ?? EXPANSION_LIMIT
  }

  /** Refuses a snapshot that would expand past the limit (see `ExpansionLimit`). */
  checkExpansion(q: Executor, id: number, name: string): Promise<void> {
    return checkExpansion(q, id, name, this.#chunks.size, this.#expansion)
  }

  /** The clock changes are stamped with. */
  get clock(): Clock {
    return this.#clock
  }

  /** Records the whole state as snapshot `name` (default `snapshot-<id>`). */
  async snapshot(name?: string, options: SnapshotOptions = {}): Promise<SnapshotInfo> {
    if (name !== undefined) checkName(name)
    return this.#q.transaction((tx) => this.#take(tx, name, options))
  }

  async #take(tx: Queryable, name: string | undefined, options: SnapshotOptions) {
    refuseSynced(tx)
    if (name !== undefined && (await find(tx, name)))
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        `a snapshot named '${name}' exists; pick another name or delete it first`,
      )
    const now = this.#clock.now()
    const seq = await lastChange(tx)
    const { rows } = await tx.execute<{ id: number }>({
      sql: 'INSERT INTO agentfs_snapshot (name, created_us, seq, kind, reason, overlay) VALUES (?, ?, ?, ?, ?, ?) RETURNING id',
      params: [
        name ?? `\0pending-${seq}`,
        micros(now),
        seq,
        options.kind ?? 'manual',
        options.reason ?? null,
        await readOverlayState(tx),
      ],
    })
    const id = rows[0]!.id
    if (name === undefined)
      await tx.execute({
        sql: 'UPDATE agentfs_snapshot SET name = ? WHERE id = ?',
        params: [`snapshot-${id}`, id],
      })
    const tip = await readTip(tx)
    let candidates: Candidates | undefined
    if (tip && !options.full) candidates = await changedSince(tx, tip.seq)
    if (!candidates) {
      candidates = noCandidates()
      candidates.full = true
    }
    await advance(tx, id, this.#chunks, candidates)
    await writeTip(tx, { id, seq })
    return toInfo((await byId(tx, id))!)
  }

  /** Every snapshot, oldest first. */
  async listSnapshots(): Promise<SnapshotInfo[]> {
    const { rows } = await this.#q.execute<SnapshotRow>({ sql: `${SELECT} ORDER BY id` })
    return rows.map(toInfo)
  }

  /** One snapshot by name, or undefined. */
  async getSnapshot(name: string): Promise<SnapshotInfo | undefined> {
    const row = await find(this.#q, name)
    return row && toInfo(row)
  }

  /**
   * Deletes a snapshot and reclaims what only it kept: rows no remaining snapshot needs, and
   * chunks no row refers to. False when there was none of that name.
   */
  deleteSnapshot(name: string): Promise<boolean> {
    return this.#q.transaction(async (tx) => {
      const row = await find(tx, name)
      if (!row) return false
      await tx.execute({ sql: 'DELETE FROM agentfs_snapshot WHERE id = ?', params: [row.id] })
      await collect(tx)
      return true
    })
  }

  /**
   * Makes files and kv what snapshot `name` holds, in one transaction. A snapshot of the state
   * before is taken first (returned as `before`), so `restore(before.name)` undoes it; the
   * restore is itself a change in the feed.
   */
  restore(name: string): Promise<{ restored: SnapshotInfo; before: SnapshotInfo }> {
    return this.#q.transaction(async (tx) => {
      const target = await need(tx, name)
      await this.checkExpansion(tx, target.id, name)
      // Compared in full, not from the feed: a restore must be exact (and so must its undo)
      // even after writers that bypassed the feed.
      const before = await this.#take(tx, undefined, {
        kind: 'auto',
        reason: `before restore of ${name}`,
        full: true,
      })
      const now = this.#clock.now()
      const touched = await applySnapshot(tx, target.id, now, this.#chunks)
      await writeOverlayState(tx, target.overlay)
      await appendChange(tx, { op: 'restore', path: '/', path2: name }, now, this.#sessionId)
      // The open rows follow the live state again, from the next snapshot id on.
      await advance(tx, before.id + 1, this.#chunks, touched)
      await writeTip(tx, { id: before.id, seq: await lastChange(tx) })
      return { restored: toInfo(target), before }
    })
  }

  /**
   * What changed from snapshot `from` to snapshot `to` (default: now). Kinds per path, unified
   * diffs for text, then kv keys as `kv:<key>`.
   */
  async diff(from: string, to?: string, options: DiffOptions = {}): Promise<SnapshotChange[]> {
    const a = await need(this.#q, from)
    if (to !== undefined) return diffSnapshots(this.#q, a.id, (await need(this.#q, to)).id, options)
    // Against now: a snapshot taken and rolled back in one transaction.
    try {
      await this.#q.transaction(async (tx) => {
        const now = await this.#take(tx, undefined, { kind: 'auto' })
        throw new Rollback(await diffSnapshots(tx, a.id, now.id, options))
      })
    } catch (error) {
      if (error instanceof Rollback) return error.value as SnapshotChange[]
      throw error
    }
    throw new Error('unreachable')
  }

  /**
   * Every entry of snapshot `name` below `from` (default `/`), depth first in name order:
   * path, type, mode and size.
   */
  async *walk(
    name: string,
    from = '/',
  ): AsyncGenerator<{ path: string; type: SnapshotChange['type']; mode: number; size: number }> {
    const snap = await need(this.#q, name)
    for await (const { path, node } of walkAt(this.#q, snap.id, from)) {
      const type = node.mode & 0o170000
      yield {
        path,
        type:
          type === 0o100000
            ? 'file'
            : type === 0o040000
              ? 'directory'
              : type === 0o120000
                ? 'symlink'
                : 'other',
        mode: node.mode & 0o7777,
        size: node.size,
      }
    }
  }

  /** A file as snapshot `name` holds it. */
  readFile(path: string, options: { snapshot: string }): Promise<Buffer>
  readFile(path: string, options: { snapshot: string; encoding: BufferEncoding }): Promise<string>
  async readFile(
    path: string,
    options: { snapshot: string; encoding?: BufferEncoding },
  ): Promise<Buffer | string> {
    const target = normalizePath(path, 'open')
    const bytes = await this.#q.transaction(async (tx) => {
      const snap = await need(tx, options.snapshot)
      return contentOf(tx, await resolveAt(tx, snap.id, target, true, 'open'), target)
    })
    return options.encoding ? bytes.toString(options.encoding) : bytes
  }
}

function refuseSynced(q: Queryable): void {
  if (q.capabilities?.sync)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'snapshots are not supported on a synced database yet; snapshot a local copy (agentfs export) instead',
    )
}

async function find(q: Executor, name: string): Promise<SnapshotRow | undefined> {
  const { rows } = await q.execute<SnapshotRow>({ sql: `${SELECT} WHERE name = ?`, params: [name] })
  return rows[0]
}

async function byId(q: Executor, id: number): Promise<SnapshotRow | undefined> {
  const { rows } = await q.execute<SnapshotRow>({ sql: `${SELECT} WHERE id = ?`, params: [id] })
  return rows[0]
}

async function need(q: Executor, name: string): Promise<SnapshotRow> {
  const row = await find(q, name)
  if (!row)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `there is no snapshot named '${name}'; history.listSnapshots() lists the snapshots there are`,
    )
  return row
}

/**
 * Deletes rows no snapshot sees any more (closed rows whose span holds no snapshot id) and the
 * chunks only they referred to. With no snapshot left, everything goes, open rows too.
 */
export async function collect(q: Executor): Promise<void> {
  const { rows: left } = await q.execute<{ n: number }>({
    sql: 'SELECT count(*) AS n FROM agentfs_snapshot',
  })
  const none = (left[0]?.n ?? 0) === 0
  const dead = none
    ? '1'
    : 'until IS NOT NULL AND NOT EXISTS (SELECT 1 FROM agentfs_snapshot s WHERE s.id >= since AND s.id < until)'
  const { rows } = await q.execute<{ chunks: Uint8Array | null }>({
    sql: `SELECT chunks FROM agentfs_snap_inode WHERE chunks IS NOT NULL AND ${dead}`,
  })
  for (const row of rows) await dropRefs(q, row.chunks)
  for (const table of ['agentfs_snap_inode', 'agentfs_snap_dentry', 'agentfs_snap_kv'])
    await q.execute({ sql: `DELETE FROM ${table} WHERE ${dead}` })
  if (none) await writeTip(q, undefined)
}
