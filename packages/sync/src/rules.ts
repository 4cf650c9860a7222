import {
  FS_INODE_COLUMNS,
  IDEMPOTENCY_STORED_COLUMNS,
  MERGE_LIMITS,
  SLOT_SPAN,
} from '@agentfs/core'
import type { DatabaseRowMutation, DatabaseRowTransformResult } from '@tursodatabase/sync'
import type { PendingSwap, PushedKv } from './state.js'

/** Longest name in bytes (the filesystem's NAME_MAX). */
const NAME_MAX = 255

/** `slot-n` of an id: which client made the row, and its number there. */
export const idLabel = (id: number) => `${Math.floor(id / SLOT_SPAN)}-${id % SLOT_SPAN}`

/**
 * The name an entry takes when another client's entry holds its name: `name (conflict 3-17)`,
 * unique because the label is the entry's own id; the name is shortened (by whole characters)
 * to keep it within NAME_MAX.
 */
export function conflictName(name: string, id: number): string {
  const suffix = ` (conflict ${idLabel(id)})`
  let stem = name
  while (Buffer.byteLength(stem + suffix) > NAME_MAX) stem = Array.from(stem).slice(0, -1).join('')
  return stem + suffix
}

/** The bytes of an inode a whole-file write of this push replaced, as its deletion carried them. */
export interface ReplacedContent {
  /** The size its fs_inode row had (unknown until its deletion is seen). */
  size?: number
  readonly chunks: Map<number, Uint8Array>
  bytes: number
  /** More than the merge limit (or the push's budget): not kept, not merged. */
  over: boolean
}

/** At most this much replaced content is kept a push (beyond, losing writes become copies). */
export const REPLACED_BUDGET = 64 * 1024 * 1024

/** What the rules saw during one push, for reconciliation after the pull. */
export interface PushRecord {
  readonly swaps: PendingSwap[]
  /** Each inode a whole-file write put in place → the inode it replaced. */
  readonly replaced: Map<number, number>
  /** The content of the inodes replaced, from their deletions (for merging a lost write). */
  readonly before: Map<number, ReplacedContent>
  /** Bytes of `before` still allowed in this push. */
  budget: number
  readonly kv: PushedKv[]
  /** Inodes this push deletes (their chunks go only if the deletion takes effect). */
  readonly freed: Set<number>
  /** The time (µs) of the last write or delete of each kv key in this push. */
  readonly kvTimes: Map<string, number>
}

type Row = Record<string, unknown>

const rewrite = (sql: string, values: unknown[]): DatabaseRowTransformResult => ({
  operation: 'rewrite',
  stmt: { sql, values },
})
const SKIP: DatabaseRowTransformResult = { operation: 'skip' }

/** A name for the entry `row`, unless another entry in its directory holds it on the server. */
const NAME_UNLESS_TAKEN =
  'CASE WHEN EXISTS (SELECT 1 FROM fs_dentry WHERE parent_ino = ? AND name = ? AND id <> ?) THEN ? ELSE ? END'

function dentryInsert(after: Row): DatabaseRowTransformResult {
  const id = Number(after.id)
  const name = String(after.name)
  const parent = after.parent_ino
  return rewrite(
    `INSERT INTO fs_dentry (id, name, parent_ino, ino) SELECT ?, ${NAME_UNLESS_TAKEN}, ?, ? WHERE true ON CONFLICT(id) DO UPDATE SET name = excluded.name, parent_ino = excluded.parent_ino, ino = excluded.ino`,
    [id, parent, name, id, conflictName(name, id), name, parent, after.ino],
  )
}

function dentryUpdate(m: DatabaseRowMutation, record: PushRecord): DatabaseRowTransformResult {
  const before = m.before ?? {}
  const after = m.after ?? {}
  const updates = m.updates ?? {}
  const id = Number(after.id ?? before.id)
  const sets: string[] = []
  const values: unknown[] = []
  if ('name' in updates || 'parent_ino' in updates) {
    const name = String(after.name)
    sets.push(`name = ${NAME_UNLESS_TAKEN}`, 'parent_ino = ?')
    values.push(after.parent_ino, name, id, conflictName(name, id), name, after.parent_ino)
  }
  if ('ino' in updates) {
    // The file was replaced: applied only if nobody replaced it first (compare and swap).
    sets.push('ino = CASE WHEN ino = ? THEN ? ELSE ino END')
    values.push(before.ino, after.ino)
    record.swaps.push({
      ino: Number(after.ino),
      parent: Number(after.parent_ino),
      name: String(after.name),
      entry: id,
    })
    record.replaced.set(Number(after.ino), Number(before.ino))
    if (!record.before.has(Number(before.ino)))
      record.before.set(Number(before.ino), { chunks: new Map(), bytes: 0, over: false })
  }
  if (sets.length === 0) return null
  values.push(id)
  return rewrite(`UPDATE fs_dentry SET ${sets.join(', ')} WHERE id = ?`, values)
}

