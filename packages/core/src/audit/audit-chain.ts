import { createHash, createHmac } from 'node:crypto'
import type { Executor } from '../driver/driver.js'
import type { Queryable } from '../driver/guard-driver.js'
import { SLOT_SPAN } from '../driver/slot-ids.js'
import { viaSubqueries } from '../driver/via-subqueries.js'
import { AgentFsError } from '../errors.js'
import { checkPayload, parseRefs } from './payload-store.js'

/**
 * Tamper evidence for the audit: a hash chain over the rows of `tool_calls` (with their
 * `agentfs_tool_call_meta`) and of the change feed (`agentfs_change`), kept in
 * `agentfs_audit_chain`. Each row's digest covers the row and the digest before it, so a row
 * changed, inserted or removed later breaks the chain at that row; keyed with HMAC-SHA256, nobody
 * without the key can rebuild it. The format is in SPEC-EXTENSIONS.md ("Audit chain").
 *
 * Rows are sealed after they are written (`sealAudit`: at close, on demand, before a trim), not
 * in the transaction of every change: the write path costs nothing. Rows not yet sealed are
 * counted by `verifyAudit` as unsealed, never as proved.
 */

/** The two audited streams: tool calls, and the change feed. */
export type AuditStream = 'call' | 'change'

export const AUDIT_STREAMS: readonly AuditStream[] = ['call', 'change']

/** A key that seals the chain (HMAC-SHA256); never stored in the database. */
export interface AuditKey {
  /** The key's bytes (at least 16). */
  readonly key: Uint8Array
  /** The id recorded with each row it seals (default: derived from the key, see {@link auditKeyId}). */
  readonly id?: string
}

/** The rows each stream seals, with the columns its digest covers, in order. */
const STREAM_SQL: Record<
  AuditStream,
  { table: string; id: string; column: string; select: string }
> = {
  call: {
    table: 'tool_calls',
    id: 'id',
    column: 't.id',
    select: `SELECT t.id, t.name, t.parameters, t.result, t.error, t.started_at, t.completed_at, t.duration_ms,
  m.session_id, m.parent_id, m.started_at_ns, m.completed_at_ns, m.metadata, m.call_token, m.payloads
FROM tool_calls t LEFT JOIN agentfs_tool_call_meta m ON m.id = t.id`,
  },
  change: {
    table: 'agentfs_change',
    id: 'seq',
    column: 'c.seq',
    select: `SELECT c.seq, c.at_us, c.op, c.path, c.path2, c.ino, c.dir_ino, c.dir2_ino, c.version, c.size, c.session_id, c.call_token, c.hash, c.prev_hash, c.txid, c.message
FROM agentfs_change c`,
  },
}

const ZERO = new Uint8Array(32)
const PREFIX = 'agentfs-audit-v1'
/** Rows sealed per transaction: a long backlog never holds the write lock for long. */
const SEAL_BATCH = 2000
/** Rows read per query while verifying. */
const VERIFY_PAGE = 2000
/** Issues listed by a verification at most; the count goes on. */
const MAX_ISSUES = 100
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/

/** The id of a key: the first 8 bytes of HMAC-SHA256(key, "agentfs-audit-key-id"), in hex. */
export function auditKeyId(key: Uint8Array): string {
  return createHmac('sha256', key).update('agentfs-audit-key-id').digest('hex').slice(0, 16)
}

/** Checks a key (at least 16 bytes; an id of 1 to 64 letters, digits, '.', '_', '-') and gives its id. */
export function checkAuditKey(k: AuditKey): { key: Uint8Array; id: string } {
  if (!(k.key instanceof Uint8Array) || k.key.byteLength < 16)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'an audit key must be at least 16 bytes; generate one with `openssl rand -hex 32`',
    )
  const id = k.id ?? auditKeyId(k.key)
  if (!KEY_ID.test(id))
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `audit key id '${id}' must be 1 to 64 letters, digits, '.', '_' or '-'`,
    )
  return { key: k.key, id }
}

/**
 * The bytes a row contributes to its digest: each column in order, as a tag byte and the value
 * (0: NULL; 1: integer, 8 bytes big-endian; 2: text, 4-byte length + UTF-8; 3: blob, 4-byte
 * length + bytes; 4: real, 8-byte IEEE 754 big-endian).
 */
