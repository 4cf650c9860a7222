import { createHash } from 'node:crypto'
import { type Executor, executeDeferred } from '../driver/driver.js'
import { AgentFsError } from '../errors.js'
import { writeMeta } from '../schema/meta.js'

/**
 * The audit's payload store (`agentfs_payload`, `agentfs_payload_chunk`): a tool call's
 * parameters, result or error longer than {@link PAYLOAD_INLINE_BYTES} is kept whole here,
 * content-addressed by its SHA-256, in chunks of {@link PAYLOAD_CHUNK_BYTES}. The spec column
 * keeps a readable stub (see {@link payloadStub}); the extension column `payloads` of the row's
 * metadata names what was moved, so a stub an agent wrote itself is never mistaken for one.
 * Format in SPEC-EXTENSIONS.md ("Audit payloads").
 *
 * The store has a budget per database (`agentfs_meta` row `audit.payload_budget`, default
 * {@link DEFAULT_PAYLOAD_BUDGET}): a call is refused before it runs once the store is full, and
 * the record of a call that ran is always kept whole.
 */

/** Texts up to this many UTF-8 bytes stay in the row. */
export const PAYLOAD_INLINE_BYTES = 64 * 1024
/** Bytes per `agentfs_payload_chunk` row. */
export const PAYLOAD_CHUNK_BYTES = 64 * 1024
/** The budget of a database that never set one: 1 GiB. */
export const DEFAULT_PAYLOAD_BUDGET = 1024 ** 3
/** The `agentfs_meta` row holding the budget: bytes, or `unlimited`. */
export const META_PAYLOAD_BUDGET = 'audit.payload_budget'
/** Characters of the text the stub shows. */
const PREVIEW_CHARS = 256
const SHA256_HEX = /^[0-9a-f]{64}$/

/** The columns a call's payloads come from. */
export type PayloadColumn = 'parameters' | 'result' | 'error'

/** Which columns of a row were moved to the store: column → SHA-256 (hex). */
export type PayloadRefs = Partial<Record<PayloadColumn, string>>

/** What is stored and what may be. */
export interface PayloadUsage {
  /** Bytes in the store (each payload counted once). */
  readonly used: number
  /** Payloads in the store. */
  readonly payloads: number
  /** The budget in bytes; null for unlimited. */
  readonly budget: number | null
}

const sha256Hex = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

/**
 * The text the spec column keeps for a payload moved to the store: JSON naming it, with the
 * first characters of the text, so a reader of the spec tables sees what it was.
 */
export function payloadStub(text: string, sha256: string, bytes: number): string {
  return JSON.stringify({
    $agentfs_payload: { sha256, bytes, preview: text.slice(0, PREVIEW_CHARS) },
  })
}

/** The stub of `text` as the store would name it, without storing it (a refused call's input). */
export function digestStub(text: string): string {
  const bytes = Buffer.from(text, 'utf8')
  return payloadStub(text, sha256Hex(bytes), bytes.byteLength)
}

/** Stores `text` (once per content) and returns its SHA-256 and size. */
export async function storePayload(
  q: Executor,
  text: string,
  nowNs: bigint,
): Promise<{ sha256: string; bytes: number }> {
  const data = Buffer.from(text, 'utf8')
  const sha256 = sha256Hex(data)
  const { rows } = await q.execute<{ n: number }>({
    sql: 'SELECT 1 AS n FROM agentfs_payload WHERE sha256 = ?',
    params: [sha256],
  })
  if (rows.length === 0) {
    await executeDeferred(q, {
      sql: 'INSERT INTO agentfs_payload (sha256, size, chunk_size, created_at_ns) VALUES (?, ?, ?, ?)',
      params: [sha256, data.byteLength, PAYLOAD_CHUNK_BYTES, nowNs],
    })
    for (let index = 0; index * PAYLOAD_CHUNK_BYTES < data.byteLength; index++)
      await executeDeferred(q, {
        sql: 'INSERT INTO agentfs_payload_chunk (sha256, chunk_index, data) VALUES (?, ?, ?)',
        params: [
          sha256,
          index,
          data.subarray(index * PAYLOAD_CHUNK_BYTES, (index + 1) * PAYLOAD_CHUNK_BYTES),
        ],
      })
  }
  return { sha256, bytes: data.byteLength }
}

