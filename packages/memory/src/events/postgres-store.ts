import { randomUUID } from 'node:crypto'
import {
  argumentDifferences,
  type Clock,
  canonicalJson,
  checkIdempotencyKey,
  DEFAULT_IDEMPOTENCY_TTL_MS,
  digestArguments,
  IdempotencyMismatchError,
  IdempotencyUntrustedError,
  type IntegrityKey,
  micros,
  systemClock,
} from '@agentfs/core'
import { MemoryError } from '../errors.js'
import {
  buildEvent,
  type EventExtra,
  type EventInput,
  eventError,
  eventOf,
  eventVerifies,
  type MemoryEvent,
  resealEvent,
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
import {
  deleteExpired,
  insertRecord,
  lockRecord,
  lockRecordOf,
  type RecordRow,
  recordTrusted,
  sealed,
  updateRecord,
} from './postgres-records.js'
import {
  ident,
  migrateTables,
  type PgPool,
  type PgQueryable,
  pgTransaction,
  poolOf,
  READER_ROLE,
  SQL_NAME,
  unavailable,
} from './postgres-schema.js'

export type { PgPool, PgQueryable, PgResult } from './postgres-schema.js'

/**
 * Memory events in Postgres (seed 003's "Postgres-first logs"): the `events` and
 * `idempotency_records` tables, written by the service role; users read their own events
 * through row-level security ({@link PostgresEventStore.grantRead}).
 *
 * The file and its event now live in two stores, so a write is a saga: the idempotency key is
 * claimed here (`pending`); inside the AgentFS transaction of the change, the event is inserted
 * `pending` with the hash the write will leave (`intended_hash`) and the answer a retry will
 * get; the AgentFS transaction commits (with a marker row naming the event); then both rows
 * become `committed` here. A writer that dies between the two commits leaves a `pending`
 * event, which {@link PostgresEventStore.reconcile} settles from the AgentFS side: committed
 * when the marker is there (or, once it has expired, when the file's hash is the intended
 * one), failed otherwise.
 */

/** Options of {@link PostgresEventStore.open}. */
export interface PostgresEventsOptions {
  /** A `postgres://` URL of the service role (the tables' owner); or give `pool`. */
  readonly connectionString?: string
  /** A pool of the service role's connections (the store does not end a pool it was given). */
  readonly pool?: PgPool
  /** The schema of the tables (default `public`); created when missing. */
  readonly schema?: string
  /**
   * A key claimed this recently whose write has not reached Postgres yet is left to its writer:
   * a retry is refused as under way (`BUSY`) — default 60 s; after that the key is free again.
   */
  readonly leaseMs?: number
  readonly clock?: Clock
}

/** What a claim of an idempotency key found. */
export type PgClaim =
  /** The key is ours: write, then `begin` with this event id. */
  | { readonly kind: 'claimed'; readonly eventId: string }
  /** The first request's answer. */
  | { readonly kind: 'replay'; readonly result: unknown }
  /** A writer died with this event pending: settle it (`reconcile`), then claim again. */
  | { readonly kind: 'stale'; readonly eventId: string }

/** A claim's request. */
export interface PgClaimRequest {
  readonly userId: string
  readonly scope: string
  readonly key: string
  readonly args: unknown
  readonly ttlMs?: number
  /** Seals the record (the first of `keys`). */
  readonly keys: readonly IntegrityKey[]
}

/** What {@link PostgresEventStore.reconcile} did. */
export interface ReconcileReport {
  readonly settled: readonly {
    id: string
    status: 'committed' | 'failed'
    file_path: string | null
  }[]
  /** Pending events left alone: under way (younger than the lease) or not verifying. */
  readonly skipped: readonly { id: string; reason: string }[]
}

/**
 * How reconciliation learns what happened on the AgentFS side of a pending event: whether its
 * transaction committed (undefined when that can no longer be told), and the canonical hash of
 * its file now (null when there is none).
 */
export type SagaWitness = (event: {
  readonly id: string
  readonly file_path: string | null
  readonly created_us: number
}) => Promise<{ committed: boolean | undefined; hash: string | null }>

const COLUMNS = EVENT_COLUMNS.join(', ')
const MAX_RECONCILE = 1000

/** A row as read: bigints (strings from `pg`) as numbers. */
function eventRow(raw: Record<string, unknown>): StoredEvent {
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v))
  return {
    ...(raw as unknown as StoredEvent),
    transaction_id: n(raw.transaction_id),
    created_us: Number(raw.created_us),
    updated_us: Number(raw.updated_us),
  }
}

