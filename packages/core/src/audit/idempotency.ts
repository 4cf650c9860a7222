import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import type { Queryable } from '../driver/guard-driver.js'
import { AgentFsError } from '../errors.js'
import { encodeAuditRow } from './audit-chain.js'
import { type IntegrityKey, integrityKeysOf } from './integrity-keys.js'

/**
 * Idempotency keys (`agentfs_idempotency`): a request carrying a key is applied once. Its record
 * (scope, key, the SHA-256 of its arguments, its result) commits in the transaction of its
 * change, so a retry with the same key and arguments finds it and returns the first result
 * without changing anything; the same key with other arguments is refused
 * (`IDEMPOTENCY_MISMATCH`). Records expire after a time to live; each claim deletes at most
 * {@link EXPIRED_PER_CLAIM} expired ones through the index on `expires_us`, never a scan.
 *
 * With integrity keys on the connection (`openDatabase({ integrityKeys })`, the SDK's
 * `audit.key`), each record is sealed (`mac`, `key_id`: HMAC-SHA256, see {@link sealRecord})
 * and a claim trusts only a record one of the keys verifies: a record planted by anyone without
 * the key (a sync peer, a hand-edited file) is refused ({@link IdempotencyUntrustedError})
 * before anything runs, rather than replayed as the request's answer.
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

/** The error of a key whose record no integrity key of the connection verifies. */
export class IdempotencyUntrustedError extends AgentFsError<'IDEMPOTENCY_UNTRUSTED'> {
  constructor(message: string) {
    super('IDEMPOTENCY_UNTRUSTED', message)
  }

  override get name(): string {
    return 'IdempotencyUntrustedError'
  }
}

/**
 * The columns of an `agentfs_idempotency` record its seal covers, in the order the seal encodes
 * them; a row is stored as these, then `mac` and `key_id`.
 */
export const IDEMPOTENCY_COLUMNS = [
  'scope',
  'key',
  'args_sha256',
  'args_digests',
  'result',
  'call_id',
  'created_us',
  'expires_us',
] as const

/** Every stored column of a record: {@link IDEMPOTENCY_COLUMNS}, then the seal's two. */
export const IDEMPOTENCY_STORED_COLUMNS = [...IDEMPOTENCY_COLUMNS, 'mac', 'key_id'] as const

const STORED = IDEMPOTENCY_STORED_COLUMNS.join(', ')

/** The columns of a record its seal covers. */
interface SealedColumns {
  readonly scope: string
  readonly key: string
  readonly args_sha256: Uint8Array
  readonly args_digests: string | null
  readonly result: string | null
  readonly call_id: number | null
  readonly created_us: number
  readonly expires_us: number
}

const SEAL_PREFIX = 'agentfs-idempotency-v1'

/**
 * A record's seal: HMAC-SHA256 under `k` of `"agentfs-idempotency-v1" 0x00 keyId 0x00` and the
 * columns scope, key, args_sha256, args_digests, result, call_id, created_us, expires_us
 * encoded as the audit chain encodes a row (`encodeAuditRow`).
 */
export function sealRecord(k: IntegrityKey, row: SealedColumns): Uint8Array {
  return createHmac('sha256', k.key)
    .update(`${SEAL_PREFIX}\0${k.id}\0`)
    .update(encodeAuditRow(IDEMPOTENCY_COLUMNS.map((c) => row[c])))
    .digest()
}

/** Whether one of `keys` sealed `row` (`mac` under the key `key_id` names). */
function trusted(
  keys: readonly IntegrityKey[],
  row: SealedColumns & { mac: unknown; key_id: unknown },
): boolean {
  const k = keys.find((candidate) => candidate.id === row.key_id)
  if (k === undefined || !(row.mac instanceof Uint8Array) || row.mac.byteLength !== 32) return false
  return timingSafeEqual(Buffer.from(row.mac), sealRecord(k, row))
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
   * {@link digestArguments} of `args`, when the caller already has it: a claim and the record
   * that follows then hash large arguments once, not twice.
   */
  readonly digest?: ArgumentsDigest
}

/** What a key's record keeps of the request's arguments. */
export interface ArgumentsDigest {
  /** SHA-256 of the canonical JSON of the arguments (`args_sha256`). */
  readonly sha256: Uint8Array
  /**
   * For object arguments, each top-level member's SHA-256 (first 16 hex digits) as canonical
   * JSON (`args_digests`), so a mismatch can name what differs; null for other arguments or
   * more than {@link MAX_DIGESTED_MEMBERS} members.
   */
  readonly members: string | null
}

/** Top-level members digested one by one at most (more: a mismatch names none). */
export const MAX_DIGESTED_MEMBERS = 256

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
  return digestArguments(args).sha256
}

const memberDigest = (json: string) => createHash('sha256').update(json).digest('hex').slice(0, 16)

/**
 * The digests a key's record keeps of `args`: the whole canonical JSON's SHA-256, and each
 * top-level member's, computed from one serialisation of each member.
 */
