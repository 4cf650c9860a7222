import { createHash } from 'node:crypto'
import { AgentFsError } from './errors.js'
import type { Queryable } from './guard-driver.js'

/**
 * Idempotency keys (`agentfs_idempotency`): a request carrying a key is applied once. Its record
 * (scope, key, the SHA-256 of its arguments, its result) commits in the transaction of its
 * change, so a retry with the same key and arguments finds it and returns the first result
 * without changing anything; the same key with other arguments is refused
 * (`IDEMPOTENCY_MISMATCH`). Records expire after a time to live; each claim deletes at most
 * {@link EXPIRED_PER_CLAIM} expired ones through the index on `expires_us`, never a scan.
 */

/** Records kept this long by default: 48 hours. */
export const DEFAULT_IDEMPOTENCY_TTL_MS = 48 * 3600 * 1000
/** Expired records deleted per claim at most. */
export const EXPIRED_PER_CLAIM = 100
/** Keys are 1 to 256 characters, none of them a control character. */
const KEY = /^[^\p{Cc}]{1,256}$/u
/** Nesting of arguments followed when hashing them. */
const MAX_DEPTH = 64

/** The error of a key reused for other arguments. */
export class IdempotencyMismatchError extends AgentFsError<'IDEMPOTENCY_MISMATCH'> {
  /** The top-level arguments that differ from the first request's (empty when unknown). */
  readonly differs: readonly string[]
  constructor(message: string, differs: readonly string[]) {
    super('IDEMPOTENCY_MISMATCH', message)
    this.differs = differs
  }

  override get name(): string {
    return 'IdempotencyMismatchError'
  }
}

/** What the first request with a key left: its result, and the tool call that recorded it. */
export interface IdempotentReplay {
  /** The first request's result, as it was stored (JSON). */
  readonly result: unknown
  /** The `tool_calls` id of the first request, when it was recorded as one. */
  readonly callId: number | null
  /** When it was first applied, in microseconds since the epoch. */
  readonly createdUs: number
}

/** A claim of a key: what the request is, for {@link claimIdempotency}. */
export interface IdempotencyRequest {
  /** What the key is unique within (e.g. `tool:write_file`, `fs.writeFile`). */
  readonly scope: string
  readonly key: string
  /** The request's arguments (JSON values); their hash is compared on a retry. */
  readonly args: unknown
  /** Now, in microseconds since the epoch (the database's clock). */
  readonly nowUs: number
  /**
   * The argument that carries the key in the recorded `tool_calls.parameters` (left out when a
   * mismatch names the arguments that differ), e.g. `idempotency_key`.
   */
  readonly keyArgument?: string
  /**
   * {@link argumentsHash} of `args`, when the caller already has it: a claim and the record
   * that follows then hash large arguments once, not twice.
   */
  readonly argsSha256?: Uint8Array
}

/** JSON with object keys sorted, so equal arguments hash equal whatever their key order. */
export function canonicalJson(value: unknown, depth = 0): string {
  if (depth > MAX_DEPTH)
    throw new AgentFsError('INVALID_ARGUMENT', `arguments nest deeper than ${MAX_DEPTH} levels`)
  if (value === undefined) return 'null'
  if (value instanceof Uint8Array)
    return JSON.stringify({ $bytes: Buffer.from(value).toString('base64') })
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v, depth + 1)).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v, depth + 1)}`).join(',')}}`
  }
  if (typeof value === 'bigint') return JSON.stringify(value.toString())
  return JSON.stringify(value) ?? 'null'
}

/** The SHA-256 of a request's canonical arguments. */
export function argumentsHash(args: unknown): Uint8Array {
  return createHash('sha256').update(canonicalJson(args)).digest()
}

/** Refuses a key that is not one, in one line. */
export function checkIdempotencyKey(key: unknown): string {
  if (typeof key !== 'string' || !KEY.test(key))
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'an idempotency key must be a string of 1 to 256 characters without control characters (e.g. a UUID)',
    )
  return key
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0
}

