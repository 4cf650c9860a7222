import { micros } from '../audit/changes.js'
import type { Timestamp } from '../clock.js'
import { captureContent, dropRefs, readInode } from '../content/blob-store.js'
import type { ChunkFormat } from '../content/chunk-codec.js'
import type { Executor } from '../driver/driver.js'
import { AgentFsError } from '../errors.js'
import { readMeta, writeMeta } from '../schema/meta.js'
import { S_IFMT, S_IFREG } from '../schema/schema.js'

/** How many past versions of files are kept (every limit applies; the oldest go first). */
export interface VersionRetention {
  /** Versions kept per file (default 20). */
  readonly maxCount?: number
  /** Versions older than this are dropped (default 30 days). */
  readonly maxAgeMs?: number
  /** Total bytes of all kept versions, before chunk dedup (default 256 MiB). */
  readonly maxBytes?: number
  /** Files larger than this get no versions (default 8 MiB). */
  readonly maxFileBytes?: number
}

/** The defaults of {@link VersionRetention}. */
export const VERSION_DEFAULTS: Required<VersionRetention> = {
  maxCount: 20,
  maxAgeMs: 30 * 86_400_000,
  maxBytes: 256 * 1024 * 1024,
  maxFileBytes: 8 * 1024 * 1024,
}

/** Retention with defaults filled in and every value checked. */
export function versionRetention(given: VersionRetention = {}): Required<VersionRetention> {
  const out = { ...VERSION_DEFAULTS, ...given }
  for (const [key, value] of Object.entries(out))
    if (!Number.isSafeInteger(value) || value < 0)
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        `versions.${key} must be a non-negative integer, got ${String(value)}`,
      )
  return out
}

const BYTES = 'history.version_bytes'

/**
 * The `agentfs_meta` row holding a database's own version setting: JSON retention (on) or
 * `off`. `AgentFS.open` uses it when its `versions` option is not given, so every process that
 * opens the database (the CLI included) keeps versions alike.
 */
export const META_VERSIONS = 'history.versions'

const RETENTION_KEYS = Object.keys(VERSION_DEFAULTS) as (keyof VersionRetention)[]

/** The database's stored version setting: its retention, false (off), undefined (none). */
export async function storedVersions(
  q: Executor,
): Promise<Required<VersionRetention> | false | undefined> {
  const value = await readMeta(q, META_VERSIONS)
  if (value === undefined || value === null) return undefined
  if (value === 'off') return false
  let parsed: unknown
  try {
    parsed = JSON.parse(String(value))
  } catch {
    parsed = undefined
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new AgentFsError(
      'CORRUPT',
      `agentfs_meta row ${META_VERSIONS} is not a setting this library writes; set it again (agentfs versions DB on|off)`,
    )
  const given: Record<string, unknown> = {}
  for (const key of RETENTION_KEYS)
    if ((parsed as Record<string, unknown>)[key] !== undefined)
      given[key] = (parsed as Record<string, unknown>)[key]
  return versionRetention(given as VersionRetention)
}

/**
 * Stores the database's version setting (see {@link META_VERSIONS}): true or a retention keeps
 * versions, false turns them off, undefined removes the setting (each open decides again).
 */
export async function storeVersions(
  q: Executor,
  setting: boolean | VersionRetention | undefined,
): Promise<void> {
  await writeMeta(
    q,
    META_VERSIONS,
    setting === undefined
      ? undefined
      : setting === false
        ? 'off'
        : JSON.stringify(versionRetention(setting === true ? {} : setting)),
  )
}

async function addBytes(q: Executor, delta: number): Promise<number> {
  const { rows } = await q.execute<{ value: string }>({
    sql: `INSERT INTO agentfs_meta (key, value) VALUES (?, ?)
ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + ? AS TEXT) RETURNING value`,
    params: [BYTES, String(Math.max(0, delta)), delta],
  })
  return Number(rows[0]?.value ?? 0)
}

/**
 * Deletes the versions `where` selects, releasing their chunks; returns the bytes freed. The
 * callers' clauses take their values through subqueries (ARCHITECTURE.md, "Statement shapes").
 */
async function drop(q: Executor, where: string, params: (number | string)[]): Promise<number> {
  const { rows } = await q.execute<{ size: number; chunks: Uint8Array }>({
    sql: `DELETE FROM agentfs_file_version WHERE ${where} RETURNING size, chunks`,
    params,
  })
  let freed = 0
  for (const row of rows) {
    freed += row.size
    await dropRefs(q, row.chunks)
  }
  if (freed > 0) await addBytes(q, -freed)
  return freed
}

/**
 * Keeps the content inode `ino` has now as a version (its content-defined chunks in the blob
 * store, shared with other versions), then applies the retention limits. Runs in the transaction
 * of the change.
 */
export async function captureVersion(
  q: Executor,
  ino: number,
  path: string | undefined,
  now: Timestamp,
  format: ChunkFormat,
  limits: Required<VersionRetention>,
): Promise<void> {
  const { rows } = await q.execute<{ mode: number; size: number; version: string }>({
    sql: 'SELECT mode, size, CAST(ctime * 1000000000 + ctime_nsec AS TEXT) AS version FROM fs_inode WHERE ino = ?',
    params: [ino],
  })
  const node = rows[0]
  if (!node || (node.mode & S_IFMT) !== S_IFREG || node.size > limits.maxFileBytes) return
  const seen = await q.execute({
    sql: 'SELECT 1 FROM agentfs_file_version WHERE ino = ? AND version = ?',
    params: [ino, node.version],
  })
  if (seen.rows.length > 0) return
  const at = micros(now)
  // Content-defined chunks: consecutive versions share all but what an edit touched.
  const chunks = await captureContent(q, await readInode(q, ino, node.size, format))
  await q.execute({
    sql: 'INSERT INTO agentfs_file_version (ino, version, path, at_us, size, chunks) VALUES (?, ?, ?, ?, ?, ?)',
    params: [ino, node.version, path ?? null, at, node.size, chunks],
  })
  let total = await addBytes(q, node.size)
  total -= await drop(
    q,
    'ino = (SELECT ?) AND id NOT IN (SELECT id FROM agentfs_file_version WHERE ino = (SELECT ?) ORDER BY id DESC LIMIT (SELECT ?))',
    [ino, ino, limits.maxCount],
  )
  // Bounded work per change: at most 64 expired versions go each time.
  total -= await drop(
    q,
    'id IN (SELECT id FROM agentfs_file_version WHERE at_us < (SELECT ?) ORDER BY at_us LIMIT 64)',
    [at - limits.maxAgeMs * 1000],
  )
  for (let round = 0; round < 64 && total > limits.maxBytes; round++) {
    const freed = await drop(
      q,
      'id IN (SELECT id FROM agentfs_file_version ORDER BY id LIMIT 16)',
      [],
    )
    total -= freed
  }
}