export function digestArguments(args: unknown): ArgumentsDigest {
  const plain =
    args !== null &&
    typeof args === 'object' &&
    !Array.isArray(args) &&
    !(args instanceof Uint8Array)
  if (!plain)
    return { sha256: createHash('sha256').update(canonicalJson(args)).digest(), members: null }
  const entries = Object.entries(args)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => [k, canonicalJson(v, 1)] as const)
  const whole = createHash('sha256').update('{')
  entries.forEach(([k, json], i) => {
    whole.update(`${i > 0 ? ',' : ''}${JSON.stringify(k)}:`).update(json)
  })
  whole.update('}')
  const members =
    entries.length > MAX_DIGESTED_MEMBERS
      ? null
      : canonicalJson(Object.fromEntries(entries.map(([k, json]) => [k, memberDigest(json)])))
  return { sha256: whole.digest(), members }
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

/** The top-level arguments whose digests differ between two requests' `args_digests`. */
export function argumentDifferences(before: string | null, now: string | null): string[] {
  if (before === null || now === null) return []
  let a: Record<string, unknown>
  let b: Record<string, unknown>
  try {
    a = JSON.parse(before)
    b = JSON.parse(now)
  } catch {
    return []
  }
  if (!a || !b || typeof a !== 'object' || typeof b !== 'object') return []
  const keys = new Set([...Object.keys(a), ...Object.keys(b)])
  return [...keys].filter((k) => a[k] !== b[k]).sort()
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
  const { rows } = await tx.execute<
    SealedColumns & { mac: Uint8Array | null; key_id: string | null }
  >({
    sql: `SELECT ${STORED}
FROM agentfs_idempotency WHERE scope = ? AND key = ? AND expires_us > ?`,
    params: [request.scope, key, request.nowUs],
  })
  const row = rows[0]
  if (!row) return undefined
  const keys = integrityKeysOf(tx)
  if (keys.length > 0 && !trusted(keys, row))
    throw new IdempotencyUntrustedError(
      `the record of idempotency key '${key}' (${request.scope}) is ${row.mac === null ? 'not sealed' : `not sealed by a key given to this database (key id ${JSON.stringify(row.key_id)})`}, so it was not written here and is not replayed; nothing was applied: retry with a new key, and run \`agentfs verify\` to see what else was altered`,
    )
  const stored = row.args_sha256 instanceof Uint8Array ? row.args_sha256 : new Uint8Array(0)
  const digest = request.digest ?? digestArguments(request.args)
  if (!sameBytes(stored, digest.sha256)) {
    const differs = argumentDifferences(
      typeof row.args_digests === 'string' ? row.args_digests : null,
      digest.members,
    )
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
  const digest = record.digest ?? digestArguments(record.args)
  const row: SealedColumns = {
    scope: record.scope,
    key: checkIdempotencyKey(record.key),
    args_sha256: digest.sha256,
    args_digests: digest.members,
    result: canonicalJson(record.result ?? null),
    call_id: record.callId ?? null,
    created_us: record.nowUs,
    expires_us: record.nowUs + Math.round(ttl * 1000),
  }
  const sealer = integrityKeysOf(tx)[0]
  await tx.execute({
    sql: `INSERT INTO agentfs_idempotency (${STORED}) VALUES (${IDEMPOTENCY_STORED_COLUMNS.map(() => '?').join(', ')})`,
    params: [
      ...IDEMPOTENCY_COLUMNS.map((c) => row[c]),
      sealer ? sealRecord(sealer, row) : null,
      sealer?.id ?? null,
    ],
  })
}

/** What {@link applyOnce} applies: a request without its time (taken in the transaction). */
export interface OnceRequest extends Omit<IdempotencyRequest, 'nowUs'> {
  /** The time now, in µs since the epoch (the database's clock). */
  readonly nowUs: () => number
  /** How long the record is kept (default {@link DEFAULT_IDEMPOTENCY_TTL_MS}). */
  readonly ttlMs?: number
}

/** The outcome of {@link applyOnce}. */
export type Once<T> =
  | { readonly replayed: false; readonly value: T }
  /** The first application's result, as stored (JSON). */
  | { readonly replayed: true; readonly value: unknown }

/**
 * Applies `apply` once per key, in one transaction of `db`: the key is claimed, `apply` runs
 * on the transaction, and its result (as JSON) is recorded with the key before the commit. A
 * retry with the same key and arguments gets the first result back and runs nothing; other
 * arguments are refused ({@link IdempotencyMismatchError}). When `apply` throws, everything
 * rolls back and the key stays free.
 */
export async function applyOnce<T>(
  db: Queryable,
  request: OnceRequest,
  apply: (tx: Queryable) => Promise<T>,
): Promise<Once<T>> {
  const key = checkIdempotencyKey(request.key)
  const digest = request.digest ?? digestArguments(request.args)
  return db.transaction(async (tx) => {
    const nowUs = request.nowUs()
    const claim = { ...request, key, digest, nowUs }
    const replay = await claimIdempotency(tx, claim)
    if (replay) return { replayed: true, value: replay.result }
    const value = await apply(tx)
    await recordIdempotency(tx, {
      ...claim,
      result: value,
      ...(request.ttlMs === undefined ? {} : { ttlMs: request.ttlMs }),
    })
    return { replayed: false, value }
  })
}