function sealer(keys: readonly IntegrityKey[]): IntegrityKey {
  const k = keys[0]
  if (!k)
    throw new MemoryError('INVALID_ARGUMENT', 'memory events are sealed with an HMAC key; give one')
  return k
}

export class PostgresEventStore {
  readonly #pool: PgPool
  readonly #own: boolean
  readonly #s: string
  readonly #leaseUs: number
  readonly #clock: Clock

  private constructor(options: PostgresEventsOptions, pool: PgPool, own: boolean) {
    const schema = options.schema ?? 'public'
    if (!SQL_NAME.test(schema))
      throw new MemoryError(
        'INVALID_ARGUMENT',
        `schema must be a lowercase SQL name (letters, digits, _), got ${JSON.stringify(schema)}`,
      )
    const lease = options.leaseMs ?? 60_000
    if (!Number.isFinite(lease) || lease < 0)
      throw new MemoryError('INVALID_ARGUMENT', `leaseMs must be 0 or more, got ${lease}`)
    this.#pool = pool
    this.#own = own
    this.#s = ident(schema)
    this.#leaseUs = Math.round(lease * 1000)
    this.#clock = options.clock ?? systemClock()
  }

  /** Connects (a pool of `connectionString`, or the given one) and migrates the tables. */
  static async open(options: PostgresEventsOptions): Promise<PostgresEventStore> {
    if (!options.pool && !options.connectionString)
      throw new MemoryError(
        'INVALID_ARGUMENT',
        'Postgres events need a connectionString or a pool of the service role',
      )
    const pool = options.pool ?? (await poolOf(options.connectionString!))
    const store = new PostgresEventStore(options, pool, !options.pool)
    try {
      await store.migrate()
    } catch (error) {
      if (store.#own) await pool.end().catch(() => undefined)
      throw error
    }
    return store
  }

  #now(): number {
    return micros(this.#clock.now())
  }

  /** Runs `fn` in a transaction of one connection. */
  #tx<T>(what: string, fn: (c: PgQueryable) => Promise<T>): Promise<T> {
    return pgTransaction(this.#pool, what, fn)
  }

  /** Creates or updates the tables (numbered migrations, each once, under an advisory lock). */
  migrate(): Promise<void> {
    return migrateTables(this.#pool, this.#s)
  }

  /**
   * Lets the login role `role` read `userId`'s events (and only those): grants it
   * `agentfs_memory_reader` and maps it to the user. The role must exist.
   */
  async grantRead(userId: string, role: string): Promise<void> {
    if (typeof role !== 'string' || !SQL_NAME.test(role))
      throw new MemoryError('INVALID_ARGUMENT', `role must be a lowercase SQL name, got ${role}`)
    await this.#tx('granting a reader', async (c) => {
      await c.query(`GRANT ${READER_ROLE} TO ${ident(role)}`)
      await c.query(
        `INSERT INTO ${this.#s}.event_readers (role_name, user_id) VALUES ($1, $2)
ON CONFLICT (role_name) DO UPDATE SET user_id = EXCLUDED.user_id`,
        [role, userId],
      )
    })
  }

