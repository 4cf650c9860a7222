import type { ToolEnvironment } from '@agentfs/agent-tools'
import {
  claimIdempotency,
  currentActor,
  type IntegrityKey,
  isAgentFsError,
  micros,
  recordIdempotency,
} from '@agentfs/core'
import type { FileSystem } from '@agentfs/fs'
import { MemoryError } from '../errors.js'
import { feedTransactionId, lastSeq } from '../events/agentfs-store.js'
import { canonicalHash, type EventInput, eventError, type StoredEvent } from '../events/event.js'
import type { PostgresEventStore, ReconcileReport, SagaWitness } from '../events/postgres-store.js'
import {
  bindFs,
  databaseFor,
  type MemoryContext,
  type MemoryToolbeltOptions,
  readText,
  scopeKey,
} from './context.js'

/** The common fields of a write's input. */
export interface WriteMeta {
  readonly rationale?: string | undefined
  readonly override_rationale?: string | undefined
  readonly evidence_refs?: readonly string[] | undefined
  readonly agent_action_id?: string | undefined
  readonly idempotency_key?: string | undefined
}

/** A write's event before it runs (the tool fills in what it knows). */
export type Draft = Omit<EventInput, 'tool_call_id' | 'idempotency_key'>

/** What a write's body returns: its answer, and what the event records of it. */
export interface Written<T> {
  readonly value: T
  readonly event: Partial<Draft>
  readonly after_hash: string | null
  readonly line_hash: string | null
}

/** What a write of the toolbelt answers. */
export interface SagaResult<T> {
  readonly value: T
  readonly event_id: string
  readonly replayed: boolean
}

type Body<T> = (fs: FileSystem, keys: readonly IntegrityKey[]) => Promise<Written<T>>

/** The scope of the marker rows a Postgres saga leaves in the AgentFS transaction of a write. */
export const SAGA_MARKER_SCOPE = 'memory:saga'
/** Markers are kept 30 days: reconciliation within that time is exact. */
export const SAGA_MARKER_TTL_MS = 30 * 24 * 3600 * 1000

const refusedClaim = (error: unknown) =>
  isAgentFsError(error, 'IDEMPOTENCY_MISMATCH') || isAgentFsError(error, 'IDEMPOTENCY_UNTRUSTED')

/**
 * Runs a write of the toolbelt as seed 003's saga. The idempotency key (the caller's, or the
 * scope key) is claimed, `body` checks and writes, the event records it with the after-hash,
 * and the key's record keeps the answer: a retry returns the first answer and changes nothing.
 * A refused or failed write changes nothing and is recorded as a `failed` event. With events in
 * the AgentFS database all of it is one transaction; with Postgres, see {@link postgresSaga}.
 */
export async function sagaWrite<T>(
  ctx: MemoryContext,
  env: ToolEnvironment,
  draft: Draft,
  meta: WriteMeta,
  payload: unknown,
  body: Body<T>,
): Promise<SagaResult<T>> {
  if (env.readOnly) throw new MemoryError('BLOCKED', 'the filesystem is read-only here')
  const entity = `${draft.file_path ?? ''}#${draft.section_anchor ?? ''}`
  const key = meta.idempotency_key ?? scopeKey(ctx.garden.userId, draft.tool, entity, payload)
  const callToken = currentActor()?.callToken
  const input: EventInput = {
    ...draft,
    ...(callToken ? { tool_call_id: callToken } : {}),
    idempotency_key: key,
  }
  const pg = ctx.postgres()
  const run = { ctx, env, input, scope: `memory:${draft.tool}`, key, payload, body }
  return pg ? postgresSaga(await pg, run) : localSaga(run)
}

interface SagaRun<T> {
  readonly ctx: MemoryContext
  readonly env: ToolEnvironment
  readonly input: EventInput
  readonly scope: string
  readonly key: string
  readonly payload: unknown
  readonly body: Body<T>
}

function ttl(options: MemoryToolbeltOptions): { ttlMs?: number } {
  return options.idempotencyTtlMs === undefined ? {} : { ttlMs: options.idempotencyTtlMs }
}