/** The top-level arguments that differ between two requests. */
function differences(before: unknown, now: unknown): string[] {
  if (!before || !now || typeof before !== 'object' || typeof now !== 'object') return []
  const keys = new Set([...Object.keys(before), ...Object.keys(now)])
  return [...keys]
    .filter(
      (k) =>
        canonicalJson((before as Record<string, unknown>)[k]) !==
        canonicalJson((now as Record<string, unknown>)[k]),
    )
    .sort()
}

/**
 * Looks up `request`'s key in the caller's write transaction: the first request's outcome when
 * it was applied with the same arguments (replay it; change nothing), undefined when the key is
 * new (apply the request, then {@link recordIdempotency} in the same transaction). Throws
 * {@link IdempotencyMismatchError} when the key was used for other arguments. Deletes up to
 * {@link EXPIRED_PER_CLAIM} expired records first.
 */
export async function claimIdempotency(
  tx: Queryable,
  request: IdempotencyRequest,
): Promise<IdempotentReplay | undefined> {
  const key = checkIdempotencyKey(request.key)
  await tx.execute({
    sql: `DELETE FROM agentfs_idempotency WHERE rowid IN
  (SELECT rowid FROM agentfs_idempotency WHERE expires_us <= ? ORDER BY expires_us LIMIT ${EXPIRED_PER_CLAIM})`,
    params: [request.nowUs],
  })
  const { rows } = await tx.execute<{
    args_sha256: Uint8Array
    result: string | null
    call_id: number | null
    created_us: number
    parameters: string | null
  }>({
    sql: `SELECT i.args_sha256, i.result, i.call_id, i.created_us, t.parameters
FROM agentfs_idempotency i LEFT JOIN tool_calls t ON t.id = i.call_id
WHERE i.scope = ? AND i.key = ? AND i.expires_us > ?`,
    params: [request.scope, key, request.nowUs],
  })
  const row = rows[0]
  if (!row) return undefined
  const stored = row.args_sha256 instanceof Uint8Array ? row.args_sha256 : new Uint8Array(0)
  if (!sameBytes(stored, request.argsSha256 ?? argumentsHash(request.args))) {
    let first: unknown
    try {
      first = row.parameters === null ? undefined : JSON.parse(row.parameters)
    } catch {
      first = undefined
    }
    const differs = differences(first, request.args).filter((k) => k !== request.keyArgument)
    throw new IdempotencyMismatchError(
      `idempotency key '${key}' was first used at ${new Date(Math.floor(row.created_us / 1000)).toISOString()} with other arguments${differs.length > 0 ? ` (${differs.join(', ')} differ)` : ''}; use a new key for a new request`,
      differs,
    )
  }
  let result: unknown = null
  try {
    result = row.result === null ? null : JSON.parse(row.result)
  } catch {
    throw new AgentFsError(
      'CORRUPT',
      `the stored result of idempotency key '${key}' is not JSON; the database was altered`,
    )
  }
  return { result, callId: row.call_id, createdUs: row.created_us }
}

/** What {@link recordIdempotency} stores. */
export interface IdempotencyRecord extends IdempotencyRequest {
  /** The request's result (JSON values). */
  readonly result: unknown
  /** The `tool_calls` id that recorded the request, if any. */
  readonly callId?: number
  /** How long the record is kept (default {@link DEFAULT_IDEMPOTENCY_TTL_MS}). */
  readonly ttlMs?: number
}

/** Stores a key's outcome, in the transaction of the change it guards. */
export async function recordIdempotency(tx: Queryable, record: IdempotencyRecord): Promise<void> {
  const ttl = record.ttlMs ?? DEFAULT_IDEMPOTENCY_TTL_MS
  if (!Number.isFinite(ttl) || ttl <= 0)
    throw new AgentFsError('INVALID_ARGUMENT', `an idempotency TTL must be positive, got ${ttl} ms`)
  await tx.execute({
    sql: `INSERT INTO agentfs_idempotency (scope, key, args_sha256, result, call_id, created_us, expires_us)
VALUES (?, ?, ?, ?, ?, ?, ?)`,
    params: [
      record.scope,
      checkIdempotencyKey(record.key),
      record.argsSha256 ?? argumentsHash(record.args),
      canonicalJson(record.result ?? null),
      record.callId ?? null,
      record.nowUs,
      record.nowUs + Math.round(ttl * 1000),
    ],
  })
}
