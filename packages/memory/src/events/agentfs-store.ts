import type { Clock, IntegrityKey, Queryable } from '@agentfs/core'
import { micros } from '@agentfs/core'
import {
  buildEvent,
  type EventInput,
  eventOf,
  type MemoryEvent,
  type StoredEvent,
} from './event.js'
import {
  EVENT_COLUMNS,
  type EventFilters,
  type EventReport,
  filterSql,
  VERIFY_PAGE,
  verifyPages,
} from './filters.js'

/**
 * Events kept in the AgentFS database (`agentfs_memory_event`), written in the transaction of
 * the change they describe: the saga's pending → committed is one transaction, so a crash
 * leaves neither the change nor its event. A write that fails rolls back and is recorded as a
 * `failed` event afterwards, in a transaction of its own.
 */

const COLUMNS = EVENT_COLUMNS.join(', ')
const PLACEHOLDERS = EVENT_COLUMNS.map(() => '?').join(', ')

/** The feed's last seq now (0 when empty): taken when a write's transaction begins. */
export async function lastSeq(q: Queryable): Promise<number> {
  const { rows } = await q.execute<{ s: number }>({
    sql: 'SELECT COALESCE(MAX(seq), 0) AS s FROM agentfs_change',
  })
  return Number(rows[0]?.s ?? 0)
}

/**
 * The change feed's transaction id of the write under way on `q` that began when the feed's
 * last seq was `sinceSeq`: its first change's seq (whose txid is NULL); null when it changed
 * nothing.
 */
export async function feedTransactionId(q: Queryable, sinceSeq: number): Promise<number | null> {
  const { rows } = await q.execute<{ t: number | null }>({
    sql: 'SELECT COALESCE(txid, seq) AS t FROM agentfs_change WHERE seq > ? ORDER BY seq DESC LIMIT 1',
    params: [sinceSeq],
  })
  const t = rows[0]?.t
  return t === undefined || t === null ? null : Number(t)
}

export class AgentFsEventStore {
  readonly #userId: string
  readonly #key: IntegrityKey
  readonly #clock: Clock

  constructor(options: { userId: string; key: IntegrityKey; clock: Clock }) {
    this.#userId = options.userId
    this.#key = options.key
    this.#clock = options.clock
  }

  async #insert(q: Queryable, row: StoredEvent): Promise<void> {
    await q.execute({
      sql: `INSERT INTO agentfs_memory_event (${COLUMNS}) VALUES (${PLACEHOLDERS})`,
      params: EVENT_COLUMNS.map((c) => row[c] ?? null) as never,
    })
  }

  /**
   * Records an event on `q`: `committed` in the transaction of its write (its transaction id
   * is the feed's for that unit), or `failed` after the write rolled back.
   */
  async record(
    q: Queryable,
    input: EventInput,
    status: 'committed' | 'failed',
    extra: {
      after_hash?: string | null
      line_hash?: string | null
      error?: string | null
      /** The feed's last seq when the write's transaction began (see {@link lastSeq}). */
      since_seq?: number
    } = {},
  ): Promise<MemoryEvent> {
    const transaction_id =
      status === 'committed' && extra.since_seq !== undefined
        ? await feedTransactionId(q, extra.since_seq)
        : null
    const row = buildEvent(this.#key, this.#userId, micros(this.#clock.now()), input, status, {
      after_hash: extra.after_hash ?? null,
      line_hash: extra.line_hash ?? null,
      error: extra.error ? extra.error.slice(0, 4096) : null,
      transaction_id,
    })
    await this.#insert(q, row)
    return eventOf(row)
  }

  /** Events matching `filters`, newest first. */
  async query(q: Queryable, filters: EventFilters = {}): Promise<MemoryEvent[]> {
    const { where, params, limit } = filterSql(filters, () => '?')
    const { rows } = await q.execute<StoredEvent>({
      sql: `SELECT ${COLUMNS} FROM agentfs_memory_event${where} ORDER BY created_us DESC, id LIMIT ${limit}`,
      params: params as never,
    })
    return rows.map(eventOf)
  }

  /** Checks every event's HMAC with `keys` (see {@link verifyEvents}). */
  verify(
    q: Queryable,
    keys: readonly IntegrityKey[],
    options: { userId?: string } = {},
  ): Promise<EventReport> {
    return verifyEvents(q, keys, options)
  }
}

/**
 * Checks the HMAC of every event in the AgentFS database (of one user, or all) with `keys`: an
 * event changed since it was written, or sealed with a key not given, is an issue. A database
 * without the events table has none.
 */
export async function verifyEvents(
  q: Queryable,
  keys: readonly IntegrityKey[],
  options: { userId?: string } = {},
): Promise<EventReport> {
  const { rows: tables } = await q.execute<{ n: number }>({
    sql: "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'agentfs_memory_event'",
  })
  if (Number(tables[0]?.n ?? 0) === 0) return { ok: true, checked: 0, issues: [] }
  const user = options.userId === undefined ? [] : [options.userId]
  return verifyPages(keys, async (after) => {
    const { rows } = await q.execute<StoredEvent>({
      sql: `SELECT ${COLUMNS} FROM agentfs_memory_event WHERE id > ?${user.length > 0 ? ' AND user_id = ?' : ''} ORDER BY id LIMIT ${VERIFY_PAGE}`,
      params: [after, ...user],
    })
    return rows
  })
}
