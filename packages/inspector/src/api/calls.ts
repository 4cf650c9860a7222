import type { Change } from '@agentfs/core'
import type { ToolCall, ToolStats } from '@agentfs/tool-calls'
import type { Inspection } from '../context.js'
import { HttpError, LIMITS } from '../limits.js'

/** A call as the timeline draws it: no parameters or results (those come with `/api/calls/:id`). */
export interface TimelineCall {
  readonly id: number
  readonly name: string
  readonly status: 'success' | 'error' | 'pending'
  readonly startedAt: number
  readonly durationMs: number | null
  readonly sessionId: string | null
  readonly parentId: number | null
  /** The error's first line, at most 200 characters. */
  readonly error: string | null
}

/** Filters of the timeline. */
export interface CallFilters {
  readonly sessionId?: string | undefined
  readonly name?: string | undefined
  readonly errorsOnly?: boolean | undefined
  readonly since?: number | undefined
  readonly until?: number | undefined
}

/** A call in full, with the changes it made (at most `LIMITS.callChanges`). */
export interface CallDetail {
  readonly call: ToolCall
  readonly changes: Change[]
  readonly moreChanges: boolean
  /**
   * True when a parameter, result or error was over `LIMITS.payloadBytes`: the call then shows
   * the stubs (`{ $agentfs_payload: { sha256, bytes, preview } }`); `agentfs timeline --full`
   * prints them whole.
   */
  readonly payloadsCut: boolean
}

/** The size of a payload stub (`$agentfs_payload`), or 0 for a value kept in the row. */
function stubBytes(value: unknown): number {
  const stub = (value as { $agentfs_payload?: { bytes?: unknown } } | null)?.$agentfs_payload
  return typeof stub?.bytes === 'number' ? stub.bytes : 0
}

/** One session's summary. */
export interface SessionSummary {
  readonly sessionId: string | null
  readonly calls: number
  readonly errors: number
  /** Distinct paths its changes touched. */
  readonly files: number
  readonly changes: number
  /** Sum of the sizes its written files had after each content change. */
  readonly bytesWritten: number
  readonly firstAt: number | null
  readonly lastAt: number | null
}

/** Calls over time: `buckets` of `width` ms from `start`. */
export interface CallsOverTime {
  readonly start: number
  readonly width: number
  readonly buckets: { readonly calls: number; readonly errors: number }[]
}

const firstLine = (error: string | null) =>
  error === null ? null : (error.split('\n')[0] ?? '').slice(0, 200)

/** The calls in start order (oldest first), filtered, a page of `limit` from `offset`. */
export async function timeline(
  ins: Inspection,
  filters: CallFilters,
  limit: number,
  offset: number,
): Promise<{ calls: TimelineCall[]; more: boolean }> {
  const rows = await ins.agent.tools.query({
    order: 'oldest',
    limit: limit + 1,
    offset,
    payloads: 'stub',
    ...(filters.sessionId === undefined ? {} : { sessionId: filters.sessionId }),
    ...(filters.name === undefined ? {} : { name: filters.name }),
    ...(filters.errorsOnly ? { errorsOnly: true } : {}),
    ...(filters.since === undefined ? {} : { since: filters.since }),
    ...(filters.until === undefined ? {} : { until: filters.until }),
  })
  const calls = rows.slice(0, limit).map((c) => ({
    id: c.id,
    name: c.name,
    status: c.status,
    startedAt: c.startedAt,
    durationMs: c.durationMs,
    sessionId: c.sessionId,
    parentId: c.parentId,
    error: firstLine(c.error),
  }))
  return { calls, more: rows.length > limit }
}

/** One call, whole, and its changes (those of paths the policy hides left out). */
export async function callDetail(ins: Inspection, id: number): Promise<CallDetail> {
  const stubbed = await ins.agent.tools.get(id, { payloads: 'stub' })
  if (!stubbed) throw new HttpError(404, `no tool call #${id}`)
  // Large payloads are read whole only when they fit the answer's budget.
  const payloadsCut =
    stubbed.payloads !== undefined &&
    [stubbed.parameters, stubbed.result, stubbed.error].some(
      (v) => stubBytes(v) > LIMITS.payloadBytes,
    )
  const call =
    stubbed.payloads === undefined || payloadsCut
      ? stubbed
      : ((await ins.agent.tools.get(id)) ?? stubbed)
  const page = await ins.agent.changes.since(0, { toolCallId: id, limit: LIMITS.callChanges })
  return {
    call,
    changes: page.changes.filter((c) => visible(ins, c)),
    moreChanges: page.changes.length === LIMITS.callChanges,
    payloadsCut,
  }
}

/** Whether a change's paths may be shown under the policy (kv changes always). */
export function visible(ins: Inspection, c: Change): boolean {
  if (c.op.startsWith('kv-')) return true
  return ins.readable(c.path) && ins.readable(c.path2)
}