/** Columns of fs_inode a client may set (nlink is derived from the entries instead). */
const INODE_COLUMNS: ReadonlySet<string> = new Set(FS_INODE_COLUMNS.filter((c) => c !== 'nlink'))

function inodeUpdate(m: DatabaseRowMutation): DatabaseRowTransformResult {
  const updates = m.updates ?? {}
  if (!('nlink' in updates)) return null
  const ino = (m.after ?? m.before)?.ino
  const sets: string[] = []
  const values: unknown[] = []
  for (const [column, value] of Object.entries(updates)) {
    if (!INODE_COLUMNS.has(column)) continue
    sets.push(`${column} = ?`)
    values.push(value)
  }
  // Replays carry absolute values, so two clients' links would count once: the server counts.
  sets.push(
    'nlink = CASE WHEN ino = 1 THEN nlink ELSE (SELECT count(*) FROM fs_dentry WHERE fs_dentry.ino = fs_inode.ino) END',
  )
  values.push(ino)
  return rewrite(`UPDATE fs_inode SET ${sets.join(', ')} WHERE ino = ?`, values)
}

/** True when the server holds no later write of the key than `micros` (after the version row). */
const KV_NEWEST = '? >= coalesce((SELECT updated_us FROM agentfs_kv_version WHERE key = ?), 0)'

function kvVersion(after: Row, record: PushRecord): DatabaseRowTransformResult {
  if (typeof after.updated_us !== 'number') return null
  record.kvTimes.set(String(after.key), after.updated_us)
  // The later write's version row wins; the value's replay (next) compares with it.
  return rewrite(
    'INSERT INTO agentfs_kv_version (key, version, updated_us) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET version = excluded.version, updated_us = excluded.updated_us WHERE excluded.updated_us >= coalesce(agentfs_kv_version.updated_us, 0)',
    [after.key, after.version, after.updated_us],
  )
}