export function encodeAuditRow(values: readonly unknown[]): Uint8Array {
  let size = 0
  const texts: Array<Buffer | undefined> = []
  for (const v of values) {
    if (typeof v === 'string') {
      const text = Buffer.from(v, 'utf8')
      texts.push(text)
      size += 5 + text.byteLength
    } else {
      texts.push(undefined)
      if (v === null || v === undefined) size += 1
      else if (v instanceof Uint8Array) size += 5 + v.byteLength
      else if (v instanceof ArrayBuffer) size += 5 + v.byteLength
      else size += 9
    }
  }
  const out = Buffer.allocUnsafe(size)
  let at = 0
  for (const [i, v] of values.entries()) {
    const text = texts[i]
    if (v === null || v === undefined) out[at++] = 0
    else if (text) {
      out[at] = 2
      out.writeUInt32BE(text.byteLength, at + 1)
      text.copy(out, at + 5)
      at += 5 + text.byteLength
    } else if (typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v))) {
      out[at] = 1
      out.writeBigInt64BE(BigInt(v), at + 1)
      at += 9
    } else if (typeof v === 'number') {
      out[at] = 4
      out.writeDoubleBE(v, at + 1)
      at += 9
    } else if (v instanceof Uint8Array || v instanceof ArrayBuffer) {
      const bytes = v instanceof Uint8Array ? v : new Uint8Array(v)
      out[at] = 3
      out.writeUInt32BE(bytes.byteLength, at + 1)
      out.set(bytes, at + 5)
      at += 5 + bytes.byteLength
    } else throw new AgentFsError('CORRUPT', `an audited row holds a ${typeof v} value`)
  }
  return out
}

/**
 * A row's digest: SHA-256, or HMAC-SHA256 with `key`, of
 * `"agentfs-audit-v1" 0x00 stream 0x00 keyId 0x00 previous-digest row-bytes`.
 */
export function auditDigest(
  stream: AuditStream,
  previous: Uint8Array,
  row: readonly unknown[],
  key?: { key: Uint8Array; id: string },
): Uint8Array {
  const h = key ? createHmac('sha256', key.key) : createHash('sha256')
  h.update(`${PREFIX}\0${stream}\0${key?.id ?? ''}\0`)
  h.update(previous)
  h.update(encodeAuditRow(coveredColumns(stream, row)))
  return h.digest()
}

/**
 * Columns added later are covered only where set, so rows sealed before they existed keep their
 * digests, and a row cannot gain or lose one unnoticed (encodings of 12, 14 and 15 columns never
 * equal each other). Feed: the content hashes (schema 9, columns 13–14) when either is set, the
 * transaction id (schema 11, column 15) when set, with 13–14 before it, the message (schema 16,
 * column 16) when set, with all 15 before it. Calls: the payload refs (schema 12, column 15) when
 * set.
 */
function coveredColumns(stream: AuditStream, given: readonly unknown[]): readonly unknown[] {
  // A call's payload refs (schema 12, column 15) only where set.
  if (stream === 'call' && given.length === 15)
    return (given[14] ?? null) === null ? given.slice(0, 14) : given
  if (stream !== 'change') return given
  if (given.length === 16 && (given[15] ?? null) !== null) return given
  const row = given.length === 16 ? given.slice(0, 15) : given
  if (row.length !== 15) return row
  if ((row[14] ?? null) !== null) return row
  return (row[12] ?? null) === null && (row[13] ?? null) === null
    ? row.slice(0, 12)
    : row.slice(0, 14)
}

const slotOf = (id: number): number => Math.floor(id / SLOT_SPAN)

function bytesOf(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value
  if (value instanceof ArrayBuffer) return new Uint8Array(value)
  throw new AgentFsError(
    'CORRUPT',
    'a digest of agentfs_audit_chain or agentfs_audit_anchor is not a blob: the audit chain was altered',
  )
}

const equal = (a: Uint8Array, b: Uint8Array): boolean =>
  a.byteLength === b.byteLength && Buffer.compare(a, b) === 0

/**
 * The slots that hold rows of `table` (matching `where`), found by seeking from slot to slot
 * with the id's index: one query per slot, never a scan.
 */
