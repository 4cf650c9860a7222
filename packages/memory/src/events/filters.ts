import type { IntegrityKey } from '@agentfs/core'
import { MemoryError } from '../errors.js'
import { type EventStatus, eventVerifies, SEALED_COLUMNS, type StoredEvent } from './event.js'

/** Filters of an event store's `query` (all optional; newest first). */
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

/** One event an event store's `verify` could not vouch for. */
export interface EventIssue {
  readonly id: string
  readonly kind: 'changed' | 'unknown-key'
  readonly message: string
}

/** What an event store's `verify` found. */
export interface EventReport {
  readonly ok: boolean
  readonly checked: number
  /** Events whose HMAC does not verify: changed since written, or not written with a given key. */
  readonly issues: readonly EventIssue[]
}

/** Every stored column of an event, in order: the sealed ones, then the seal's two. */
export const EVENT_COLUMNS = [
  ...SEALED_COLUMNS,
  'integrity_hmac',
  'integrity_salt_version',
] as const

const EQUAL = [
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
/** Issues a report names at most. */
export const MAX_ISSUES = 100

/**
 * `filters` checked and turned into conditions on the columns: `placeholder(n)` spells the
 * n-th parameter (`?` for SQLite, `$n` for Postgres).
 */
export function filterSql(
  filters: EventFilters,
  placeholder: (n: number) => string,
): { where: string; params: unknown[]; limit: number } {
  const limit = filters.limit ?? 100
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `limit must be a whole number 1 … ${MAX_LIMIT}, got ${limit}`,
    )
  const where: string[] = []
  const params: unknown[] = []
  for (const f of EQUAL) {
    const value = filters[f]
    if (value === undefined) continue
    if (typeof value !== 'string')
      throw new MemoryError('INVALID_ARGUMENT', `filter ${f} must be a string`)
    params.push(value)
    where.push(`${f} = ${placeholder(params.length)}`)
  }
  for (const [f, op] of [
    ['since_us', '>='],
    ['until_us', '<'],
  ] as const) {
    const value = filters[f]
    if (value === undefined) continue
    if (!Number.isSafeInteger(value))
      throw new MemoryError('INVALID_ARGUMENT', `${f} must be a whole number of microseconds`)
    params.push(value)
    where.push(`created_us ${op} ${placeholder(params.length)}`)
  }
  return { where: where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '', params, limit }
}

/** The issue of a row no key in `keys` verifies, or undefined when one does. */
export function eventIssue(
  keys: readonly IntegrityKey[],
  row: StoredEvent,
): EventIssue | undefined {
  if (eventVerifies(keys, row)) return undefined
  return keys.some((k) => k.id === row.integrity_salt_version)
    ? {
        id: row.id,
        kind: 'changed',
        message: `event ${row.id} (${row.op} ${row.file_path ?? ''}) was changed after it was written`,
      }
    : {
        id: row.id,
        kind: 'unknown-key',
        message: `event ${row.id} is sealed with key ${JSON.stringify(row.integrity_salt_version)}, which was not given`,
      }
}

/** Events a verification reads per page. */
export const VERIFY_PAGE = 1000

/**
 * Checks every event `page` yields with `keys`: `page(after)` returns the next
 * {@link VERIFY_PAGE} events in id order after id `after` (`start` first).
 */
export async function verifyPages(
  keys: readonly IntegrityKey[],
  page: (after: string) => Promise<StoredEvent[]>,
  start = '',
): Promise<EventReport> {
  const issues: EventIssue[] = []
  let checked = 0
  let after = start
  for (;;) {
    const rows = await page(after)
    for (const row of rows) {
      checked++
      const issue = eventIssue(keys, row)
      if (issue && issues.length < MAX_ISSUES) issues.push(issue)
    }
    if (rows.length < VERIFY_PAGE) break
    after = String(rows.at(-1)!.id)
  }
  return { ok: issues.length === 0, checked, issues }
}
