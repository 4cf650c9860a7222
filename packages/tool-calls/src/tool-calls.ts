import { randomUUID } from 'node:crypto'
import {
  type AgentDatabase,
  AgentFsError,
  budgetRefusal,
  type Clock,
  digestStub,
  exceedsInline,
  executeDeferred,
  explicitId,
  explicitIds,
  externalize,
  type IdSource,
  insertedRowid,
  PAYLOAD_ROOM_PARAMS,
  PAYLOAD_ROOM_SQL,
  type PayloadUsage,
  payloadUsage,
  placeholders,
  type Queryable,
  runInOrder,
  STORE_DATABASE,
  type Statement,
  setPayloadBudget,
  withActor,
} from '@agentfs/core'
import { errorMessage, toJson, toJsonLenient } from './json.js'
import {
  type CallRow,
  NS,
  type QueryOptions,
  type RecordInput,
  type TimeInput,
  type ToolCall,
  type ToolStats,
  type TrackOptions,
  toCall,
  toNs,
} from './model.js'
import { AuditFullError, checkMode, type PayloadMode, resolvePayloads } from './payloads.js'
import {
  checkAge,
  checkLimit,
  OWNER,
  type PendingOptions,
  type PendingToolCall,
  pendingRows,
  type ReconcileOptions,
  type StartInput,
  toPending,
} from './pending.js'
import { callFilters, type StatsRow, selectCalls, statsSql, toStats } from './queries.js'

const timestamp = (ns: bigint) => ({ sec: Number(ns / NS), nsec: Number(ns % NS) })

const CALL_COLUMNS = 'name, parameters, result, error, started_at, completed_at, duration_ms'
/**
 * The call row's insert, built once per shape (the driver finds its prepared statement by the
 * text): without and with a chosen id, then the same with the reference's `status` column.
 */
const INSERT_META =
  'INSERT INTO agentfs_tool_call_meta (id, session_id, parent_id, started_at_ns, completed_at_ns, metadata, call_token, payloads) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'
const END_PENDING = 'DELETE FROM agentfs_tool_call_pending WHERE token = ?'
const INSERT_CALL = [
  CALL_COLUMNS,
  `id, ${CALL_COLUMNS}`,
  `${CALL_COLUMNS}, status`,
  `id, ${CALL_COLUMNS}, status`,
].map(
  (names) => `INSERT INTO tool_calls (${names}) VALUES (${placeholders(names.split(',').length)})`,
)

/**
 * The spec's insert-only tool-call audit log (`tool_calls`): one row per completed call, with
 * precise timing, session, parent and metadata in the extension table `agentfs_tool_call_meta`
 * (same id), so spec readers still see plain spec rows.
 */
interface ToolCallsOptions {
  readonly referenceToolCalls: boolean
  readonly sessionId?: string
  /** Source of the tokens that tie a call to its changes in the feed. */
  readonly ids?: IdSource
}

export class ToolCalls {
  readonly #q: Queryable
  readonly #clock: Clock
  readonly #reference: boolean
  readonly #sessionId: string | undefined
  readonly #ids: IdSource | undefined

  /** @internal Use {@link createToolCalls}. */
  constructor(q: Queryable, clock: Clock, options: ToolCallsOptions) {
    this.#q = q
    this.#clock = clock
    this.#reference = options.referenceToolCalls
    this.#sessionId = options.sessionId
    this.#ids = options.ids
  }

  /** The session recorded on calls that do not name one. */
  get sessionId(): string | undefined {
    return this.#sessionId
  }