async function slotsIn(
  q: Executor,
  table: string,
  id: string,
  where = '1',
  params: readonly string[] = [],
): Promise<number[]> {
  const slots: number[] = []
  let from = Number.MIN_SAFE_INTEGER
  for (;;) {
    const { rows } = await q.execute<{ low: number | null }>({
      sql: `SELECT min(${id}) AS low FROM ${table} WHERE ${viaSubqueries(where)} AND ${id} >= (SELECT ?)`,
      params: [...params, from],
    })
    const low = rows[0]?.low
    if (low === null || low === undefined) return slots
    const slot = slotOf(low)
    slots.push(slot)
    from = (slot + 1) * SLOT_SPAN
  }
}

/** The slots that hold rows of a stream. */
const slotsOf = (q: Executor, stream: AuditStream) =>
  slotsIn(q, STREAM_SQL[stream].table, STREAM_SQL[stream].id)

/** The slots that hold seals of a stream. */
const chainSlots = (q: Executor, stream: AuditStream) =>
  slotsIn(q, 'agentfs_audit_chain', 'seq', 'stream = ?', [stream])

interface Tip {
  /** Rows up to here are sealed (or trimmed). */
  seq: number
  digest: Uint8Array
}

async function tipOf(q: Executor, stream: AuditStream, slot: number): Promise<Tip | undefined> {
  const low = slot * SLOT_SPAN
  const high = low + SLOT_SPAN - 1
  const { rows } = await q.execute<{ seq: number; digest: Uint8Array }>({
    sql: 'SELECT seq, digest FROM agentfs_audit_chain WHERE stream = (SELECT ?) AND seq BETWEEN (SELECT ?) AND (SELECT ?) ORDER BY seq DESC LIMIT 1',
    params: [stream, low, high],
  })
  const anchor = await anchorOf(q, stream, slot)
  const last = rows[0]
  if (last && (!anchor || last.seq > anchor.seq))
    return { seq: last.seq, digest: bytesOf(last.digest) }
  return anchor
}

async function anchorOf(q: Executor, stream: AuditStream, slot: number): Promise<Tip | undefined> {
  const { rows } = await q.execute<{ seq: number; digest: Uint8Array }>({
    sql: 'SELECT seq, digest FROM agentfs_audit_anchor WHERE stream = ? AND slot = ?',
    params: [stream, slot],
  })
  const row = rows[0]
  return row ? { seq: row.seq, digest: bytesOf(row.digest) } : undefined
}

/** Options of {@link sealAudit}. */
export interface SealOptions {
  /** Seal with HMAC-SHA256 under this key (default: plain SHA-256, which anyone can rebuild). */
  readonly key?: AuditKey
  /** Only this slot's rows (a synced client seals its own; default: the driver's slot, or all). */
  readonly slot?: number
  /** The time recorded on the chain rows (µs since the epoch; default now). */
  readonly nowUs?: number
}

/** What {@link sealAudit} did. */
export interface SealResult {
  /** Rows sealed, per stream. */
  readonly sealed: Record<AuditStream, number>
  /** The head after sealing (see {@link auditHead}). */
  readonly head: string
}

function ownSlot(q: Partial<Queryable>): number | undefined {
  return (q.capabilities?.sync as { slot?: number } | undefined)?.slot
}

/**
 * Seals every row not sealed yet, oldest first, in transactions of at most 2,000 rows. Safe to
 * run from several processes at once: each batch reads the chain's tip under the write lock.
 */
export async function sealAudit(q: Queryable, options: SealOptions = {}): Promise<SealResult> {
  const key = options.key ? checkAuditKey(options.key) : undefined
  const only = options.slot ?? ownSlot(q)
  const sealed: Record<AuditStream, number> = { call: 0, change: 0 }
  for (const stream of AUDIT_STREAMS) {
    const slots = only === undefined ? await slotsOf(q, stream) : [only]
    for (const slot of slots) {
      for (;;) {
        const n = await q.transaction((tx) =>
          sealBatch(tx, stream, slot, key, options.nowUs ?? Date.now() * 1000),
        )
        sealed[stream] += n
        if (n < SEAL_BATCH) break
      }
    }
  }
  return { sealed, head: await auditHead(q) }
}

