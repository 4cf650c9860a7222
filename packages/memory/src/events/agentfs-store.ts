import { randomUUID } from 'node:crypto'
import type { Clock, IntegrityKey, Queryable } from '@agentfs/core'
import { micros } from '@agentfs/core'
import { MemoryError } from '../errors.js'
import {
  type EventInput,
  type EventStatus,
  eventHmac,
  eventOf,
  eventVerifies,
  type MemoryEvent,
  type StoredEvent,
} from './event.js'

/**
 * Events kept in the AgentFS database (`agentfs_memory_event`), written in the transaction of
 * the change they describe: the saga's pending → committed is one transaction, so a crash
 * leaves neither the change nor its event. A write that fails rolls back and is recorded as a
 * `failed` event afterwards, in a transaction of its own.
 */

/** Filters of {@link AgentFsEventStore.query} (all optional; newest first). */
export interface EventFilters {
  readonly user_id?: string
  readonly type?: string
  readonly op?: string
  readonly status?: EventStatus
  readonly file_path?: string
  readonly section_anchor?: string
  readonly tool_call_id?: string
  readonly agent_action_id?: string
  /** Created at or after (µs since the epoch). */
  readonly since_us?: number
  /** Created before (µs since the epoch). */
  readonly until_us?: number
  /** At most this many (1 … 1000, default 100). */
  readonly limit?: number
}

/** What {@link AgentFsEventStore.verify} found. */
export interface EventReport {
  readonly ok: boolean
  readonly checked: number
  /** Events whose HMAC does not verify: changed since written, or not written with a given key. */
  readonly issues: readonly { id: string; kind: 'changed' | 'unknown-key'; message: string }[]
}

const COLUMNS =
  'id, user_id, type, op, tool, file_path, section_anchor, rationale, override_rationale, evidence_refs, before_hash, after_hash, intended_hash, lint, tool_call_id, transaction_id, agent_action_id, idempotency_key, status, error, line_hash, integrity_hmac, integrity_salt_version, created_us, updated_us'
const PLACEHOLDERS = COLUMNS.split(',')
  .map(() => '?')
  .join(', ')
const FILTERS = [
  'user_id',
  'type',
  'op',
  'status',
  'file_path',
  'section_anchor',
  'tool_call_id',
  'agent_action_id',
] as const
const MAX_LIMIT = 1000
const PAGE = 1000

export class AgentFsEventStore {
  readonly #userId: string
  readonly #key: IntegrityKey
  readonly #clock: Clock

  constructor(options: { userId: string; key: IntegrityKey; clock: Clock }) {
    this.#userId = options.userId
    this.#key = options.key
    this.#clock = options.clock
  }

