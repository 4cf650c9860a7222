import { parseRefs } from '../audit/payload-store.js'
import type { Queryable } from '../driver/guard-driver.js'
import type { Check, FindRow } from './check.js'

/** Rows read per query while checking: memory stays bounded for any audit size. */
const PAGE = 1000

/** Each row of `table` (keyed by `key`) whose `payloads` column is set, a page at a time. */
async function* withRefs(
  q: Queryable,
  table: 'agentfs_tool_call_meta' | 'agentfs_tool_call_pending',
  key: 'id' | 'token',
): AsyncGenerator<{ key: string | number; payloads: string }> {
  let after: string | number | null = null
  for (;;) {
    const page: { rows: Array<{ k: string | number; payloads: string }> } = await q.execute<{
      k: string | number
      payloads: string
    }>({
      sql: `SELECT ${key} AS k, payloads FROM ${table} WHERE payloads IS NOT NULL${after === null ? '' : ` AND ${key} > ?`} ORDER BY ${key} LIMIT ${PAGE}`,
      params: after === null ? [] : [after],
    })
    for (const row of page.rows) yield { key: row.k, payloads: row.payloads }
    if (page.rows.length < PAGE) return
    after = page.rows.at(-1)!.k
  }
}

/** The payloads a row names that the store lacks, or whose chunks are not all there. */
async function missingPayloads(q: Queryable): Promise<FindRow[]> {
  const found: FindRow[] = []
  const sources = [
    ['agentfs_tool_call_meta', 'id', 'tool call'],
    ['agentfs_tool_call_pending', 'token', 'pending tool call'],
  ] as const
  for (const [table, key, what] of sources) {
    for await (const row of withRefs(q, table, key)) {
      let refs: Record<string, string>
      try {
        refs = parseRefs(row.payloads) as Record<string, string>
      } catch {
        found.push({ ino: null, detail: `${what} ${row.key}: a payloads column that is not a map` })
        continue
      }
      for (const [column, sha256] of Object.entries(refs)) {
        const { rows } = await q.execute<{ size: number; chunk_size: number; n: number }>({
          sql: 'SELECT p.size AS size, p.chunk_size AS chunk_size, (SELECT COUNT(*) FROM agentfs_payload_chunk c WHERE c.sha256 = p.sha256) AS n FROM agentfs_payload p WHERE p.sha256 = ?',
          params: [sha256],
        })
        const head = rows[0]
        if (!head)
          found.push({ ino: null, detail: `${what} ${row.key}: ${column} ${sha256} is missing` })
        else if (Number(head.n) !== Math.ceil(Number(head.size) / Number(head.chunk_size)))
          found.push({
            ino: null,
            detail: `${what} ${row.key}: ${column} ${sha256} has ${head.n} of ${Math.ceil(Number(head.size) / Number(head.chunk_size))} chunks`,
          })
      }
    }
  }
  return found
}

/** Whether a payload is named by no row (the hex digest occurs only as a value of `payloads`). */
const UNREFERENCED = `NOT EXISTS (SELECT 1 FROM agentfs_tool_call_meta m WHERE m.payloads IS NOT NULL AND instr(m.payloads, p.sha256) > 0)
  AND NOT EXISTS (SELECT 1 FROM agentfs_tool_call_pending t WHERE t.payloads IS NOT NULL AND instr(t.payloads, p.sha256) > 0)`

/**
 * The audit's payload store (`payload-store.ts`): every payload a row names is there whole
 * (not repairable: what is lost is lost; `agentfs verify` names the calls), and what no row
 * names (a call's parameters changed between its start and its record, a store written by a
 * process that died before its row) or chunks without their payload is deleted.
 */
export const PAYLOAD_CHECKS: readonly Check[] = [
  {
    rule: 'audit-payload-missing',
    repairable: false,
    find: missingPayloads,
    message: (r) => `audit payload of ${r.detail}`,
  },
  {
    rule: 'audit-payload-orphan',
    repairable: true,
    find: `SELECT NULL AS ino, p.sha256 AS detail FROM agentfs_payload p WHERE ${UNREFERENCED}`,
    message: (r) => `audit payload ${r.detail} is named by no tool call`,
    repair: `DELETE FROM agentfs_payload_chunk WHERE sha256 IN (SELECT p.sha256 FROM agentfs_payload p WHERE ${UNREFERENCED});
DELETE FROM agentfs_payload WHERE sha256 IN (SELECT p.sha256 FROM agentfs_payload p WHERE ${UNREFERENCED})`,
  },
  {
    rule: 'audit-payload-chunk',
    repairable: true,
    find: 'SELECT NULL AS ino, c.sha256 AS detail FROM agentfs_payload_chunk c LEFT JOIN agentfs_payload p ON p.sha256 = c.sha256 WHERE p.sha256 IS NULL GROUP BY c.sha256',
    message: (r) => `chunks of audit payload ${r.detail}, which is not in agentfs_payload`,
    repair:
      'DELETE FROM agentfs_payload_chunk WHERE sha256 NOT IN (SELECT sha256 FROM agentfs_payload)',
  },
]