async function sealBatch(
  tx: Executor,
  stream: AuditStream,
  slot: number,
  key: { key: Uint8Array; id: string } | undefined,
  nowUs: number,
  upTo = (slot + 1) * SLOT_SPAN - 1,
): Promise<number> {
  const { column, select } = STREAM_SQL[stream]
  const tip = await tipOf(tx, stream, slot)
  const from = tip?.seq ?? slot * SLOT_SPAN - 1
  const { rows } = await tx.execute<unknown[]>({
    arrays: true,
    sql: `${select} WHERE ${column} > (SELECT ?) AND ${column} <= (SELECT ?) ORDER BY 1 LIMIT (SELECT ?)`,
    params: [from, Math.min(upTo, (slot + 1) * SLOT_SPAN - 1), SEAL_BATCH],
  })
  let previous = tip?.digest ?? ZERO
  const params: Array<string | number | Uint8Array | null> = []
  const flush = async () => {
    if (params.length === 0) return
    const n = params.length / 5
    await tx.execute({
      sql: `INSERT INTO agentfs_audit_chain (stream, seq, digest, key_id, sealed_us) VALUES ${Array(n).fill('(?, ?, ?, ?, ?)').join(', ')}`,
      params: params.splice(0),
    })
  }
  for (const values of rows) {
    const digest = auditDigest(stream, previous, values, key)
    params.push(stream, Number(values[0]), digest, key?.id ?? null, nowUs)
    // 100 rows a statement: 500 parameters, under every engine's limit.
    if (params.length >= 500) await flush()
    previous = digest
  }
  await flush()
  return rows.length
}

/**
 * The head of the chain: for each stream and slot, the last sealed row and its digest, as one
 * line (`agentfs-audit-v1 change:0:42:<hex>,…`). Keep it outside the database; verifying with it
 * later (`expectHead`) proves nothing sealed up to it was cut off or rebuilt since.
 */
export async function auditHead(q: Executor): Promise<string> {
  const parts: string[] = []
  for (const stream of AUDIT_STREAMS) {
    const { rows } = await q.execute<{ slot: number }>({
      sql: `SELECT DISTINCT slot FROM agentfs_audit_anchor WHERE stream = ?`,
      params: [stream],
    })
    const slots = new Set([...rows.map((r) => r.slot), ...(await chainSlots(q, stream))])
    for (const slot of [...slots].sort((a, b) => a - b)) {
      const tip = await tipOf(q, stream, slot)
      if (tip) parts.push(`${stream}:${slot}:${tip.seq}:${Buffer.from(tip.digest).toString('hex')}`)
    }
  }
  return `${PREFIX} ${parts.join(',')}`
}

interface HeadEntry {
  stream: AuditStream
  slot: number
  seq: number
  digest: Uint8Array
}

function parseHead(head: string): HeadEntry[] {
  const bad = () =>
    new AgentFsError(
      'INVALID_ARGUMENT',
      `'${head.slice(0, 80)}' is not an audit head; pass the line "agentfs verify --head" printed`,
    )
  const trimmed = head.trim()
  if (!trimmed.startsWith(`${PREFIX} `) && trimmed !== PREFIX) throw bad()
  const body = trimmed.slice(PREFIX.length).trim()
  if (body === '') return []
  return body.split(',').map((part) => {
    const m = /^(call|change):(\d{1,7}):(\d{1,16}):([0-9a-f]{64})$/.exec(part)
    if (!m) throw bad()
    return {
      stream: m[1] as AuditStream,
      slot: Number(m[2]),
      seq: Number(m[3]),
      digest: Buffer.from(m[4]!, 'hex'),
    }
  })
}

/** What is wrong with one row of the audit, as {@link verifyAudit} found it. */
export interface AuditIssue {
  readonly stream: AuditStream
  /** The row's id (`tool_calls.id`, `agentfs_change.seq`). */
  readonly seq: number
  /**
   * `changed`: the row (or its seal) differs from what was sealed; `removed`: a sealed row is
   * gone; `inserted`: a row that was never sealed sits among sealed ones; `unkeyed`: sealed
   * without a key while keys were given; `unknown-key`: sealed with a key not given; `cut`: the
   * expected head names a row the chain no longer reaches; `rebuilt`: the chain at the expected
   * head has another digest (rebuilt since).
   */
  readonly kind: 'changed' | 'removed' | 'inserted' | 'unkeyed' | 'unknown-key' | 'cut' | 'rebuilt'
  readonly message: string
}