/**
 * The texts of `columns` as a row stores them: each longer than {@link PAYLOAD_INLINE_BYTES}
 * moved to the store and replaced by its stub; `refs` names the moved ones (null: none).
 */
export async function externalize<C extends PayloadColumn>(
  q: Executor,
  columns: Record<C, string | null>,
  nowNs: bigint,
): Promise<{ values: Record<C, string | null>; refs: string | null }> {
  const values = { ...columns }
  const refs: PayloadRefs = {}
  for (const column of Object.keys(columns) as C[]) {
    const text = columns[column]
    if (text === null || !exceedsInline(text)) continue
    const { sha256, bytes } = await storePayload(q, text, nowNs)
    values[column] = payloadStub(text, sha256, bytes)
    refs[column] = sha256
  }
  return { values, refs: Object.keys(refs).length > 0 ? JSON.stringify(refs) : null }
}

/** Whether `text` is longer than the inline limit in UTF-8 (cheap for short texts). */
export function exceedsInline(text: string): boolean {
  // A UTF-16 unit takes 1 to 3 bytes: decide from the length where that settles it.
  if (text.length * 3 <= PAYLOAD_INLINE_BYTES) return false
  if (text.length > PAYLOAD_INLINE_BYTES) return true
  return Buffer.byteLength(text, 'utf8') > PAYLOAD_INLINE_BYTES
}

/** The refs a `payloads` column holds (CORRUPT when it is not what this library writes). */
export function parseRefs(text: string | null): PayloadRefs {
  if (text === null) return {}
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    value = undefined
  }
  const refs: PayloadRefs = {}
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [column, sha] of Object.entries(value)) {
      if (
        (column === 'parameters' || column === 'result' || column === 'error') &&
        typeof sha === 'string' &&
        SHA256_HEX.test(sha)
      )
        refs[column] = sha
      else value = undefined
    }
  }
  if (value === undefined || value === null || typeof value !== 'object')
    throw new AgentFsError(
      'CORRUPT',
      `a payloads column holds '${text.slice(0, 80)}', not a map of column to SHA-256; run agentfs verify`,
    )
  return refs
}

/**
 * The whole text of a stored payload, checked against its SHA-256 (CORRUPT when it is missing,
 * incomplete or altered).
 */
export async function readPayload(q: Executor, sha256: string): Promise<string> {
  const parts: Uint8Array[] = []
  const problem = await walkPayload(q, sha256, (data) => {
    parts.push(data)
  })
  if (problem !== undefined)
    throw new AgentFsError('CORRUPT', `audit payload ${sha256}: ${problem}; run agentfs verify`)
  return Buffer.concat(parts).toString('utf8')
}

/** What is wrong with a stored payload (missing, a chunk missing, altered), or undefined. */
export function checkPayload(q: Executor, sha256: string): Promise<string | undefined> {
  return walkPayload(q, sha256)
}

/** Chunks read per query: memory stays bounded while hashing. */
const PAGE = 64

/**
 * Reads a payload's chunks in order, hashing them as they come (each also to `each`), and
 * says what is wrong with it, if anything.
 */
async function walkPayload(
  q: Executor,
  sha256: string,
  each?: (data: Uint8Array) => void,
): Promise<string | undefined> {
  const { rows } = await q.execute<{ size: number; chunk_size: number }>({
    sql: 'SELECT size, chunk_size FROM agentfs_payload WHERE sha256 = ?',
    params: [sha256],
  })
  const head = rows[0]
  if (!head) return 'it is missing from agentfs_payload'
  const size = Number(head.size)
  const chunkSize = Number(head.chunk_size)
  if (!Number.isSafeInteger(size) || size < 0 || !Number.isSafeInteger(chunkSize) || chunkSize < 1)
    return `its row says ${head.size} bytes in chunks of ${head.chunk_size} (altered)`
  const count = Math.ceil(size / chunkSize)
  const hash = createHash('sha256')
  let total = 0
  for (let from = 0; from < count; from += PAGE) {
    const to = Math.min(count, from + PAGE)
    // Values bound through subqueries (ARCHITECTURE.md, "Statement shapes").
    const page = await q.execute<{ chunk_index: number; data: Uint8Array }>({
      sql: 'SELECT chunk_index, data FROM agentfs_payload_chunk WHERE sha256 = (SELECT ?) AND chunk_index >= (SELECT ?) AND chunk_index < (SELECT ?) ORDER BY chunk_index',
      params: [sha256, from, to],
    })
    for (let i = 0; i < to - from; i++) {
      const row = page.rows[i]
      if (!row || Number(row.chunk_index) !== from + i || !(row.data instanceof Uint8Array))
        return `chunk ${from + i} is missing`
      hash.update(row.data)
      total += row.data.byteLength
      each?.(row.data)
    }
  }
  if (total !== size || hash.digest('hex') !== sha256)
    return 'its bytes no longer hash to its name (altered)'
  return undefined
}

