import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto'
import { encodeAuditRow, type IntegrityKey } from '@agentfs/core'
import { canonicalText } from '@agentfs/fs'

/**
 * A memory event (seed 003): one per write of the toolbelt, with what changed, why, the lint
 * summary, correlation ids, the idempotency key, the saga status and an integrity HMAC.
 */

export type EventStatus = 'pending' | 'committed' | 'failed'

/** What a tool knows of an event before the write. */
export interface EventInput {
  /** `profile_update`, `relationship_update`, `observation`, `note`, … */
  readonly type: string
  /** `replace_section`, `append_section`, `append_item`, `prune_item`, `write`, `append`, `patch`, … */
  readonly op: string
  readonly tool: string
  readonly file_path: string | null
  readonly section_anchor?: string | null
  readonly rationale?: string | null
  readonly override_rationale?: string | null
  readonly evidence_refs?: readonly string[] | null
  readonly before_hash?: string | null
  /** The hash the write will leave (the saga settles a pending event by comparing with it). */
  readonly intended_hash?: string | null
  readonly lint?: unknown
  readonly tool_call_id?: string | null
  readonly agent_action_id?: string | null
  readonly idempotency_key?: string | null
}

/** An event as stored. */
export interface MemoryEvent {
  readonly id: string
  readonly user_id: string
  readonly type: string
  readonly op: string
  readonly tool: string
  readonly file_path: string | null
  readonly section_anchor: string | null
  readonly rationale: string | null
  readonly override_rationale: string | null
  readonly evidence_refs: string[] | null
  readonly before_hash: string | null
  readonly after_hash: string | null
  readonly intended_hash: string | null
  readonly lint: unknown
  readonly tool_call_id: string | null
  readonly transaction_id: number | null
  readonly agent_action_id: string | null
  readonly idempotency_key: string | null
  readonly status: EventStatus
  readonly error: string | null
  /** HMAC-SHA256 (hex) of the canonical content written (the section's, for a section op). */
  readonly line_hash: string | null
  /** HMAC-SHA256 (hex) of the row. */
  readonly integrity_hmac: string
  /** The id of the key both HMACs were made with. */
  readonly integrity_salt_version: string
  readonly created_us: number
  readonly updated_us: number
}

/** The SHA-256 of a text's canonical form (`sha256:` + hex), as `fs.hash(path, { canonical })`. */
export function canonicalHash(text: string): string {
  return `sha256:${createHash('sha256').update(canonicalText(text), 'utf8').digest('hex')}`
}

const LINE_PREFIX = 'agentfs-memory-line-v1'
const ROW_PREFIX = 'agentfs-memory-event-v1'

/** Seed 003's `line_hash`: HMAC-SHA256 of the canonical content, under `key`. */
export function lineHash(key: IntegrityKey, content: string): string {
  return createHmac('sha256', key.key)
    .update(`${LINE_PREFIX}\0${key.id}\0`)
    .update(canonicalText(content), 'utf8')
    .digest('hex')
}

/** The columns the row HMAC covers, in order. */
export const SEALED_COLUMNS = [
  'id',
  'user_id',
  'type',
  'op',
  'tool',
  'file_path',
  'section_anchor',
  'rationale',
  'override_rationale',
  'evidence_refs',
  'before_hash',
  'after_hash',
  'intended_hash',
  'lint',
  'tool_call_id',
  'transaction_id',
  'agent_action_id',
  'idempotency_key',
  'status',
  'error',
  'line_hash',
  'created_us',
  'updated_us',
] as const

/** A row as stored (JSON columns as text). */
export type StoredEvent = Omit<MemoryEvent, 'evidence_refs' | 'lint'> & {
  readonly evidence_refs: string | null
  readonly lint: string | null
}

/**
 * The row's HMAC: HMAC-SHA256 under `key` of `"agentfs-memory-event-v1" 0x00 keyId 0x00` and
 * the {@link SEALED_COLUMNS} encoded as the audit chain encodes a row.
 */
