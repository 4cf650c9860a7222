import { AgentFsError, type PayloadRefs, type Timestamp } from '@agentfs/core'
import { fromJson } from './json.js'

/** A point in time: ms since the epoch (fractions allowed), a Date, or a {sec, nsec} timestamp. */
export type TimeInput = number | Date | Timestamp

/** What `record` stores. Exactly one of `result` and `error` describes the outcome. */
export interface RecordInput {
  readonly name: string
  readonly parameters?: unknown
  /** The successful result (JSON); ignored when `error` is given. */
  readonly result?: unknown
  /** Set for a failed call: an Error, or a message. */
  readonly error?: unknown
  readonly startedAt: TimeInput
  readonly completedAt: TimeInput
  readonly sessionId?: string
  /** Id of the tool call this one ran inside. */
  readonly parentId?: number
  /** Extra JSON metadata (tokens, cost, sizes, …). */
  readonly metadata?: unknown
  /**
   * The token the call's changes carry in the change feed (from `callToken()`, set around the
   * call's body with `withActor`), so the feed names this call as their author.
   */
  readonly callToken?: string
}

/** Options shared by `track` and `wrap`. */
export interface TrackOptions {
  readonly sessionId?: string
  readonly parentId?: number
  readonly metadata?: unknown
}

/** One recorded call as read back. */
export interface ToolCall {
  readonly id: number
  readonly name: string
  readonly parameters: unknown
  readonly result: unknown
  readonly error: string | null
  /** `pending` only for calls another SDK started and never finished. */
  readonly status: 'success' | 'error' | 'pending'
  /** ms since the epoch; sub-second precise when recorded by this library. */
  readonly startedAt: number
  readonly completedAt: number | null
  /** Precise duration in ms when known, else the spec's `duration_ms`. */
  readonly durationMs: number | null
  readonly sessionId: string | null
  readonly parentId: number | null
  readonly metadata: unknown
  /**
   * The columns kept whole in the payload store (over 64 KiB), by SHA-256; absent when none
   * was. With `payloads: 'stub'` the values are the row's stubs, else the whole texts.
   */
  readonly payloads?: PayloadRefs
}

/** Filters of `query`; every filter is applied in SQL before the limit. */
export interface QueryOptions {
  readonly name?: string
  /** Only calls started at or after this time. */
  readonly since?: TimeInput
  /** Only calls started before this time. */
  readonly until?: TimeInput
  readonly sessionId?: string
  readonly parentId?: number
  /** Only failed calls. */
  readonly errorsOnly?: boolean
  /** Newest first (default) or oldest first. */
  readonly order?: 'newest' | 'oldest'
  /** Default 100, at most 10,000. */
  readonly limit?: number
  readonly offset?: number
  /**
   * Parameters, results and errors over 64 KiB are kept in the payload store: `whole`
   * (default) reads them back, checked against their SHA-256; `stub` returns the row's stub
   * (`{ $agentfs_payload: { sha256, bytes, preview } }`) without reading them.
   */
  readonly payloads?: 'whole' | 'stub'
}

/** Per-tool statistics (the spec's "Analyze Tool Performance", plus percentiles). */
export interface ToolStats {
  readonly name: string
  readonly totalCalls: number
  readonly successful: number
  readonly failed: number
  readonly pending: number
  readonly avgDurationMs: number | null
  readonly p50DurationMs: number | null
  readonly p95DurationMs: number | null
}

export interface CallRow {
  id: number
  name: string
  parameters: string | null
  result: string | null
  error: string | null
  status: string
  started_at: number
  completed_at: number | null
  duration_ms: number | null
  session_id: string | null
  parent_id: number | null
  started_at_ns: number | bigint | null
  completed_at_ns: number | bigint | null
  metadata: string | null
  payloads: string | null
}

export const NS = 1_000_000_000n

export function toNs(time: TimeInput, what: string): bigint {
  if (time instanceof Date) time = time.getTime()
  if (typeof time === 'number') {
    if (!Number.isFinite(time))
      throw new AgentFsError('INVALID_ARGUMENT', `${what} must be a finite time`)
    const ms = Math.floor(time)
    return BigInt(ms) * 1_000_000n + BigInt(Math.round((time - ms) * 1e6))
  }
  if (
    typeof time === 'object' &&
    time !== null &&
    Number.isInteger(time.sec) &&
    Number.isInteger(time.nsec)
  ) {
    return BigInt(time.sec) * NS + BigInt(time.nsec)
  }
  throw new AgentFsError(
    'INVALID_ARGUMENT',
    `${what} must be ms since the epoch, a Date or { sec, nsec }`,
  )
}

export const nsToMs = (ns: bigint) => Number(ns / 1_000_000n) + Number(ns % 1_000_000n) / 1e6

export function toCall(row: CallRow): ToolCall {
  const startNs = row.started_at_ns === null ? null : BigInt(row.started_at_ns)
  const endNs = row.completed_at_ns === null ? null : BigInt(row.completed_at_ns)
  const status =
    row.status === 'pending' || row.status === 'error' || row.status === 'success'
      ? row.status
      : row.error === null
        ? 'success'
        : 'error'
  return {
    id: row.id,
    name: row.name,
    parameters: fromJson(row.parameters),
    result: fromJson(row.result),
    error: row.error,
    status,
    startedAt: startNs === null ? row.started_at * 1000 : nsToMs(startNs),
    completedAt:
      endNs !== null ? nsToMs(endNs) : row.completed_at === null ? null : row.completed_at * 1000,
    durationMs: startNs !== null && endNs !== null ? nsToMs(endNs - startNs) : row.duration_ms,
    sessionId: row.session_id,
    parentId: row.parent_id,
    metadata: fromJson(row.metadata),
  }
}
