import {
  checkIdempotencyKey,
  claimIdempotency,
  databaseOf,
  digestArguments,
  type IdempotentReplay,
  micros,
  type Queryable,
  recordIdempotency,
  type Timestamp,
} from '@agentfs/core'
import type { RecordInput } from '@agentfs/tool-calls'
import { z } from 'zod'
import type { AgentToolsOptions, ToolOutput } from './types.js'

/** The argument every tool that changes something accepts. */
export const IDEMPOTENCY_ARGUMENT = 'idempotency_key'

const keySchema = z
  .string()
  .min(1)
  .max(256)
  .optional()
  .describe(
    'Optional: a unique id of this request (e.g. a UUID). Retrying with the same id and the same arguments returns the first answer and changes nothing; the call applies all or nothing.',
  )

/** `schema` with the optional `idempotency_key`, as models see it (objects only). */
export function withIdempotencyKey(schema: z.ZodType): z.ZodType {
  return schema instanceof z.ZodObject
    ? schema.extend({ [IDEMPOTENCY_ARGUMENT]: keySchema })
    : schema
}

/** Splits a call's input into its idempotency key (if any) and the tool's own arguments. */
export function takeIdempotencyKey(input: unknown): { key?: unknown; args: unknown } {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return { args: input }
  if (!Object.hasOwn(input, IDEMPOTENCY_ARGUMENT)) return { args: input }
  const { [IDEMPOTENCY_ARGUMENT]: key, ...args } = input as Record<string, unknown>
  return key === undefined || key === null ? { args } : { key, args }
}

/** The stores a keyed call runs on, bound to one transaction; undefined when they cannot be. */
export interface Binder {
  readonly db: Queryable
  bind(q: Queryable): Pick<AgentToolsOptions, 'fs' | 'kv'>
}

/**
 * The database the filesystem, kv store and audit log share, with a way to bind them to one
 * transaction: what a keyed call needs so its change, its record and its key commit together.
 */
export function idempotencyBinder(options: AgentToolsOptions): Binder | string {
  const db = databaseOf(options.fs)
  const fs = options.fs as { bind?: (q: Queryable) => AgentToolsOptions['fs'] }
  if (db === undefined || typeof fs.bind !== 'function')
    return 'idempotency_key needs a database filesystem (agent.fs); this one cannot apply a call atomically'
  if (options.kv && databaseOf(options.kv) !== db)
    return 'idempotency_key needs the kv store of the same database as the filesystem (agent.kv)'
  if (options.audit && databaseOf(options.audit) !== db)
    return 'idempotency_key needs the audit log of the same database as the filesystem (agent.tools)'
  const kv = options.kv
  return {
    db,
    bind: (q) => ({ fs: fs.bind!(q), ...(kv ? { kv: kv.bind(q) } : {}) }),
  }
}

/** What a keyed call stores as its result, and gives back on a retry. */
function storedOutput(output: ToolOutput): Record<string, unknown> {
  return { text: output.text, ...(output.data === undefined ? {} : { data: output.data }) }
}

function replayedOutput(replay: IdempotentReplay): ToolOutput {
  const stored = (replay.result ?? {}) as { text?: unknown; data?: unknown }
  const data =
    stored.data && typeof stored.data === 'object'
      ? (stored.data as Record<string, unknown>)
      : undefined
  return {
    text: typeof stored.text === 'string' ? stored.text : '',
    ...(data ? { data } : {}),
    replayed: true,
  }
}

/** A keyed call that failed: what the model sees, after the transaction rolled back. */
class Rollback extends Error {
  constructor(readonly output: ToolOutput) {
    super('rolled back')
  }
}

/** How {@link runIdempotent} runs and records a call. */
export interface IdempotentCall {
  readonly binder: Binder
  /** The scope keys are unique in (`tool:` and the tool's original name). */
  readonly scope: string
  /** The key the model sent (checked here: 1 to 256 characters, no control characters). */
  readonly key: unknown
  /** The tool's own arguments (without the key), as the model sent them. */
  readonly args: unknown
  readonly now: () => Timestamp
  readonly ttlMs?: number
  /** Runs the tool on stores bound to the transaction. */
  run(stores: Pick<AgentToolsOptions, 'fs' | 'kv'>): Promise<ToolOutput>
  /** Turns anything the run threw into an output. */
  failure(error: unknown): ToolOutput
  /** The call's audit record for an output (undefined without an audit log). */
  record?: (output: ToolOutput, metadata: Record<string, unknown>) => RecordInput
  readonly audit?: AgentToolsOptions['audit']
}

/**
 * Runs a keyed call once: in one transaction, the key is looked up, the tool runs on stores
 * bound to the transaction, its `tool_calls` row and the key's record are written. A retry with
 * the same key and arguments returns the first output and changes nothing; other arguments are
 * refused (IDEMPOTENCY_MISMATCH). A failing call rolls back whole (nothing half-applied) and is
 * recorded after, outside it, so the audit keeps every attempt.
 */
export async function runIdempotent(call: IdempotentCall): Promise<ToolOutput> {
  let output: ToolOutput
  let recorded = false
  let replay: IdempotentReplay | undefined
  let key = ''
  try {
    key = checkIdempotencyKey(call.key)
    // Hashed once for the claim and the record (a write's content can be megabytes).
    const digest = digestArguments(call.args)
    output = await call.binder.db.transaction(async (q) => {
      const nowUs = micros(call.now())
      replay = await claimIdempotency(q, {
        scope: call.scope,
        key,
        args: call.args,
        nowUs,
        digest,
      })
      if (replay) return replayedOutput(replay)
      let out: ToolOutput
      try {
        out = await call.run(call.binder.bind(q))
      } catch (error) {
        throw new Rollback(call.failure(error))
      }
      if (out.isError) throw new Rollback(out)
      let callId: number | undefined
      if (call.audit && call.record)
        callId = await call.audit.bind(q).record(call.record(out, { idempotencyKey: key }))
      await recordIdempotency(q, {
        scope: call.scope,
        key,
        args: call.args,
        digest,
        nowUs,
        result: storedOutput(out),
        ...(callId === undefined ? {} : { callId }),
        ...(call.ttlMs === undefined ? {} : { ttlMs: call.ttlMs }),
      })
      recorded = true
      return out
    })
  } catch (error) {
    output = error instanceof Rollback ? error.output : call.failure(error)
  }
  if (!recorded && call.audit && call.record) {
    const first = replay as IdempotentReplay | undefined
    await call.audit.record(
      call.record(output, {
        ...(key === '' ? {} : { idempotencyKey: key }),
        ...(first ? { replayOf: first.callId } : output.isError ? { rolledBack: true } : {}),
      }),
    )
  }
  return output
}
