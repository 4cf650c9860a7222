import type { Executor } from './driver.js'
import type { Queryable } from './guard-driver.js'

/**
 * Columns that stamp a statement's row with where the connection stood when it ran: another
 * connection's commit moves `data_version`, this connection's own row changes move
 * `total_changes()`. Append them, last, to a SELECT whose answer a cache keeps, and read its
 * rows as arrays (`Statement.arrays`): {@link tokenOf} takes the last two values.
 */
export const SNAPSHOT_COLUMNS =
  '(SELECT data_version FROM pragma_data_version) AS snapshot_dv, total_changes() AS snapshot_tc'

/**
 * Where the database stood for one cached answer: equal tokens mean nothing that statement
 * could see has changed since (no commit by another connection, no row changed by this one, no
 * transaction begun or ended, no script or other non-SELECT statement run here).
 */
export interface SnapshotToken {
  readonly dv: number
  readonly tc: number
  readonly generation: number
}

/** A top-level handle whose generation caches compare (a guarded driver, an opened database). */
export interface SnapshotSource extends Queryable {
  /** See `GuardedDriver.generation`. */
  readonly generation: number
}

/**
 * The top-level handle a cache may be kept for: `executor` itself when it is a guarded driver
 * outside any transaction whose driver offers snapshot tokens; undefined otherwise (a
 * transaction handle sees changes that may still be rolled back; remote streams and engines
 * without the pragma cannot stamp rows).
 */
export function snapshotSource(executor: Executor): SnapshotSource | undefined {
  const handle = executor as Partial<SnapshotSource>
  return handle.inTransaction === false &&
    typeof handle.generation === 'number' &&
    handle.capabilities?.snapshotTokens === true
    ? (handle as SnapshotSource)
    : undefined
}

/**
 * The token of an array row (`Statement.arrays`) whose last two values are
 * {@link SNAPSHOT_COLUMNS}, at `generation`.
 */
export function tokenOf(row: readonly unknown[], generation: number): SnapshotToken {
  const n = row.length
  return { dv: Number(row[n - 2]), tc: Number(row[n - 1]), generation }
}

/** True when two tokens say the same state. */
export function sameSnapshot(a: SnapshotToken | undefined, b: SnapshotToken): boolean {
  return a !== undefined && a.dv === b.dv && a.tc === b.tc && a.generation === b.generation
}