export function eventHmac(
  key: IntegrityKey,
  row: Omit<StoredEvent, 'integrity_hmac' | 'integrity_salt_version'>,
): string {
  return createHmac('sha256', key.key)
    .update(`${ROW_PREFIX}\0${key.id}\0`)
    .update(encodeAuditRow(SEALED_COLUMNS.map((c) => row[c] ?? null)))
    .digest('hex')
}

/** Whether one of `keys` made the row's HMAC and it still matches. */
export function eventVerifies(keys: readonly IntegrityKey[], row: StoredEvent): boolean {
  const key = keys.find((k) => k.id === row.integrity_salt_version)
  if (!key || typeof row.integrity_hmac !== 'string' || !/^[0-9a-f]{64}$/.test(row.integrity_hmac))
    return false
  return timingSafeEqual(
    Buffer.from(row.integrity_hmac, 'hex'),
    Buffer.from(eventHmac(key, row), 'hex'),
  )
}

/** A stored row as the API returns it (JSON columns parsed). */
export function eventOf(row: StoredEvent): MemoryEvent {
  const parse = (text: string | null): unknown => {
    if (text === null) return null
    try {
      return JSON.parse(text)
    } catch {
      return text
    }
  }
  return {
    ...row,
    evidence_refs: parse(row.evidence_refs) as string[] | null,
    lint: parse(row.lint),
    transaction_id: row.transaction_id === null ? null : Number(row.transaction_id),
    created_us: Number(row.created_us),
    updated_us: Number(row.updated_us),
  }
}

/** What a row records besides its input. */
export interface EventExtra {
  readonly after_hash?: string | null
  readonly line_hash?: string | null
  readonly transaction_id?: number | null
  readonly error?: string | null
}

/** An error as an event keeps it: its code and message, at most 4 KiB. */
export function eventError(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  return `${typeof code === 'string' ? code : 'ERROR'}: ${error instanceof Error ? error.message : String(error)}`.slice(
    0,
    4096,
  )
}

/** A complete row of `userId`'s event with `status` at `nowUs`, sealed with `key`. */
export function buildEvent(
  key: IntegrityKey,
  userId: string,
  nowUs: number,
  input: EventInput,
  status: EventStatus,
  extra: EventExtra = {},
  id: string = randomUUID(),
): StoredEvent {
  const row = {
    id,
    user_id: userId,
    type: input.type,
    op: input.op,
    tool: input.tool,
    file_path: input.file_path,
    section_anchor: input.section_anchor ?? null,
    rationale: input.rationale ?? null,
    override_rationale: input.override_rationale ?? null,
    evidence_refs: input.evidence_refs ? JSON.stringify(input.evidence_refs) : null,
    before_hash: input.before_hash ?? null,
    after_hash: extra.after_hash ?? null,
    intended_hash: input.intended_hash ?? null,
    lint: input.lint === undefined ? null : JSON.stringify(input.lint),
    tool_call_id: input.tool_call_id ?? null,
    transaction_id: extra.transaction_id ?? null,
    agent_action_id: input.agent_action_id ?? null,
    idempotency_key: input.idempotency_key ?? null,
    status,
    error: extra.error ?? null,
    line_hash: extra.line_hash ?? null,
    created_us: nowUs,
    updated_us: nowUs,
  }
  return resealEvent(key, row)
}

/** `row` with its HMAC made again under `key` (after a status change). */
export function resealEvent(
  key: IntegrityKey,
  row: Omit<StoredEvent, 'integrity_hmac' | 'integrity_salt_version'>,
): StoredEvent {
  const plain = Object.fromEntries(SEALED_COLUMNS.map((c) => [c, row[c] ?? null])) as Omit<
    StoredEvent,
    'integrity_hmac' | 'integrity_salt_version'
  >
  return { ...plain, integrity_hmac: eventHmac(key, plain), integrity_salt_version: key.id }
}
