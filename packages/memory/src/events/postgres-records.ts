import { createHmac, timingSafeEqual } from 'node:crypto'
import { encodeAuditRow, type IntegrityKey } from '@agentfs/core'
import type { PgQueryable } from './postgres-schema.js'

/**
 * Seed 003's `idempotency_records` in Postgres: one row per (user, scope, key), sealed with an
 * HMAC over its columns (as the audit chain encodes rows), read and written under a row lock.
 */

export const RECORD_COLUMNS = [
  'user_id',
  'scope',
  'key',
  'args_sha256',
  'args_digests',
  'result',
  'event_id',
  'status',
  'created_us',
  'expires_us',
] as const

/** A record as stored: the sealed columns, then the seal. */
export type RecordRow = {
  [K in (typeof RECORD_COLUMNS)[number]]: K extends 'created_us' | 'expires_us'
    ? number
    : string | null
} & {
  mac: string
  key_id: string
}

const RECORD_PREFIX = 'agentfs-memory-idempotency-v1'
/** Expired records deleted per claim at most. */
const EXPIRED_PER_CLAIM = 100
const STORED = [...RECORD_COLUMNS, 'mac', 'key_id'] as const

/** A record's seal: HMAC-SHA256 under `k` of `"agentfs-memory-idempotency-v1" 0 keyId 0` + its columns. */
function sealOf(k: IntegrityKey, row: Omit<RecordRow, 'mac' | 'key_id'>): string {
  return createHmac('sha256', k.key)
    .update(`${RECORD_PREFIX}\0${k.id}\0`)
    .update(encodeAuditRow(RECORD_COLUMNS.map((c) => row[c])))
    .digest('hex')
}

/** `row` sealed with `k`. */
export function sealed(k: IntegrityKey, row: Omit<RecordRow, 'mac' | 'key_id'>): RecordRow {
  return { ...row, mac: sealOf(k, row), key_id: k.id }
}

/** Whether one of `keys` sealed `row` and it still matches. */
export function recordTrusted(keys: readonly IntegrityKey[], row: RecordRow): boolean {
  const k = keys.find((c) => c.id === row.key_id)
  if (!k || typeof row.mac !== 'string' || !/^[0-9a-f]{64}$/.test(row.mac)) return false
  return timingSafeEqual(Buffer.from(row.mac, 'hex'), Buffer.from(sealOf(k, row), 'hex'))
}

/** A row as read: bigints (strings from `pg`) as numbers. */
function recordRow(raw: Record<string, unknown> | undefined): RecordRow | undefined {
  if (!raw) return undefined
  return {
    ...(raw as unknown as RecordRow),
    created_us: Number(raw.created_us),
    expires_us: Number(raw.expires_us),
  }
}

/** Deletes at most {@link EXPIRED_PER_CLAIM} records expired at `nowUs` (`s`: the quoted schema). */
export async function deleteExpired(c: PgQueryable, s: string, nowUs: number): Promise<void> {
  await c.query(
    `DELETE FROM ${s}.idempotency_records WHERE ctid IN
  (SELECT ctid FROM ${s}.idempotency_records WHERE expires_us <= $1 ORDER BY expires_us LIMIT ${EXPIRED_PER_CLAIM})`,
    [nowUs],
  )
}

/** The record of a key, locked for the transaction. */
export async function lockRecord(
  c: PgQueryable,
  s: string,
  userId: string,
  scope: string,
  key: string,
): Promise<RecordRow | undefined> {
  const { rows } = await c.query(
    `SELECT * FROM ${s}.idempotency_records WHERE user_id = $1 AND scope = $2 AND key = $3 FOR UPDATE`,
    [userId, scope, key],
  )
  return recordRow(rows[0])
}

/** The record naming event `eventId`, locked for the transaction. */
export async function lockRecordOf(
  c: PgQueryable,
  s: string,
  userId: string,
  eventId: string,
): Promise<RecordRow | undefined> {
  const { rows } = await c.query(
    `SELECT * FROM ${s}.idempotency_records WHERE user_id = $1 AND event_id = $2 FOR UPDATE`,
    [userId, eventId],
  )
  return recordRow(rows[0])
}

/** Inserts `row`; false when a record of its key appeared meanwhile. */
export async function insertRecord(c: PgQueryable, s: string, row: RecordRow): Promise<boolean> {
  const inserted = await c.query(
    `INSERT INTO ${s}.idempotency_records (${STORED.join(', ')})
VALUES (${STORED.map((_, i) => `$${i + 1}`).join(', ')}) ON CONFLICT DO NOTHING`,
    STORED.map((col) => row[col]),
  )
  return inserted.rowCount !== 0
}

/** Replaces the record of `row`'s key with `row`. */
export async function updateRecord(c: PgQueryable, s: string, row: RecordRow): Promise<void> {
  await c.query(
    `UPDATE ${s}.idempotency_records SET ${STORED.slice(3)
      .map((col, i) => `${col} = $${i + 4}`)
      .join(', ')}
WHERE user_id = $1 AND scope = $2 AND key = $3`,
    STORED.map((col) => row[col]),
  )
}