/** Options of {@link verifyAudit}. */
export interface VerifyOptions {
  /** The keys the chain was sealed with; with any given, rows sealed without one are issues. */
  readonly keys?: readonly AuditKey[]
  /** A head printed earlier (`auditHead`): the chain must still reach it, unchanged. */
  readonly expectHead?: string
}

/** The result of {@link verifyAudit}. */
export interface AuditReport {
  /** True when no issue was found (unsealed rows are not issues, but are not proved either). */
  readonly ok: boolean
  /** The first issues, oldest row first per stream (at most 100 listed; see `issueCount`). */
  readonly issues: AuditIssue[]
  readonly issueCount: number
  /** Rows proved by the chain, per stream. */
  readonly verified: Record<AuditStream, number>
  /** Rows after the last sealed one, per stream: not proved until sealed. */
  readonly unsealed: Record<AuditStream, number>
  /** Per stream and slot, the rows trimmed away below a kept anchor. */
  readonly trimmedTo: Array<{ stream: AuditStream; slot: number; seq: number }>
  /** The head now (see {@link auditHead}). */
  readonly head: string
}

/**
 * Walks both chains and reports each row changed, inserted or removed since it was sealed, and
 * whether the chain still reaches `expectHead`. Runs in one read transaction.
 */
export async function verifyAudit(q: Queryable, options: VerifyOptions = {}): Promise<AuditReport> {
  const keys = new Map((options.keys ?? []).map((k) => checkAuditKey(k)).map((k) => [k.id, k]))
  const expected = options.expectHead === undefined ? [] : parseHead(options.expectHead)
  return q.transaction(async (tx) => {
    const issues: AuditIssue[] = []
    let issueCount = 0
    const report = (issue: AuditIssue) => {
      issueCount++
      if (issues.length < MAX_ISSUES) issues.push(issue)
    }
    const verified: Record<AuditStream, number> = { call: 0, change: 0 }
    const unsealed: Record<AuditStream, number> = { call: 0, change: 0 }
    const trimmedTo: AuditReport['trimmedTo'] = []
    // Each payload is checked once (several calls may name it).
    const payloads = new Map<string, string | undefined>()
    for (const stream of AUDIT_STREAMS) {
      const slots = new Set([...(await slotsOf(tx, stream)), ...(await chainSlots(tx, stream))])
      for (const e of expected) if (e.stream === stream) slots.add(e.slot)
      for (const slot of [...slots].sort((a, b) => a - b)) {
        const want = new Map(
          expected
            .filter((e) => e.stream === stream && e.slot === slot)
            .map((e) => [e.seq, e.digest] as const),
        )
        const anchor = await anchorOf(tx, stream, slot)
        if (anchor) trimmedTo.push({ stream, slot, seq: anchor.seq })
        const result = await verifySlot(tx, stream, slot, anchor, keys, want, report, payloads)
        verified[stream] += result.verified
        unsealed[stream] += result.unsealed
      }
    }
    return {
      ok: issueCount === 0,
      issues,
      issueCount,
      verified,
      unsealed,
      trimmedTo,
      head: await auditHead(tx),
    }
  })
}