/** Per-session summaries, most recent first, at most `limit`. */
export async function sessions(ins: Inspection, limit: number): Promise<SessionSummary[]> {
  const q = ins.agent.db
  const { rows: changeRows } = await q.execute<{
    session_id: string | null
    files: number
    changes: number
    bytes: number | null
    first_us: number | null
    last_us: number | null
  }>({
    sql: `SELECT session_id, count(DISTINCT CASE WHEN op NOT LIKE 'kv-%' THEN path END) AS files,
  count(*) AS changes,
  sum(CASE WHEN op IN ('create', 'write', 'truncate') THEN coalesce(size, 0) ELSE 0 END) AS bytes,
  min(at_us) AS first_us, max(at_us) AS last_us
FROM agentfs_change GROUP BY session_id`,
  })
  const { rows: callRows } = await q.execute<{
    session_id: string | null
    calls: number
    errors: number
    first_ms: number | null
    last_ms: number | null
  }>({
    sql: `SELECT m.session_id AS session_id, count(*) AS calls,
  sum(CASE WHEN t.error IS NOT NULL THEN 1 ELSE 0 END) AS errors,
  min(t.started_at) * 1000 AS first_ms, max(t.completed_at) * 1000 AS last_ms
FROM tool_calls t LEFT JOIN agentfs_tool_call_meta m ON m.id = t.id GROUP BY m.session_id`,
  })
  const byId = new Map<string | null, SessionSummary>()
  const empty = (sessionId: string | null): SessionSummary => ({
    sessionId,
    calls: 0,
    errors: 0,
    files: 0,
    changes: 0,
    bytesWritten: 0,
    firstAt: null,
    lastAt: null,
  })
  const min = (a: number | null, b: number | null) =>
    a === null ? b : b === null ? a : Math.min(a, b)
  const max = (a: number | null, b: number | null) =>
    a === null ? b : b === null ? a : Math.max(a, b)
  for (const r of changeRows) {
    const s = byId.get(r.session_id) ?? empty(r.session_id)
    byId.set(r.session_id, {
      ...s,
      files: r.files,
      changes: r.changes,
      bytesWritten: Number(r.bytes ?? 0),
      firstAt: min(s.firstAt, r.first_us === null ? null : Math.floor(r.first_us / 1000)),
      lastAt: max(s.lastAt, r.last_us === null ? null : Math.floor(r.last_us / 1000)),
    })
  }
  for (const r of callRows) {
    const s = byId.get(r.session_id) ?? empty(r.session_id)
    byId.set(r.session_id, {
      ...s,
      calls: r.calls,
      errors: r.errors,
      firstAt: min(s.firstAt, r.first_ms),
      lastAt: max(s.lastAt, r.last_ms),
    })
  }
  return [...byId.values()].sort((a, b) => (b.lastAt ?? 0) - (a.lastAt ?? 0)).slice(0, limit)
}

/** Per-tool statistics and calls over time (at most `LIMITS.buckets` buckets). */
export async function stats(
  ins: Inspection,
  filters: Pick<CallFilters, 'sessionId'>,
): Promise<{ tools: ToolStats[]; overTime: CallsOverTime }> {
  const tools = await ins.agent.tools.stats(
    filters.sessionId === undefined ? {} : { sessionId: filters.sessionId },
  )
  const started = 'COALESCE(m.started_at_ns / 1000000, t.started_at * 1000)'
  const where = filters.sessionId === undefined ? '' : 'WHERE m.session_id = ?'
  const params = filters.sessionId === undefined ? [] : [filters.sessionId]
  const { rows: range } = await ins.agent.db.execute<{ lo: number | null; hi: number | null }>({
    sql: `SELECT min(${started}) AS lo, max(${started}) AS hi
FROM tool_calls t LEFT JOIN agentfs_tool_call_meta m ON m.id = t.id ${where}`,
    params,
  })
  const lo = range[0]?.lo ?? null
  const hi = range[0]?.hi ?? null
  if (lo === null || hi === null) return { tools, overTime: { start: 0, width: 0, buckets: [] } }
  const width = Math.max(1, Math.ceil((Number(hi) - Number(lo) + 1) / LIMITS.buckets))
  const { rows } = await ins.agent.db.execute<{ b: number; calls: number; errors: number }>({
    sql: `SELECT CAST((${started} - ?) / ? AS INTEGER) AS b, count(*) AS calls,
  sum(CASE WHEN t.error IS NOT NULL THEN 1 ELSE 0 END) AS errors
FROM tool_calls t LEFT JOIN agentfs_tool_call_meta m ON m.id = t.id ${where} GROUP BY b ORDER BY b`,
    params: [Number(lo), width, ...params],
  })
  const count = Math.min(LIMITS.buckets, Math.floor((Number(hi) - Number(lo)) / width) + 1)
  const buckets = Array.from({ length: count }, () => ({ calls: 0, errors: 0 }))
  for (const r of rows) {
    const bucket = buckets[Math.min(count - 1, Math.max(0, r.b))]
    if (bucket) {
      bucket.calls += r.calls
      bucket.errors += r.errors
    }
  }
  return { tools, overTime: { start: Number(lo), width, buckets } }
}