/** Events in the AgentFS database: claim, write, event and record in one transaction. */
async function localSaga<T>(run: SagaRun<T>): Promise<SagaResult<T>> {
  const { ctx, env, input, scope, key, payload, body } = run
  const db = databaseFor(env.fs)
  const store = ctx.local(db)
  const keys = ctx.keys(db)
  let event: EventInput = input
  try {
    return await db.transaction(async (tx) => {
      const nowUs = micros(ctx.clock.now())
      const replay = await claimIdempotency(tx, { scope, key, args: payload, nowUs })
      if (replay) {
        const stored = replay.result as { value: T; event_id: string }
        return { ...stored, replayed: true }
      }
      const since_seq = await lastSeq(tx)
      const written = await body(bindFs(env.fs, tx), keys)
      event = { ...input, ...written.event }
      const recorded = await store.record(tx, event, 'committed', {
        after_hash: written.after_hash,
        line_hash: written.line_hash,
        since_seq,
      })
      const answer = { value: written.value, event_id: recorded.id }
      await recordIdempotency(tx, {
        scope,
        key,
        args: payload,
        nowUs,
        result: answer,
        ...ttl(ctx.options),
      })
      return { ...answer, replayed: false }
    })
  } catch (error) {
    // Refused or failed: nothing stayed; the attempt is an event of its own.
    if (!refusedClaim(error))
      await store.record(db, event, 'failed', { error: eventError(error) }).catch(() => undefined)
    throw error
  }
}

/**
 * Events in Postgres: two stores, so a saga. The key is claimed in Postgres (`pending`, with the
 * event id to come). Inside the AgentFS transaction of the write, a marker row names the event
 * and the event is inserted `pending` in Postgres with the hash the write will leave and the
 * answer a retry gets; the AgentFS transaction commits; then the event and its key become
 * `committed`. A write that fails or is refused rolls back and its event becomes `failed`. A
 * writer that dies between the two commits leaves a `pending` event for {@link reconcileEvents}.
 */
async function postgresSaga<T>(pg: PostgresEventStore, run: SagaRun<T>): Promise<SagaResult<T>> {
  const { ctx, env, input, scope, key, payload, body } = run
  const db = databaseFor(env.fs)
  const keys = ctx.keys(db)
  const userId = ctx.garden.userId
  const request = { userId, scope, key, args: payload, keys, ...ttl(ctx.options) }
  let claim = await pg.claim(request)
  if (claim.kind === 'stale') {
    // A writer died with this key's event pending: settle it, then look again.
    await reconcileEvents(ctx, pg, env.fs, { eventId: claim.eventId })
    claim = await pg.claim(request)
  }
  if (claim.kind === 'stale')
    throw new MemoryError(
      'BUSY',
      `the pending event of idempotency key '${key}' could not be settled; retry in a moment`,
    )
  if (claim.kind === 'replay')
    return { ...(claim.result as { value: T; event_id: string }), replayed: true }
  const eventId = claim.eventId
  let event: EventInput = input
  let pending: StoredEvent | undefined
  let afterHash: string | null = null
  let answer: { value: T; event_id: string }
  try {
    answer = await db.transaction(async (tx) => {
      const since = await lastSeq(tx)
      const written = await body(bindFs(env.fs, tx), keys)
      event = { ...input, ...written.event }
      afterHash = written.after_hash
      await recordIdempotency(tx, {
        scope: SAGA_MARKER_SCOPE,
        key: eventId,
        args: null,
        nowUs: micros(ctx.clock.now()),
        result: { event_id: eventId },
        ttlMs: SAGA_MARKER_TTL_MS,
      })
      const value = { value: written.value, event_id: eventId }
      pending = await pg.begin(
        { userId, scope, key, eventId, keys },
        event,
        { line_hash: written.line_hash, transaction_id: await feedTransactionId(tx, since) },
        value,
      )
      return value
    })
  } catch (error) {
    await pg
      .fail({ userId, eventId, keys }, event, pending, eventError(error))
      .catch(() => undefined)
    throw error
  }
  // The change is made; an event left pending here (Postgres unreachable) is settled by
  // reconciliation, so the answer stands.
  await pg.commit(pending!, keys, afterHash).catch(() => undefined)
  return { ...answer, replayed: false }
}

/**
 * Settles the user's pending Postgres events from the AgentFS side: for each, in a write
 * transaction of the database (so a writer still inside its transaction is waited for), whether
 * its marker row is there, and the file's hash now.
 */
export async function reconcileEvents(
  ctx: MemoryContext,
  pg: PostgresEventStore,
  fs: FileSystem,
  options: { eventId?: string; olderThanMs?: number } = {},
): Promise<ReconcileReport> {
  const db = databaseFor(fs)
  const witness: SagaWitness = async (event) =>
    db.transaction(async (tx) => {
      const nowUs = micros(ctx.clock.now())
      const marker = await claimIdempotency(tx, {
        scope: SAGA_MARKER_SCOPE,
        key: event.id,
        args: null,
        nowUs,
      })
      const text = event.file_path === null ? null : await readText(bindFs(fs, tx), event.file_path)
      const markerKept = event.created_us > nowUs - SAGA_MARKER_TTL_MS * 1000
      return {
        committed: marker ? true : markerKept ? false : undefined,
        hash: text === null ? null : canonicalHash(text),
      }
    })
  return pg.reconcile(ctx.garden.userId, ctx.keys(db), witness, options)
}
