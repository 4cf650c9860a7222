import { viaSubqueries } from '@agentfs/core'
import { NS, type QueryOptions, type ToolStats, toNs } from './model.js'

/** The SQL of the log's reads: calls with their metadata, filters, and per-tool statistics. */

const STATUS = "CASE WHEN t.error IS NULL THEN 'success' ELSE 'error' END"
/** The status column: the reference SDK's own, or derived from the spec's columns. */
const statusOf = (reference: boolean) => (reference ? 't.status' : STATUS)

/** Calls with their metadata (`agentfs_tool_call_meta`), as `CallRow`s. */
export function selectCalls(reference: boolean): string {
  return `SELECT t.id AS id, t.name AS name, t.parameters AS parameters, t.result AS result, t.error AS error,
  ${statusOf(reference)} AS status, t.started_at AS started_at, t.completed_at AS completed_at, t.duration_ms AS duration_ms,
  m.session_id AS session_id, m.parent_id AS parent_id, m.started_at_ns AS started_at_ns,
  m.completed_at_ns AS completed_at_ns, m.metadata AS metadata, m.payloads AS payloads
FROM tool_calls t LEFT JOIN agentfs_tool_call_meta m ON m.id = t.id`
}

/** The WHERE clause of `options`' filters, over `t` (tool_calls) and `m` (its metadata). */
export function callFilters(options: QueryOptions): {
  where: string
  params: Array<string | number | bigint>
} {
  const clauses: string[] = []
  const params: Array<string | number | bigint> = []
  const startNs = 'COALESCE(m.started_at_ns, t.started_at * 1000000000)'
  if (options.name !== undefined) {
    clauses.push('t.name = ?')
    params.push(options.name)
  }
  if (options.since !== undefined) {
    const ns = toNs(options.since, 'since')
    // The coarse bound uses the spec's started_at index; the precise one refines it.
    clauses.push(`t.started_at >= ? AND ${startNs} >= ?`)
    params.push(Number(ns / NS), ns)
  }
  if (options.until !== undefined) {
    const ns = toNs(options.until, 'until')
    clauses.push(`t.started_at <= ? AND ${startNs} < ?`)
    params.push(Number(ns / NS), ns)
  }
  if (options.sessionId !== undefined) {
    clauses.push('m.session_id = ?')
    params.push(options.sessionId)
  }
  if (options.parentId !== undefined) {
    clauses.push('m.parent_id = ?')
    params.push(options.parentId)
  }
  if (options.errorsOnly) clauses.push('t.error IS NOT NULL')
  // Values bound through subqueries (ARCHITECTURE.md, "Statement shapes").
  return { where: clauses.length ? `WHERE ${viaSubqueries(clauses.join(' AND '))}` : '', params }
}

export interface StatsRow {
  name: string
  total_calls: number
  successful: number
  failed: number
  pending: number
  avg_duration_ms: number | null
  p50: number | null
  p95: number | null
}

/**
 * Per-tool totals and nearest-rank p50/p95 durations of the calls `where` selects. The
 * percentiles come from one grouped pass over the ranked rows, joined to the totals: no
 * correlated subquery (the Turso engine 0.7 answers that shape wrongly).
 */
export function statsSql(reference: boolean, where: string): string {
  return `WITH d AS (
  SELECT t.name AS name, ${statusOf(reference)} AS status,
    CASE WHEN m.completed_at_ns IS NOT NULL THEN (m.completed_at_ns - m.started_at_ns) / 1000000.0 ELSE t.duration_ms END AS ms
  FROM tool_calls t LEFT JOIN agentfs_tool_call_meta m ON m.id = t.id ${where}
), ranked AS (
  SELECT name, ms, ROW_NUMBER() OVER (PARTITION BY name ORDER BY ms) AS rn, COUNT(*) OVER (PARTITION BY name) AS n
  FROM d WHERE status != 'pending' AND ms IS NOT NULL
), pct AS (
  SELECT name,
    MAX(CASE WHEN rn = (n * 50 + 99) / 100 THEN ms END) AS p50,
    MAX(CASE WHEN rn = (n * 95 + 99) / 100 THEN ms END) AS p95
  FROM ranked GROUP BY name
), agg AS (
  SELECT name, COUNT(*) AS total_calls,
    SUM(CASE WHEN status = 'success' THEN 1 ELSE 0 END) AS successful,
    SUM(CASE WHEN status = 'error' THEN 1 ELSE 0 END) AS failed,
    SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END) AS pending,
    AVG(CASE WHEN status != 'pending' THEN ms END) AS avg_duration_ms
  FROM d GROUP BY name
)
SELECT agg.name AS name, agg.total_calls AS total_calls, agg.successful AS successful,
  agg.failed AS failed, agg.pending AS pending, agg.avg_duration_ms AS avg_duration_ms,
  pct.p50 AS p50, pct.p95 AS p95
FROM agg LEFT JOIN pct ON pct.name = agg.name ORDER BY agg.total_calls DESC, agg.name ASC`
}

export const toStats = (row: StatsRow): ToolStats => ({
  name: row.name,
  totalCalls: row.total_calls,
  successful: row.successful,
  failed: row.failed,
  pending: row.pending,
  avgDurationMs: row.avg_duration_ms,
  p50DurationMs: row.p50,
  p95DurationMs: row.p95,
})