function kvWrite(after: Row, record: PushRecord): DatabaseRowTransformResult {
  const key = String(after.key)
  record.kv.push({ key, value: String(after.value), updatedAt: Number(after.updated_at) })
  const micros = record.kvTimes.get(key)
  // Last writer wins by the time of the write (µs, from the version row pushed just before;
  // whole seconds for rows written without one), not by the order of pushes.
  if (micros === undefined)
    return rewrite(
      'INSERT INTO kv_store (key, value, created_at, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at WHERE excluded.updated_at >= kv_store.updated_at',
      [key, after.value, after.created_at, after.updated_at],
    )
  return rewrite(
    `INSERT INTO kv_store (key, value, created_at, updated_at) SELECT ?, ?, ?, ? WHERE ${KV_NEWEST} ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
    [key, after.value, after.created_at, after.updated_at, micros, key],
  )
}

function kvDelete(before: Row, record: PushRecord): DatabaseRowTransformResult {
  const key = String(before.key)
  const micros = record.kvTimes.get(key)
  if (micros === undefined) return null
  // A delete loses to a later write of the key by another client.
  return rewrite(`DELETE FROM kv_store WHERE key = ? AND ${KV_NEWEST}`, [key, micros, key])
}

/** Keeps a chunk of an inode a whole-file write replaced, within the limits. */
function keepReplaced(record: PushRecord, row: Row): void {
  const replaced = record.before.get(Number(row.ino))
  if (!replaced || replaced.over) return
  const data = row.data
  const bytes =
    data instanceof Uint8Array
      ? data
      : Array.isArray(data)
        ? Uint8Array.from(data as number[])
        : data instanceof ArrayBuffer
          ? new Uint8Array(data)
          : undefined
  if (
    bytes === undefined ||
    replaced.bytes + bytes.byteLength > MERGE_LIMITS.bytes ||
    bytes.byteLength > record.budget
  ) {
    replaced.over = true
    record.budget += replaced.bytes
    replaced.chunks.clear()
    return
  }
  replaced.chunks.set(Number(row.chunk_index), bytes)
  replaced.bytes += bytes.byteLength
  record.budget -= bytes.byteLength
}

/** An empty record, for one push. */
export const newPushRecord = (): PushRecord => ({
  swaps: [],
  replaced: new Map(),
  before: new Map(),
  budget: REPLACED_BUDGET,
  kv: [],
  freed: new Set(),
  kvTimes: new Map(),
})

/**
 * The per-table conflict rules, applied by the sync engine to each row change as it is pushed
 * (`transform`). The record `current()` returns (the running push's) collects what
 * reconciliation needs after the next pull.
 */
export function conflictRules(current: () => PushRecord) {
  return (m: DatabaseRowMutation): DatabaseRowTransformResult => {
    const record = current()
    const type = m.changeType as string
    switch (m.tableName) {
      case 'fs_dentry':
        if (type === 'insert') return dentryInsert(m.after ?? {})
        if (type === 'update') return dentryUpdate(m, record)
        // Removes the entry only if it still names the inode this client saw: a file another
        // client replaced meanwhile survives the delete. (The 0.7 engine's own replay of a
        // delete also matches the whole row; this rule does not depend on that.)
        return rewrite('DELETE FROM fs_dentry WHERE id = ? AND ino = ?', [
          m.before?.id,
          m.before?.ino,
        ])
      case 'fs_inode': {
        if (type === 'update') return inodeUpdate(m)
        if (type !== 'delete') return null
        // Not while another client's entry (a link made meanwhile) still names it.
        const ino = Number(m.before?.ino)
        record.freed.add(ino)
        const replaced = record.before.get(ino)
        if (replaced) replaced.size = Number(m.before?.size)
        return rewrite(
          'DELETE FROM fs_inode WHERE ino = ? AND NOT EXISTS (SELECT 1 FROM fs_dentry WHERE ino = ?)',
          [ino, ino],
        )
      }
      case 'fs_data':
      case 'fs_symlink': {
        const ino = Number(m.before?.ino)
        if (type === 'delete' && m.tableName === 'fs_data') keepReplaced(record, m.before ?? {})
        if (type !== 'delete' || !record.freed.has(ino)) return null
        const key = m.tableName === 'fs_data' ? ' AND chunk_index = ?' : ''
        return rewrite(
          `DELETE FROM ${m.tableName} WHERE ino = ?${key} AND NOT EXISTS (SELECT 1 FROM fs_inode WHERE ino = ?)`,
          m.tableName === 'fs_data' ? [ino, m.before?.chunk_index, ino] : [ino, ino],
        )
      }
      case 'agentfs_kv_version':
        return type === 'delete' ? null : kvVersion(m.after ?? {}, record)
      case 'kv_store':
        return type === 'delete' ? kvDelete(m.before ?? {}, record) : kvWrite(m.after ?? {}, record)
      // The audit log and the filesystem's settings are written once, never changed.
      case 'tool_calls':
      case 'agentfs_tool_call_meta':
      case 'agentfs_sync_conflict':
      case 'fs_config':
        return type === 'insert' ? null : SKIP
      // An idempotency key applied on two clients before either pulled: the first to push
      // keeps its record (both applied the request; every later retry anywhere is recognised).
      // Its seal (mac, key_id) travels with it: a client with integrity keys replays only
      // records they verify.
      // An expired record is deleted only while it is still the one this client saw expire.
      case 'agentfs_idempotency': {
        if (type === 'update') return SKIP
        const row = (type === 'insert' ? m.after : m.before) ?? {}
        if (type === 'delete')
          return rewrite(
            'DELETE FROM agentfs_idempotency WHERE scope = ? AND key = ? AND expires_us <= ?',
            [row.scope, row.key, row.expires_us],
          )
        return rewrite(
          `INSERT INTO agentfs_idempotency (${IDEMPOTENCY_STORED_COLUMNS.join(', ')}) VALUES (${IDEMPOTENCY_STORED_COLUMNS.map(() => '?').join(', ')}) ON CONFLICT(scope, key) DO NOTHING`,
          IDEMPOTENCY_STORED_COLUMNS.map((c) => row[c] ?? null),
        )
      }
      // Audit payloads are named by their content: two clients storing the same one agree;
      // never changed or deleted.
      case 'agentfs_payload':
        if (type !== 'insert') return SKIP
        return rewrite(
          'INSERT INTO agentfs_payload (sha256, size, chunk_size, created_at_ns) VALUES (?, ?, ?, ?) ON CONFLICT(sha256) DO NOTHING',
          [m.after?.sha256, m.after?.size, m.after?.chunk_size, m.after?.created_at_ns],
        )
      case 'agentfs_payload_chunk':
        if (type !== 'insert') return SKIP
        return rewrite(
          'INSERT INTO agentfs_payload_chunk (sha256, chunk_index, data) VALUES (?, ?, ?) ON CONFLICT(sha256, chunk_index) DO NOTHING',
          [m.after?.sha256, m.after?.chunk_index, m.after?.data],
        )
      // Slots are claimed on the server only.
      case 'agentfs_sync_slot':
        return SKIP
      default:
        return null
    }
  }
}