  /**
   * Claims idempotency key `request.key` for a write: `claimed` (ours; the record is `pending`
   * with the event id the write will use), `replay` (the first request's answer), or `stale`
   * (a writer died with its event pending: reconcile, then claim again). A record no key
   * verifies is refused; the key with other arguments is refused; a record under way is refused
   * as busy.
   */
  async claim(request: PgClaimRequest): Promise<PgClaim> {
    const key = checkIdempotencyKey(request.key)
    const k = sealer(request.keys)
    const ttl = request.ttlMs ?? DEFAULT_IDEMPOTENCY_TTL_MS
    if (!Number.isFinite(ttl) || ttl <= 0)
      throw new MemoryError(
        'INVALID_ARGUMENT',
        `an idempotency TTL must be positive, got ${ttl} ms`,
      )
    const digest = digestArguments(request.args)
    const argsHex = Buffer.from(digest.sha256).toString('hex')
    const s = this.#s
    return this.#tx('claiming the idempotency key', async (c) => {
      const now = this.#now()
      await deleteExpired(c, s, now)
      const row = await lockRecord(c, s, request.userId, request.scope, key)
      const fresh = (): RecordRow =>
        sealed(k, {
          user_id: request.userId,
          scope: request.scope,
          key,
          args_sha256: argsHex,
          args_digests: digest.members,
          result: null,
          event_id: randomUUID(),
          status: 'pending',
          created_us: now,
          expires_us: now + Math.round(ttl * 1000),
        })
      if (!row) {
        const first = fresh()
        if (!(await insertRecord(c, s, first))) throw this.#busy(key)
        return { kind: 'claimed', eventId: first.event_id! }
      }
      if (!recordTrusted(request.keys, row))
        throw new IdempotencyUntrustedError(
          `the record of idempotency key '${key}' (${request.scope}) is not sealed by a key given here (key id ${JSON.stringify(row.key_id)}), so it was not written by this service and is not replayed; nothing was applied: retry with a new key`,
        )
      if (row.args_sha256 !== argsHex) {
        const differs = argumentDifferences(row.args_digests, digest.members)
        throw new IdempotencyMismatchError(
          `idempotency key '${key}' was first used at ${new Date(Math.floor(row.created_us / 1000)).toISOString()} with other arguments${differs.length > 0 ? ` (${differs.join(', ')} differ)` : ''}; use a new key for a new request`,
          differs,
        )
      }
      if (row.status === 'committed') {
        try {
          return { kind: 'replay', result: JSON.parse(row.result ?? 'null') }
        } catch {
          throw new MemoryError('INVALID_ARGUMENT', `the stored answer of key '${key}' is not JSON`)
        }
      }
      if (row.status === 'pending') {
        const event = await c.query(`SELECT status FROM ${s}.events WHERE id = $1`, [row.event_id])
        const status = event.rows[0]?.status
        // Its write reached Postgres: reconciliation can tell what became of it (it waits for
        // a writer still inside its AgentFS transaction), whatever its age.
        if (status === 'pending') return { kind: 'stale', eventId: row.event_id! }
        if (status === undefined && row.created_us > now - this.#leaseUs) throw this.#busy(key)
      }
      // Failed, or a claimant that died before its event: the key is free again.
      const again = fresh()
      await updateRecord(c, s, again)
      return { kind: 'claimed', eventId: again.event_id! }
    })
  }

  #busy(key: string): MemoryError {
    return new MemoryError(
      'BUSY',
      `a request with idempotency key '${key}' is under way; retry in a moment with the same key`,
    )
  }

  async #insertEvent(c: PgQueryable, row: StoredEvent): Promise<void> {
    await c.query(
      `INSERT INTO ${this.#s}.events (${COLUMNS}) VALUES (${EVENT_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`,
      EVENT_COLUMNS.map((col) => row[col] ?? null),
    )
  }

  async #setEvent(c: PgQueryable, row: StoredEvent): Promise<boolean> {
    const r = await c.query(
      `UPDATE ${this.#s}.events SET status = $2, after_hash = $3, error = $4, updated_us = $5,
  integrity_hmac = $6, integrity_salt_version = $7 WHERE id = $1 AND status = 'pending'`,
      [
        row.id,
        row.status,
        row.after_hash,
        row.error,
        row.updated_us,
        row.integrity_hmac,
        row.integrity_salt_version,
      ],
    )
    return r.rowCount === 1
  }

  /** The record of `eventId` made `status` (resealed), when it is still that event's. */
  async #settleRecord(
    c: PgQueryable,
    keys: readonly IntegrityKey[],
    userId: string,
    eventId: string,
    status: 'committed' | 'failed',
  ): Promise<void> {
    const row = await lockRecordOf(c, this.#s, userId, eventId)
    if (!row || !recordTrusted(keys, row)) return
    await updateRecord(c, this.#s, sealed(sealer(keys), { ...row, status }))
  }

  /**
   * The saga's first step, inside the AgentFS transaction of the change: the event `pending`
   * (with `intended_hash`) and the answer a retry will get, in one Postgres transaction.
   */
  async begin(
    request: {
      userId: string
      scope: string
      key: string
      eventId: string
      keys: readonly IntegrityKey[]
    },
    input: EventInput,
    extra: EventExtra,
    answer: unknown,
  ): Promise<StoredEvent> {
    const k = sealer(request.keys)
    const row = buildEvent(k, request.userId, this.#now(), input, 'pending', extra, request.eventId)
    await this.#tx('recording the pending event', async (c) => {
      const record = await lockRecord(c, this.#s, request.userId, request.scope, request.key)
      if (!record || record.event_id !== request.eventId || record.status !== 'pending')
        throw new MemoryError(
          'BUSY',
          `idempotency key '${request.key}' was taken over by another request while this one ran; nothing was written — retry with the same key`,
        )
      await this.#insertEvent(c, row)
      await updateRecord(c, this.#s, sealed(k, { ...record, result: canonicalJson(answer) }))
    })
    return row
  }

  /** The saga's last step, after the AgentFS commit: the event and its record `committed`. */
  async commit(
    row: StoredEvent,
    keys: readonly IntegrityKey[],
    after_hash: string | null,
  ): Promise<StoredEvent> {
    const k = sealer(keys)
    const done = resealEvent(k, {
      ...row,
      status: 'committed',
      after_hash,
      updated_us: this.#now(),
    })
    await this.#tx('committing the event', async (c) => {
      await this.#setEvent(c, done)
      await this.#settleRecord(c, keys, row.user_id, row.id, 'committed')
    })
    return done
  }

  /**
   * A write that did not happen (refused, or its AgentFS transaction rolled back): its pending
   * event becomes `failed` (or a `failed` event is recorded when it had none yet), and its key
   * is free for a retry.
   */
  async fail(
    request: { userId: string; eventId: string | undefined; keys: readonly IntegrityKey[] },
    input: EventInput,
    pending: StoredEvent | undefined,
    error: string,
  ): Promise<void> {
    const k = sealer(request.keys)
    const now = this.#now()
    await this.#tx('recording the failed event', async (c) => {
      if (pending) {
        await this.#setEvent(
          c,
          resealEvent(k, { ...pending, status: 'failed', error, updated_us: now }),
        )
      } else {
        await this.#insertEvent(c, buildEvent(k, request.userId, now, input, 'failed', { error }))
      }
      if (request.eventId)
        await this.#settleRecord(c, request.keys, request.userId, request.eventId, 'failed')
    })
  }

  /**
   * Settles `userId`'s pending events (created `olderThanMs` ago or earlier; default all, or
   * only `eventId`): committed when `witness` says the AgentFS transaction committed — or, when
   * it cannot tell (the marker expired), when the file's hash is the intended one and differs
   * from the one before — failed otherwise. An event whose HMAC does not verify is left pending
   * and reported, never resealed.
   */
  async reconcile(
    userId: string,
    keys: readonly IntegrityKey[],
    witness: SagaWitness,
    options: { olderThanMs?: number; eventId?: string } = {},
  ): Promise<ReconcileReport> {
    const k = sealer(keys)
    const olderUs = Math.round((options.olderThanMs ?? 0) * 1000)
    if (!Number.isFinite(olderUs) || olderUs < 0)
      throw new MemoryError('INVALID_ARGUMENT', 'olderThanMs must be 0 or more')
    const settled: { id: string; status: 'committed' | 'failed'; file_path: string | null }[] = []
    const skipped: { id: string; reason: string }[] = []
    const params: unknown[] = [userId, this.#now() - olderUs]
    if (options.eventId !== undefined) params.push(options.eventId)
    const { rows } = await this.#pool
      .query(
        `SELECT ${COLUMNS} FROM ${this.#s}.events WHERE user_id = $1 AND status = 'pending'
  AND created_us <= $2${options.eventId === undefined ? '' : ' AND id = $3'} ORDER BY created_us LIMIT ${MAX_RECONCILE}`,
        params,
      )
      .catch((error: unknown) => {
        throw unavailable(error, 'reading pending events')
      })
    for (const raw of rows) {
      const row = eventRow(raw)
      if (!eventVerifies(keys, row)) {
        skipped.push({ id: row.id, reason: 'its HMAC does not verify; it was left pending' })
        continue
      }
      let seen: Awaited<ReturnType<SagaWitness>>
      try {
        seen = await witness(row)
      } catch (error) {
        skipped.push({ id: row.id, reason: eventError(error) })
        continue
      }
      const landed =
        seen.committed ??
        (row.intended_hash !== null &&
          row.intended_hash !== row.before_hash &&
          seen.hash === row.intended_hash)
      const status = landed ? 'committed' : 'failed'
      const done = resealEvent(k, {
        ...row,
        status,
        after_hash: landed ? row.intended_hash : null,
        error: landed
          ? null
          : `reconciled: the write did not land (the file's hash is ${seen.hash ?? 'none'}; the write meant ${row.intended_hash ?? 'none'})`,
        updated_us: this.#now(),
      })
      const changed = await this.#tx('settling a pending event', async (c) => {
        const ok = await this.#setEvent(c, done)
        if (ok) await this.#settleRecord(c, keys, userId, row.id, status)
        return ok
      })
      if (changed) settled.push({ id: row.id, status, file_path: row.file_path })
      else skipped.push({ id: row.id, reason: 'settled meanwhile by another process' })
    }
    return { settled, skipped }
  }

  /** Events matching `filters`, newest first (the service role sees every user's). */
  async query(filters: EventFilters = {}): Promise<MemoryEvent[]> {
    const { where, params, limit } = filterSql(filters, (n) => `$${n}`)
    const { rows } = await this.#pool
      .query(
        `SELECT ${COLUMNS} FROM ${this.#s}.events${where} ORDER BY created_us DESC, id LIMIT ${limit}`,
        params,
      )
      .catch((error: unknown) => {
        throw unavailable(error, 'querying events')
      })
    return rows.map((r) => eventOf(eventRow(r)))
  }

  /** Checks every event's HMAC (of one user, or all) with `keys`. */
  async verify(
    keys: readonly IntegrityKey[],
    options: { userId?: string } = {},
  ): Promise<EventReport> {
    const user = options.userId === undefined ? [] : [options.userId]
    return verifyPages(
      keys,
      async (after) => {
        const { rows } = await this.#pool
          .query(
            `SELECT ${COLUMNS} FROM ${this.#s}.events WHERE id > $1${user.length > 0 ? ' AND user_id = $2' : ''} ORDER BY id LIMIT ${VERIFY_PAGE}`,
            [after, ...user],
          )
          .catch((error: unknown) => {
            throw unavailable(error, 'verifying events')
          })
        return rows.map(eventRow)
      },
      '00000000-0000-0000-0000-000000000000',
    )
  }

  /** Ends the pool the store made (one it was given is the caller's to end). */
  async close(): Promise<void> {
    if (this.#own) await this.#pool.end()
  }
}
