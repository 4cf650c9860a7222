import {
  AgentFsError,
  type AuditKey,
  anchorTrim,
  type Change,
  type ChangePage,
  type ChangeQuery,
  type Clock,
  type FollowOptions,
  followChanges,
  lastChange,
  micros,
  type Queryable,
  readChanges,
  systemClock,
} from '@agentfs/core'
import { recordTrim } from './capture.js'

/** Options of {@link ChangeLog.trim}: what to delete from the oldest end. */
export interface TrimOptions {
  /** Delete changes with a sequence number up to and including this one. */
  readonly upTo?: number
  /** Delete changes older than this (ms since the epoch, or a Date). */
  readonly olderThan?: number | Date
  /** Keep at most this many of the newest changes. */
  readonly keep?: number
}

/**
 * The change feed (`agentfs_change`): every change to files and kv, appended in the change's
 * own transaction, with time, paths, inode, version token, size, session and tool call.
 */
export class ChangeLog {
  readonly #q: Queryable
  readonly #auditKey: AuditKey | undefined
  readonly #clock: Clock

  /**
   * `auditKey`: the key that seals rows a trim seals first (see `sealAudit` of
   * `@agentfs/core`); `clock`: the time those seals record (default: the system clock).
   */
  constructor(q: Queryable, options: { auditKey?: AuditKey; clock?: Clock } = {}) {
    this.#q = q
    this.#auditKey = options.auditKey
    this.#clock = options.clock ?? systemClock()
  }

  /** One page of the changes after `cursor` (0: from the start), oldest first. */
  since(cursor = 0, query: ChangeQuery = {}): Promise<ChangePage> {
    return readChanges(this.#q, cursor, query)
  }

  /**
   * Every change after `options.cursor` (default: the newest now), then each new one as it
   * commits, from any process writing the database, until `options.signal` aborts.
   */
  follow(options: FollowOptions = {}): AsyncGenerator<Change, void, undefined> {
    return followChanges(this.#q, options)
  }

  /** The newest sequence number (0 when nothing changed yet). */
  last(): Promise<number> {
    return lastChange(this.#q)
  }

  /**
   * Deletes old changes (one transaction); returns how many. Snapshots taken later compare the
   * whole tree once when the changes since the previous snapshot were trimmed. The audit chain
   * seals the trimmed rows first and keeps the last one's digest as its anchor.
   */
  trim(options: TrimOptions): Promise<number> {
    const { upTo, olderThan, keep } = options
    if (upTo === undefined && olderThan === undefined && keep === undefined)
      throw new AgentFsError('INVALID_ARGUMENT', 'trim needs upTo, olderThan or keep')
    return this.#q.transaction(async (tx) => {
      let limit = Number.MAX_SAFE_INTEGER
      if (upTo !== undefined) limit = Math.min(limit, checkCount(upTo, 'upTo'))
      if (keep !== undefined) {
        const { rows } = await tx.execute<{ seq: number }>({
          sql: 'SELECT seq FROM agentfs_change ORDER BY seq DESC LIMIT 1 OFFSET (SELECT ?)',
          params: [checkCount(keep, 'keep')],
        })
        limit = Math.min(limit, rows[0]?.seq ?? 0)
      }
      if (olderThan !== undefined) {
        const ms = olderThan instanceof Date ? olderThan.getTime() : olderThan
        if (!Number.isFinite(ms))
          throw new AgentFsError('INVALID_ARGUMENT', `olderThan must be a time, got ${olderThan}`)
        const { rows } = await tx.execute<{ seq: number | null }>({
          sql: 'SELECT max(seq) AS seq FROM agentfs_change WHERE at_us < ?',
          params: [Math.floor(ms * 1000)],
        })
        limit = Math.min(limit, rows[0]?.seq ?? 0)
      }
      if (limit <= 0) return 0
      // The audit chain keeps the digest of the last trimmed row, so what stays still verifies.
      await anchorTrim(tx, 'change', limit, this.#auditKey, micros(this.#clock.now()))
      const result = await tx.execute({
        sql: 'DELETE FROM agentfs_change WHERE seq <= ?',
        params: [limit],
      })
      if (result.changes > 0) await recordTrim(tx, limit)
      return result.changes
    })
  }
}

function checkCount(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `${what} must be a non-negative integer, got ${value}`,
    )
  return value
}