  /** A complete row for `input` with `status`, its HMAC made. */
  #row(
    input: EventInput,
    status: EventStatus,
    extra: {
      after_hash?: string | null
      line_hash?: string | null
      transaction_id?: number | null
      error?: string | null
    },
  ): StoredEvent {
    const now = micros(this.#clock.now())
    const row = {
      id: randomUUID(),
      user_id: this.#userId,
      type: input.type,
      op: input.op,
      tool: input.tool,
      file_path: input.file_path,
      section_anchor: input.section_anchor ?? null,
      rationale: input.rationale ?? null,
      override_rationale: input.override_rationale ?? null,
      evidence_refs: input.evidence_refs ? JSON.stringify(input.evidence_refs) : null,
      before_hash: input.before_hash ?? null,
      after_hash: extra.after_hash ?? null,
      intended_hash: input.intended_hash ?? null,
      lint: input.lint === undefined ? null : JSON.stringify(input.lint),
      tool_call_id: input.tool_call_id ?? null,
      transaction_id: extra.transaction_id ?? null,
      agent_action_id: input.agent_action_id ?? null,
      idempotency_key: input.idempotency_key ?? null,
      status,
      error: extra.error ?? null,
      line_hash: extra.line_hash ?? null,
      created_us: now,
      updated_us: now,
    }
    return {
      ...row,
      integrity_hmac: eventHmac(this.#key, row),
      integrity_salt_version: this.#key.id,
    }
  }

  async #insert(q: Queryable, row: StoredEvent): Promise<void> {
    await q.execute({
      sql: `INSERT INTO agentfs_memory_event (${COLUMNS}) VALUES (${PLACEHOLDERS})`,
      params: COLUMNS.split(', ').map(
        (c) => (row as unknown as Record<string, unknown>)[c] ?? null,
      ) as never,
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
    let transaction_id: number | null = null
    if (status === 'committed' && extra.since_seq !== undefined) {
      // The feed's transaction id of the write: its first change's seq (whose txid is NULL).
      const { rows } = await q.execute<{ t: number | null }>({
        sql: 'SELECT COALESCE(txid, seq) AS t FROM agentfs_change WHERE seq > ? ORDER BY seq DESC LIMIT 1',
        params: [extra.since_seq],
      })
      transaction_id = rows[0]?.t ?? null
    }
    const row = this.#row(input, status, {
      after_hash: extra.after_hash ?? null,
      line_hash: extra.line_hash ?? null,
      error: extra.error ? extra.error.slice(0, 4096) : null,
      transaction_id,
    })
    await this.#insert(q, row)
    return eventOf(row)
  }

  /** The feed's last seq now (0 when empty): taken when a write's transaction begins. */
  async lastSeq(q: Queryable): Promise<number> {
    const { rows } = await q.execute<{ s: number }>({
      sql: 'SELECT COALESCE(MAX(seq), 0) AS s FROM agentfs_change',
    })
    return Number(rows[0]?.s ?? 0)
  }

  /** Events matching `filters`, newest first. */
  async query(q: Queryable, filters: EventFilters = {}): Promise<MemoryEvent[]> {
    const limit = filters.limit ?? 100
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
      throw new MemoryError(
        'INVALID_ARGUMENT',
        `limit must be a whole number 1 … ${MAX_LIMIT}, got ${limit}`,
      )
    const where: string[] = []
    const params: unknown[] = []
    for (const f of FILTERS) {
      const value = filters[f]
      if (value === undefined) continue
      if (typeof value !== 'string')
        throw new MemoryError('INVALID_ARGUMENT', `filter ${f} must be a string`)
      where.push(`${f} = ?`)
      params.push(value)
    }
    for (const [f, op] of [
      ['since_us', '>='],
      ['until_us', '<'],
    ] as const) {
      const value = filters[f]
      if (value === undefined) continue
      if (!Number.isSafeInteger(value))
        throw new MemoryError('INVALID_ARGUMENT', `${f} must be a whole number of microseconds`)
      where.push(`created_us ${op} ?`)
      params.push(value)
    }
    const { rows } = await q.execute<StoredEvent>({
      sql: `SELECT ${COLUMNS} FROM agentfs_memory_event${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY created_us DESC, id LIMIT ${limit}`,
      params: params as never,
    })
    return rows.map(eventOf)
  }

  /** Checks every event's HMAC with `keys` (a changed event, or one no key made, is an issue). */
  async verify(q: Queryable, keys: readonly IntegrityKey[]): Promise<EventReport> {
    const issues: { id: string; kind: 'changed' | 'unknown-key'; message: string }[] = []
    let checked = 0
    let after = ''
    for (;;) {
      const { rows } = await q.execute<StoredEvent>({
        sql: `SELECT ${COLUMNS} FROM agentfs_memory_event WHERE id > ? ORDER BY id LIMIT ${PAGE}`,
        params: [after],
      })
      for (const row of rows) {
        checked++
        if (eventVerifies(keys, row)) continue
        const known = keys.some((k) => k.id === row.integrity_salt_version)
        if (issues.length < 100)
          issues.push(
            known
              ? {
                  id: row.id,
                  kind: 'changed',
                  message: `event ${row.id} (${row.op} ${row.file_path ?? ''}) was changed after it was written`,
                }
              : {
                  id: row.id,
                  kind: 'unknown-key',
                  message: `event ${row.id} is sealed with key ${JSON.stringify(row.integrity_salt_version)}, which was not given`,
                },
          )
      }
      if (rows.length < PAGE) break
      after = rows.at(-1)!.id
    }
    return { ok: issues.length === 0, checked, issues }
  }
}
