import { hostname } from 'node:os'
import { AgentFsError, type Queryable, viaSubqueries } from '@agentfs/core'
import { fromJson } from './json.js'
import { nsToMs, type TimeInput } from './model.js'

/**
 * Two-phase tool calls (`agentfs_tool_call_pending`): a call is recorded as under way when it
 * starts, in a transaction of its own, and the row is deleted in the transaction that writes the
 * call's `tool_calls` row. A process that dies mid-call leaves its row: `pending()` lists it and
 * `reconcile({ olderThan })` records it as failed (seed 003's pending → committed / failed).
 */

/** Who started a call: this host and process. */
export const OWNER = `${hostname()}:${process.pid}`

/** What `start` records. */
export interface StartInput {
  readonly name: string
  readonly parameters?: unknown
  /** Default: now. */
  readonly startedAt?: TimeInput
  readonly sessionId?: string
  readonly parentId?: number
  /** The call's token (default: a new one); pass the same to `record` to complete the call. */
  readonly callToken?: string
}

/** A call under way, or abandoned by a process that died. */
export interface PendingToolCall {
  /** Its call token: the feed's changes made by the call carry it. */
  readonly token: string
  readonly name: string
  readonly parameters: unknown
  readonly sessionId: string | null
  readonly parentId: number | null
  /** ms since the epoch. */
  readonly startedAt: number
  /** `host:pid` of the process that started it. */
  readonly owner: string | null
  /** ms since it started, by the database's clock. */
  readonly ageMs: number
  /** Whether this process started it (so it is not abandoned while the process runs). */
  readonly ours: boolean
}

/** Filters of `pending`. */
export interface PendingOptions {
  /** Only calls started at least this many ms ago. */
  readonly olderThan?: number
  readonly sessionId?: string
  /** Default 100, at most 10,000. */
  readonly limit?: number
  /** Parameters kept in the payload store: `whole` (default) or the row's `stub`. */
  readonly payloads?: 'whole' | 'stub'
}

/** Options of `reconcile`. */
export interface ReconcileOptions {
  /** Calls started at least this many ms ago are taken as abandoned (required, ≥ 0). */
  readonly olderThan: number
  /** Also those this process started (default false: they may still finish). */
  readonly includeOwn?: boolean
  /** At most this many per call (default 1,000, at most 10,000). */
  readonly limit?: number
}

export interface PendingRow {
  token: string
  name: string
  parameters: string | null
  session_id: string | null
  parent_id: number | null
  started_at_ns: number | bigint
  owner: string | null
  payloads: string | null
}

export function checkLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 10_000)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `limit must be an integer from 1 to 10000, got ${limit}`,
    )
  return limit
}

export function checkAge(ms: number | undefined, what: string): bigint | undefined {
  if (ms === undefined) return undefined
  if (!Number.isFinite(ms) || ms < 0)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `${what} must be a non-negative number of ms, got ${ms}`,
    )
  return BigInt(Math.round(ms * 1e6))
}

/** Pending rows matching `options`, oldest first. */
export async function pendingRows(
  q: Queryable,
  nowNs: bigint,
  options: PendingOptions,
  owner?: string,
): Promise<PendingRow[]> {
  const limit = checkLimit(options.limit ?? 100)
  const age = checkAge(options.olderThan, 'olderThan')
  const clauses: string[] = []
  const params: Array<string | number | bigint> = []
  if (age !== undefined) {
    clauses.push('started_at_ns <= ?')
    params.push(nowNs - age)
  }
  if (options.sessionId !== undefined) {
    clauses.push('session_id = ?')
    params.push(options.sessionId)
  }
  if (owner !== undefined) {
    clauses.push('(owner IS NULL OR owner != ?)')
    params.push(owner)
  }
  const { rows } = await q.execute<PendingRow>({
    sql: `SELECT token, name, parameters, session_id, parent_id, started_at_ns, owner, payloads
FROM agentfs_tool_call_pending ${clauses.length ? `WHERE ${viaSubqueries(clauses.join(' AND '))}` : ''}
ORDER BY started_at_ns, token LIMIT (SELECT ?)`,
    params: [...params, limit],
  })
  return rows
}

export function toPending(row: PendingRow, nowNs: bigint): PendingToolCall {
  const started = BigInt(row.started_at_ns)
  return {
    token: row.token,
    name: row.name,
    parameters: fromJson(row.parameters),
    sessionId: row.session_id,
    parentId: row.parent_id,
    startedAt: nsToMs(started),
    owner: row.owner,
    ageMs: nsToMs(nowNs > started ? nowNs - started : 0n),
    ours: row.owner === OWNER,
  }
}