async function verifySlot(
  tx: Executor,
  stream: AuditStream,
  slot: number,
  anchor: Tip | undefined,
  keys: Map<string, { key: Uint8Array; id: string }>,
  want: Map<number, Uint8Array>,
  report: (issue: AuditIssue) => void,
  payloads: Map<string, string | undefined>,
): Promise<{ verified: number; unsealed: number }> {
  const { id, column, select } = STREAM_SQL[stream]
  const high = (slot + 1) * SLOT_SPAN
  const floor = anchor?.seq ?? slot * SLOT_SPAN - 1
  // Rows at or below a trim anchor were trimmed; one there now was put back.
  const { rows: below } = await tx.execute<{ seq: number }>({
    sql: `SELECT ${id} AS seq FROM ${STREAM_SQL[stream].table} WHERE ${id} >= (SELECT ?) AND ${id} <= (SELECT ?) ORDER BY ${id} LIMIT 1`,
    params: [slot * SLOT_SPAN, floor],
  })
  if (below[0])
    report({
      stream,
      seq: below[0].seq,
      kind: 'inserted',
      message: `${stream} ${below[0].seq}: a row below the trim anchor (${floor}), where every row was trimmed`,
    })
  const { rows: lastRows } = await tx.execute<{ seq: number | null }>({
    sql: 'SELECT max(seq) AS seq FROM agentfs_audit_chain WHERE stream = (SELECT ?) AND seq > (SELECT ?) AND seq < (SELECT ?)',
    params: [stream, floor, high],
  })
  const lastSealed = lastRows[0]?.seq ?? floor
  let previous = anchor?.digest ?? ZERO
  let verified = 0
  let unsealed = 0
  let cursor = floor
  const checked = new Set<number>()
  // A head at the row a trim stopped at is still proved by the anchor's digest.
  const atAnchor = anchor ? want.get(anchor.seq) : undefined
  if (anchor && atAnchor) {
    checked.add(anchor.seq)
    if (!equal(atAnchor, anchor.digest))
      report({
        stream,
        seq: anchor.seq,
        kind: 'rebuilt',
        message: `${stream} ${anchor.seq}: the trim anchor has another digest than the expected head recorded (rebuilt since)`,
      })
  }
  // Merge the rows and their seals, page by page, in id order (memory stays bounded).
  for (;;) {
    const { rows: data } = await tx.execute<unknown[]>({
      arrays: true,
      sql: `${select} WHERE ${column} > (SELECT ?) AND ${column} < (SELECT ?) ORDER BY 1 LIMIT (SELECT ?)`,
      params: [cursor, high, VERIFY_PAGE],
    })
    const { rows: seals } = await tx.execute<{
      seq: number
      digest: unknown
      key_id: string | null
    }>({
      sql: 'SELECT seq, digest, key_id FROM agentfs_audit_chain WHERE stream = (SELECT ?) AND seq > (SELECT ?) AND seq < (SELECT ?) ORDER BY seq LIMIT (SELECT ?)',
      params: [stream, cursor, high, VERIFY_PAGE],
    })
    let top = high - 1
    if (data.length === VERIFY_PAGE) top = Math.min(top, Number(data.at(-1)![0]))
    if (seals.length === VERIFY_PAGE) top = Math.min(top, seals.at(-1)!.seq)
    const rowsById = new Map(data.filter((r) => Number(r[0]) <= top).map((r) => [Number(r[0]), r]))
    const sealById = new Map(seals.filter((s) => s.seq <= top).map((s) => [s.seq, s]))
    const ids = [...new Set([...rowsById.keys(), ...sealById.keys()])].sort((a, b) => a - b)
    for (const seq of ids) {
      const row = rowsById.get(seq)
      const seal = sealById.get(seq)
      if (!seal) {
        if (seq < lastSealed)
          report({
            stream,
            seq,
            kind: 'inserted',
            message: `${stream} ${seq}: not sealed, between sealed rows (inserted or renumbered later)`,
          })
        else unsealed++
        continue
      }
      const digest = bytesOf(seal.digest)
      const key = seal.key_id === null ? undefined : keys.get(seal.key_id)
      if (!row)
        report({
          stream,
          seq,
          kind: 'removed',
          message: `${stream} ${seq}: sealed, but the row is gone (removed or renumbered)`,
        })
      else if (seal.key_id !== null && !key)
        report({
          stream,
          seq,
          kind: 'unknown-key',
          message: `${stream} ${seq}: sealed with key '${seal.key_id}', which was not given; pass that key to verify it`,
        })
      else if (seal.key_id === null && keys.size > 0)
        report({
          stream,
          seq,
          kind: 'unkeyed',
          message: `${stream} ${seq}: sealed without a key though keys were given (anyone could have sealed it)`,
        })
      else if (!equal(auditDigest(stream, previous, row, key), digest))
        report({
          stream,
          seq,
          kind: 'changed',
          message: `${stream} ${seq}: the row or its seal differs from what was sealed (changed or reordered)`,
        })
      else {
        // The sealed row names its payloads by SHA-256: their bytes must still hash to it.
        const problem = stream === 'call' ? await payloadProblem(tx, row[14], payloads) : undefined
        if (problem)
          report({ stream, seq, kind: 'changed', message: `${stream} ${seq}: ${problem}` })
        else verified++
      }
      const expect = want.get(seq)
      if (expect) {
        checked.add(seq)
        if (!equal(expect, digest))
          report({
            stream,
            seq,
            kind: 'rebuilt',
            message: `${stream} ${seq}: the chain has another digest than the expected head recorded (rebuilt since)`,
          })
      }
      previous = digest
    }
    if (top === high - 1) break
    cursor = top
  }
  for (const seq of want.keys())
    if (!checked.has(seq))
      report({
        stream,
        seq,
        kind: 'cut',
        message:
          seq <= floor
            ? `${stream} ${seq}: the expected head is at a row trimmed since (anchor ${floor}); verify against a later head`
            : `${stream} ${seq}: the expected head names a sealed row the chain no longer reaches (cut off at ${lastSealed})`,
      })
  return { verified, unsealed }
}