/** Bytes stored and the budget, read in one statement. */
export async function payloadUsage(q: Executor): Promise<PayloadUsage> {
  const { rows } = await q.execute<{ used: number; payloads: number; budget: unknown }>({
    sql: `SELECT (SELECT COALESCE(SUM(size), 0) FROM agentfs_payload) AS used,
  (SELECT COUNT(*) FROM agentfs_payload) AS payloads,
  (SELECT value FROM agentfs_meta WHERE key = ?) AS budget`,
    params: [META_PAYLOAD_BUDGET],
  })
  const row = rows[0]
  return {
    used: Number(row?.used ?? 0),
    payloads: Number(row?.payloads ?? 0),
    budget: parseBudget(row?.budget),
  }
}

function parseBudget(value: unknown): number | null {
  if (value === undefined || value === null) return DEFAULT_PAYLOAD_BUDGET
  if (value === 'unlimited') return null
  const n = Number(value)
  // A value this library never writes: the default, never "unlimited" by accident.
  return Number.isSafeInteger(n) && n >= 0 ? n : DEFAULT_PAYLOAD_BUDGET
}

/** Sets the database's budget in bytes (null: unlimited). */
export async function setPayloadBudget(q: Executor, bytes: number | null): Promise<void> {
  if (bytes !== null && (!Number.isSafeInteger(bytes) || bytes < 0))
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `a payload budget is a whole number of bytes ≥ 0 or null (unlimited), got ${bytes}`,
    )
  await writeMeta(q, META_PAYLOAD_BUDGET, bytes === null ? 'unlimited' : String(bytes))
}

/**
 * SQL true when the payload store has room for a call needing no bytes — the condition of
 * {@link budgetRefusal} in one expression, for a statement that checks and writes at once: no
 * budget, or the store's size under it (the `agentfs_meta` row as a whole number, or the
 * default without the row; anything else is false here, and the checked path reads it). Bind
 * {@link PAYLOAD_ROOM_PARAMS} after the statement's own parameters.
 */
export const PAYLOAD_ROOM_SQL = `(SELECT CASE WHEN b.value = 'unlimited' THEN 1
  WHEN b.value IS NULL OR CAST(CAST(b.value AS INTEGER) AS TEXT) = b.value
  THEN (SELECT COALESCE(SUM(size), 0) FROM agentfs_payload) < COALESCE(CAST(b.value AS INTEGER), ?)
  ELSE 0 END
FROM (SELECT (SELECT value FROM agentfs_meta WHERE key = ?) AS value) b)`

/** The parameters of {@link PAYLOAD_ROOM_SQL}: the default budget, the budget's key. */
export const PAYLOAD_ROOM_PARAMS: readonly [number, string] = [
  DEFAULT_PAYLOAD_BUDGET,
  META_PAYLOAD_BUDGET,
]

/**
 * Why a call needing `bytes` more in the store must be refused now, or undefined when it may
 * run: the store is full, or the bytes would overfill it.
 */
export function budgetRefusal(usage: PayloadUsage, bytes: number): string | undefined {
  if (usage.budget === null) return undefined
  if (usage.used < usage.budget && usage.used + bytes <= usage.budget) return undefined
  const need = bytes > 0 ? ` and this call's input needs ${bytes} more` : ''
  return `the audit's payload store is full (${usage.used} of ${usage.budget} bytes${need}); raise the budget (agentfs payloads DB --budget BYTES) or move the database`
}