  /** The same log, recording `sessionId` by default. */
  withSession(sessionId: string): ToolCalls {
    return new ToolCalls(this.#q, this.#clock, { ...this.#options(), sessionId })
  }

  /** The database this log runs on (see `databaseOf` of `@agentfs/core`). */
  get [STORE_DATABASE](): Queryable {
    return this.#q
  }

  /** This log running its statements on `q` (e.g. a transaction shared with the filesystem). */
  bind(q: Queryable): ToolCalls {
    return new ToolCalls(q, this.#clock, this.#options())
  }

  /** Runs `fn` with a log bound to one transaction. */
  transaction<T>(fn: (tools: ToolCalls) => Promise<T>): Promise<T> {
    return this.#q.transaction((tx) => fn(new ToolCalls(tx, this.#clock, this.#options())))
  }

  #options(): ToolCallsOptions {
    return {
      referenceToolCalls: this.#reference,
      ...(this.#sessionId === undefined ? {} : { sessionId: this.#sessionId }),
      ...(this.#ids === undefined ? {} : { ids: this.#ids }),
    }
  }

  /**
   * A new token tying a call to its changes: run the call's body inside
   * `withActor({ callToken })` and pass the same token to `record`.
   */
  callToken(): string {
    return this.#ids?.next() ?? randomUUID()
  }

  /** Inserts one completed call (spec: insert once, on completion); returns its id. */
  async record(input: RecordInput): Promise<number> {
    if (typeof input?.name !== 'string' || input.name.length === 0) {
      throw new AgentFsError('INVALID_ARGUMENT', 'A tool call needs a non-empty name')
    }
    return this.#insert(input, toJson)
  }

  async #insert(
    input: RecordInput,
    json: (value: unknown, what: string) => string,
    callToken?: string,
  ): Promise<number> {
    const start = toNs(input.startedAt, 'startedAt')
    const end = toNs(input.completedAt, 'completedAt')
    if (end < start) throw new AgentFsError('INVALID_ARGUMENT', 'completedAt is before startedAt')
    const failed = input.error !== undefined
    const parameters = input.parameters === undefined ? null : json(input.parameters, 'parameters')
    const result = failed ? null : json(input.result, 'result')
    const error = failed ? errorMessage(input.error) : null
    const metadata = input.metadata === undefined ? null : json(input.metadata, 'metadata')
    const startedSec = Number(start / NS)
    const completedSec = Number(end / NS)
    const sessionId = input.sessionId ?? this.#sessionId ?? null
    const token = input.callToken ?? callToken
    /** The metadata row and, for a call started with `start`, the end of its pending row. */
    const completion = (id: number, refs: string | null): Statement[] => {
      const meta: Statement = {
        sql: INSERT_META,
        params: [id, sessionId, input.parentId ?? null, start, end, metadata, token ?? null, refs],
      }
      // A call started with `start` is no longer under way once its row is written.
      return token === undefined ? [meta] : [meta, { sql: END_PENDING, params: [token] }]
    }
    /** The completion, queued where the transaction can (sent with its COMMIT). */
    const complete = async (tx: Queryable, id: number, refs: string | null): Promise<number> => {
      for (const statement of completion(id, refs)) await executeDeferred(tx, statement)
      return id
    }
    const callRow = (
      values: { parameters: string | null; result: string | null; error: string | null },
      chosen: number | undefined,
    ): Statement => {
      const row: Array<string | number | null> = [
        input.name,
        values.parameters,
        values.result,
        values.error,
        startedSec,
        completedSec,
        (completedSec - startedSec) * 1000,
      ]
      if (chosen !== undefined) row.unshift(chosen)
      if (this.#reference) row.push(failed ? 'error' : 'success')
      return {
        sql: INSERT_CALL[(chosen === undefined ? 0 : 1) + (this.#reference ? 2 : 0)]!,
        params: row,
      }
    }
    return this.#q.transaction((tx) => {
      // The common case (texts kept in the row, ids from the engine, an in-process engine):
      // every statement runs at once and the id is known without another one.
      if (
        !explicitIds(tx) &&
        tx.defer === undefined &&
        !(parameters !== null && exceedsInline(parameters)) &&
        !(result !== null && exceedsInline(result)) &&
        !(error !== null && exceedsInline(error))
      ) {
        const inserted = tx.executeNow?.(callRow({ parameters, result, error }, undefined))
        if (inserted?.lastInsertRowid !== undefined) {
          const id = Number(inserted.lastInsertRowid)
          const done = runInOrder(tx, completion(id, null))
          return done instanceof Promise ? done.then(() => id) : Promise.resolve(id)
        }
        if (inserted !== undefined)
          return insertedRowid(tx, inserted).then((id) => complete(tx, id, null))
      }
      return (async () => {
        // Texts over 64 KiB are kept whole in the payload store; the row keeps a stub.
        const moved = await externalize(tx, { parameters, result, error }, end)
        const chosen = await explicitId(tx, 'tool_calls')
        const insert = callRow(moved.values, chosen)
        let id: number
        if (chosen === undefined) id = await insertedRowid(tx, await tx.execute(insert))
        else {
          await executeDeferred(tx, insert)
          id = chosen
        }
        return complete(tx, id, moved.refs)
      })()
    })
  }

  /**
   * Records that a call has started, committed at once (extension table
   * `agentfs_tool_call_pending`), so a process that dies mid-call leaves a visible record.
   * Returns the call's token: run the call's body inside `withActor({ callToken })` so its
   * changes carry it, and pass it as `callToken` to `record`, which completes the call in the
   * same transaction as its `tool_calls` row. `track` does all of this.
   */
  async start(input: StartInput): Promise<string> {
    return this.#start(input, toJson)
  }

  async #start(input: StartInput, json: (value: unknown, what: string) => string) {
    if (typeof input?.name !== 'string' || input.name.length === 0)
      throw new AgentFsError('INVALID_ARGUMENT', 'A tool call needs a non-empty name')
    const token = input.callToken ?? this.callToken()
    const started = toNs(input.startedAt ?? this.#clock.now(), 'startedAt')
    const parameters = input.parameters === undefined ? null : json(input.parameters, 'parameters')
    const sessionId = input.sessionId ?? this.#sessionId ?? null
    const need =
      parameters !== null && exceedsInline(parameters) ? Buffer.byteLength(parameters) : 0
    const row = [token, input.name, parameters, sessionId, input.parentId ?? null, started, OWNER]
    // The common case, parameters that stay in the row: one statement, a transaction of its
    // own, inserts the pending row only while the store has room. Anything else (large
    // parameters, no room, a budget this statement cannot read) takes the checked path below.
    if (need === 0) {
      const fast = await this.#q.execute({
        sql: `INSERT INTO agentfs_tool_call_pending (token, name, parameters, session_id, parent_id, started_at_ns, owner)
SELECT ?, ?, ?, ?, ?, ?, ? WHERE ${PAYLOAD_ROOM_SQL}`,
        params: [...row, ...PAYLOAD_ROOM_PARAMS],
      })
      if (fast.changes === 1) return token
    }
    // Committed before the call runs (a savepoint of the caller's transaction, if any), with
    // the budget checked in the same transaction.
    const refused = await this.#q.transaction(async (tx) => {
      const usage = await payloadUsage(tx)
      const why = budgetRefusal(usage, need)
      if (why !== undefined) {
        // Recorded as refused; an input that would have gone to the store is kept as its digest.
        let kept: unknown = input.parameters
        if (need > 0) {
          kept = JSON.parse(digestStub(parameters!))
        }
        const id = await this.bind(tx).#insert(
          {
            name: input.name,
            parameters: kept,
            error: `refused before it ran: ${why}`,
            startedAt: timestamp(started),
            completedAt: this.#clock.now(),
            ...(sessionId === null ? {} : { sessionId }),
            ...(input.parentId === undefined ? {} : { parentId: input.parentId }),
            metadata: { refused: 'audit-full', used: usage.used, budget: usage.budget },
          },
          toJsonLenient,
          token,
        )
        return { id, why }
      }
      const moved = await externalize(tx, { parameters }, started)
      row[2] = moved.values.parameters
      await tx.execute({
        sql: `INSERT INTO agentfs_tool_call_pending (token, name, parameters, session_id, parent_id, started_at_ns, owner, payloads)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        params: [...row, moved.refs],
      })
      return undefined
    })
    if (refused) throw new AuditFullError(`${input.name} was refused: ${refused.why}`, refused.id)
    return token
  }

  /** Bytes in the payload store and the database's budget. */
  usage(): Promise<PayloadUsage> {
    return payloadUsage(this.#q)
  }

  /**
   * Sets the database's payload budget in bytes (null: unlimited). Calls are refused before
   * they run once the store holds this much; what a call that ran returns is always kept whole.
   */
  setBudget(bytes: number | null): Promise<void> {
    return this.#q.transaction((tx) => setPayloadBudget(tx, bytes))
  }

  /** Calls under way, or abandoned by a process that died, oldest first. */
  async pending(options: PendingOptions = {}): Promise<PendingToolCall[]> {
    const now = toNs(this.#clock.now(), 'now')
    const mode = checkMode(options.payloads)
    const calls: PendingToolCall[] = []
    for (const row of await pendingRows(this.#q, now, options)) {
      await resolvePayloads(this.#q, row, mode)
      calls.push(toPending(row, now))
    }
    return calls
  }

  /**
   * Records calls started at least `olderThan` ms ago and never completed as failed
   * ("abandoned"), in one transaction: each gets its `tool_calls` row (with the parameters,
   * session and token it started with, so the changes it made stay attributed to it) and leaves
   * the pending table. Calls this process started are left alone unless `includeOwn`. Returns
   * the new rows' ids, oldest call first.
   */
  async reconcile(options: ReconcileOptions): Promise<number[]> {
    if (checkAge(options?.olderThan, 'olderThan') === undefined)
      throw new AgentFsError('INVALID_ARGUMENT', 'reconcile needs olderThan (ms)')
    const limit = checkLimit(options.limit ?? 1000)
    return this.#q.transaction(async (tx) => {
      const now = toNs(this.#clock.now(), 'now')
      const rows = await pendingRows(
        tx,
        now,
        { olderThan: options.olderThan, limit },
        options.includeOwn ? undefined : OWNER,
      )
      const log = this.bind(tx)
      const ids: number[] = []
      for (const row of rows) {
        await resolvePayloads(tx, row)
        const call = toPending(row, now)
        ids.push(
          await log.#insert(
            {
              name: call.name,
              parameters: call.parameters ?? undefined,
              error: `abandoned: started by ${call.owner ?? 'an unknown process'} and never completed (reconciled after ${Math.round(call.ageMs)} ms)`,
              startedAt: timestamp(BigInt(row.started_at_ns)),
              completedAt: timestamp(now),
              ...(call.sessionId === null ? {} : { sessionId: call.sessionId }),
              ...(call.parentId === null ? {} : { parentId: call.parentId }),
              metadata: { abandoned: true, owner: call.owner },
              callToken: call.token,
            },
            toJsonLenient,
          ),
        )
      }
      return ids
    })
  }

  /**
   * Runs `fn`, times it, records it once — success or failure — and returns its result or
   * rethrows its error. Parameters and results that are not JSON are described, never fatal.
   */
  /** The clock calls are timed with (the database's; nanosecond resolution by default). */
  get clock(): Clock {
    return this.#clock
  }

  async track<T>(
    name: string,
    parameters: unknown,
    fn: () => T | Promise<T>,
    options: TrackOptions = {},
  ): Promise<T> {
    const startedAt = this.#clock.now()
    const sessionId = options.sessionId ?? this.#sessionId
    // Visible as under way from here; what `fn` changes is attributed to this call in the feed.
    const callToken = await this.#start(
      {
        name,
        parameters,
        startedAt,
        ...(sessionId === undefined ? {} : { sessionId }),
        ...(options.parentId === undefined ? {} : { parentId: options.parentId }),
      },
      toJsonLenient,
    )
    const actor = { sessionId, callToken }
    let outcome: { ok: true; value: T } | { ok: false; error: unknown }
    try {
      outcome = { ok: true, value: await withActor(actor, fn) }
    } catch (error) {
      outcome = { ok: false, error }
    }
    // Recorded exactly once, outside the try: a failure to record is not mistaken for a tool error.
    await this.#insert(
      {
        name,
        parameters,
        ...(outcome.ok ? { result: outcome.value } : { error: outcome.error }),
        startedAt,
        completedAt: this.#clock.now(),
        ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
        ...(options.parentId === undefined ? {} : { parentId: options.parentId }),
        ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
      },
      toJsonLenient,
      callToken,
    )
    if (!outcome.ok) throw outcome.error
    return outcome.value
  }

  /** Wraps a function so every call is tracked (parameters: the single argument, or the list). */
  wrap<A extends unknown[], R>(
    name: string,
    fn: (...args: A) => R | Promise<R>,
    options: TrackOptions = {},
  ) {
    return (...args: A): Promise<R> =>
      this.track(name, args.length === 1 ? args[0] : args, () => fn(...args), options)
  }

  /** One call by id (payloads as `query` returns them). */
  async get(
    id: number,
    options: Pick<QueryOptions, 'payloads'> = {},
  ): Promise<ToolCall | undefined> {
    const mode = checkMode(options.payloads)
    // The id bound through a subquery (ARCHITECTURE.md, "Statement shapes").
    const { rows } = await this.#q.execute<CallRow>({
      sql: `${selectCalls(this.#reference)} WHERE t.id = (SELECT ?)`,
      params: [id],
    })
    return rows[0] && this.#toCall(rows[0], mode)
  }

  async #toCall(row: CallRow, mode: PayloadMode): Promise<ToolCall> {
    const refs = await resolvePayloads(this.#q, row, mode)
    const call = toCall(row)
    return Object.keys(refs).length > 0 ? { ...call, payloads: refs } : call
  }

  /** Calls matching every filter, newest first by default. */
  async query(options: QueryOptions = {}): Promise<ToolCall[]> {
    const limit = checkLimit(options.limit ?? 100)
    const offset = options.offset ?? 0
    const mode = checkMode(options.payloads)
    const { where, params } = callFilters(options)
    const direction = options.order === 'oldest' ? 'ASC' : 'DESC'
    const { rows } = await this.#q.execute<CallRow>({
      sql: `${selectCalls(this.#reference)} ${where}
ORDER BY COALESCE(m.started_at_ns, t.started_at * 1000000000) ${direction}, t.id ${direction} LIMIT (SELECT ?) OFFSET (SELECT ?)`,
      params: [...params, limit, offset],
    })
    const calls: ToolCall[] = []
    for (const row of rows) calls.push(await this.#toCall(row, mode))
    return calls
  }

  /** Calls of one tool, newest first (spec: "Query Tool Calls by Name"). */
  byName(name: string, options: Omit<QueryOptions, 'name'> = {}): Promise<ToolCall[]> {
    return this.query({ ...options, name })
  }

  /** Calls started at or after `time`, newest first (spec: "Query Recent Tool Calls"). */
  since(time: TimeInput, options: Omit<QueryOptions, 'since'> = {}): Promise<ToolCall[]> {
    return this.query({ ...options, since: time })
  }

  /** Calls of one session, oldest first (a conversation's timeline). */
  bySession(sessionId: string, options: Omit<QueryOptions, 'sessionId'> = {}): Promise<ToolCall[]> {
    return this.query({ order: 'oldest', ...options, sessionId })
  }

  /** The latest `limit` calls. */
  recent(limit = 20): Promise<ToolCall[]> {
    return this.query({ limit })
  }

  /** Per-tool totals, average and p50/p95 durations (nearest rank), most-called first. */
  async stats(
    options: Pick<QueryOptions, 'since' | 'until' | 'sessionId'> = {},
  ): Promise<ToolStats[]> {
    const { where, params } = callFilters(options)
    const { rows } = await this.#q.execute<StatsRow>({
      sql: statsSql(this.#reference, where),
      params,
    })
    return rows.map(toStats)
  }
}

/**
 * Creates the tool-call log over an open AgentFS database.
 *
 * @example
 * const tools = createToolCalls(await openDatabase({ driver }), { sessionId: 'chat-42' })
 * const text = await tools.track('read_file', { path }, () => fs.readFile(path, 'utf8'))
 */
export function createToolCalls(
  db: AgentDatabase,
  options: { sessionId?: string } = {},
): ToolCalls {
  return new ToolCalls(db, db.clock, {
    referenceToolCalls: db.referenceToolCalls,
    ids: db.ids,
    ...options,
  })
}