/**
 * Before rows of the change feed up to `upTo` are deleted (a trim): seals what is not sealed,
 * keeps for each slot the digest of the last trimmed row as the chain's anchor, and deletes the
 * trimmed rows' seals. Call inside the trim's transaction; `nowUs` is the time the seals record
 * (the database's clock).
 */
export async function anchorTrim(
  tx: Executor,
  stream: AuditStream,
  upTo: number,
  key?: AuditKey,
  nowUs = Date.now() * 1000,
): Promise<void> {
  const k = key ? checkAuditKey(key) : undefined
  // A synced client seals only its own slot: another client's rows are that client's to seal.
  const own = ownSlot(tx as Queryable)
  for (const slot of await slotsOf(tx, stream)) {
    const low = slot * SLOT_SPAN
    if (low > upTo) break
    const top = Math.min(upTo, low + SLOT_SPAN - 1)
    // Seal first, so the anchor carries what the trimmed rows were.
    const mine = own === undefined || own === slot
    while (mine) {
      const tip = await tipOf(tx, stream, slot)
      if ((tip?.seq ?? low - 1) >= top) break
      if ((await sealBatch(tx, stream, slot, k, nowUs, top)) === 0) break
    }
    const { rows } = await tx.execute<{ seq: number; digest: Uint8Array }>({
      sql: 'SELECT seq, digest FROM agentfs_audit_chain WHERE stream = (SELECT ?) AND seq BETWEEN (SELECT ?) AND (SELECT ?) ORDER BY seq DESC LIMIT 1',
      params: [stream, low, top],
    })
    const last = rows[0]
    if (!last) continue
    await tx.execute({
      sql: 'INSERT INTO agentfs_audit_anchor (stream, slot, seq, digest) VALUES (?, ?, ?, ?) ON CONFLICT(stream, slot) DO UPDATE SET seq = excluded.seq, digest = excluded.digest',
      params: [stream, slot, last.seq, bytesOf(last.digest)],
    })
    await tx.execute({
      sql: 'DELETE FROM agentfs_audit_chain WHERE stream = (SELECT ?) AND seq BETWEEN (SELECT ?) AND (SELECT ?)',
      params: [stream, low, last.seq],
    })
  }
}

/** What is wrong with the payloads a sealed call names (`refs`: its `payloads` column), if anything. */
async function payloadProblem(
  tx: Executor,
  refs: unknown,
  seen: Map<string, string | undefined>,
): Promise<string | undefined> {
  if (refs === null || refs === undefined) return undefined
  let parsed: Record<string, string>
  try {
    parsed = parseRefs(typeof refs === 'string' ? refs : String(refs)) as Record<string, string>
  } catch (error) {
    return (error as Error).message
  }
  for (const [column, sha256] of Object.entries(parsed)) {
    if (!seen.has(sha256)) seen.set(sha256, await checkPayload(tx, sha256))
    const problem = seen.get(sha256)
    if (problem) return `its ${column} (payload ${sha256.slice(0, 16)}…): ${problem}`
  }
  return undefined
}
