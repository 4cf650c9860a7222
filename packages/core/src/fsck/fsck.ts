import { type Executor, placeholders } from '../driver/driver.js'
import { fullTextSearch, type Queryable, recursiveQueries } from '../driver/guard-driver.js'
import {
  ROOT_INO,
  S_IFBLK,
  S_IFCHR,
  S_IFDIR,
  S_IFIFO,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
  S_IFSOCK,
} from '../schema/schema.js'
import type { Check, FindRow } from './check.js'
import { CHUNK_FRAME_CHECKS, COMPRESSED, FRAME } from './chunks.js'
import { HISTORY_CHECKS } from './history.js'
import { ORPHAN_CHECKS } from './orphans.js'
import { PAYLOAD_CHECKS } from './payloads.js'
import { SEARCH_CHECKS } from './search.js'
import { VECTOR_CHECKS } from './vectors.js'

/** One inconsistency `fsck` found. */
export interface FsckFinding {
  /** Stable rule id, e.g. `nlink`, `size`, `orphan-chunk`. */
  readonly rule: string
  readonly message: string
  readonly ino?: number
  /** True when `fsck({ repair: true })` fixes it safely (no user data is guessed or dropped). */
  readonly repairable: boolean
}

/** Result of {@link fsck}. */
export interface FsckReport {
  readonly findings: readonly FsckFinding[]
  /** Findings fixed (only with `repair`). */
  readonly repaired: readonly FsckFinding[]
  readonly ok: boolean
}

/** Largest number of parameters in one `IN (…)` list. */
const IN_BATCH = 500

/**
 * Entries that cannot be reached from the root: a recursive query where the engine has one,
 * else a breadth-first walk from the root, one statement per 500 directories of a level. Each
 * inode joins the frontier at most once, so the walk ends even on a cyclic tree.
 */
/** Inodes that have directory entries but no path from the root (cycles, detached trees). */
export async function unreachableInodes(q: Queryable): Promise<number[]> {
  return (await unreachable(q)).map((row) => row.ino!)
}

async function unreachable(q: Queryable): Promise<FindRow[]> {
  if (recursiveQueries(q)) {
    const { rows } = await q.execute<FindRow>({
      sql: `WITH RECURSIVE reach(ino) AS (SELECT ${ROOT_INO} UNION SELECT d.ino FROM fs_dentry d JOIN reach ON d.parent_ino = reach.ino)
      SELECT DISTINCT d.ino AS ino, NULL AS detail FROM fs_dentry d WHERE d.ino NOT IN (SELECT ino FROM reach)`,
    })
    return rows
  }
  const reached = new Set<number>([ROOT_INO])
  let frontier = [ROOT_INO]
  while (frontier.length > 0) {
    const next: number[] = []
    for (let i = 0; i < frontier.length; i += IN_BATCH) {
      const ids = frontier.slice(i, i + IN_BATCH)
      const { rows } = await q.execute<{ ino: number }>({
        sql: `SELECT DISTINCT ino FROM fs_dentry WHERE parent_ino IN (${placeholders(ids.length)})`,
        params: ids,
      })
      for (const { ino } of rows) {
        if (reached.has(ino)) continue
        reached.add(ino)
        next.push(ino)
      }
    }
    frontier = next
  }
  const { rows } = await q.execute<{ ino: number }>({
    sql: 'SELECT DISTINCT ino FROM fs_dentry',
  })
  return rows.filter((r) => !reached.has(r.ino)).map((r) => ({ ino: r.ino, detail: null }))
}

/** The condition on `fs_dentry.name` that no path component can meet. */
const BAD_NAME =
  "typeof(name) != 'text' OR name IN ('', '.', '..') OR instr(name, '/') > 0 OR instr(CAST(name AS BLOB), X'00') > 0"

/**
 * How many entries have a name that cannot be a path component (a crafted or damaged
 * database): a scan of `fs_dentry`, for tools that flag damage when they open a database.
 */
export async function countBadNames(q: Queryable): Promise<number> {
  const { rows } = await q.execute<{ n: number }>({
    sql: `SELECT COUNT(*) AS n FROM fs_dentry WHERE ${BAD_NAME}`,
  })
  return Number(rows[0]?.n ?? 0)
}

const TYPES = [S_IFREG, S_IFDIR, S_IFLNK, S_IFIFO, S_IFCHR, S_IFBLK, S_IFSOCK].join(', ')
const CHUNK = "(SELECT CAST(value AS INTEGER) FROM fs_config WHERE key = 'chunk_size')"
/** A chunk the length rules apply to: a BLOB, and not a frame of a compressed database. */
const PLAIN = `typeof(f.data) = 'blob' AND NOT (${FRAME} AND ${COMPRESSED})`
const LINKS = `(SELECT COUNT(*) FROM fs_dentry d WHERE d.ino = i.ino) + (i.ino = ${ROOT_INO})`
const DERIVED_PARENT =
  "CASE WHEN instr(substr(path, 2), '/') = 0 THEN '/' ELSE substr(path, 1, length(rtrim(path, replace(path, '/', ''))) - 1) END"

/** Every consistency rule of spec v0.4, plus our extension tables. */
const CHECKS: readonly Check[] = [
  {
    rule: 'root',
    repairable: false,
    find: `SELECT NULL AS ino, 'missing or not a directory' AS detail WHERE NOT EXISTS (SELECT 1 FROM fs_inode WHERE ino = ${ROOT_INO} AND (mode & ${S_IFMT}) = ${S_IFDIR})`,
    message: () => 'the root directory (inode 1) is missing or not a directory',
  },
  {
    rule: 'dentry-target',
    repairable: true,
    find: 'SELECT d.ino AS ino, d.name AS detail FROM fs_dentry d LEFT JOIN fs_inode i ON i.ino = d.ino WHERE i.ino IS NULL',
    message: (r) => `entry '${r.detail}' points to missing inode ${r.ino}`,
    repair: 'DELETE FROM fs_dentry WHERE ino NOT IN (SELECT ino FROM fs_inode)',
  },
  {
    rule: 'dentry-parent',
    repairable: false,
    find: `SELECT d.ino AS ino, d.name AS detail FROM fs_dentry d LEFT JOIN fs_inode p ON p.ino = d.parent_ino WHERE p.ino IS NULL OR (p.mode & ${S_IFMT}) != ${S_IFDIR}`,
    message: (r) =>
      `entry '${r.detail}' (inode ${r.ino}) is in a parent that is missing or not a directory`,
  },
  {
    rule: 'mode',
    repairable: false,
    find: `SELECT ino, mode AS detail FROM fs_inode WHERE (mode & ${S_IFMT}) NOT IN (${TYPES})`,
    message: (r) =>
      `inode ${r.ino} has mode ${Number(r.detail).toString(8)}, which names no file type`,
  },
  {
    rule: 'nlink',
    repairable: true,
    find: `SELECT i.ino AS ino, i.nlink || ' recorded, ' || (${LINKS}) || ' entries' AS detail FROM fs_inode i WHERE i.nlink != ${LINKS}`,
    message: (r) => `inode ${r.ino}: nlink ${r.detail}`,
    repair: `UPDATE fs_inode AS i SET nlink = ${LINKS} WHERE i.nlink != ${LINKS}`,
  },
  ...ORPHAN_CHECKS,
  {
    rule: 'size',
    repairable: false,
    find: `SELECT ino, size AS detail FROM fs_inode WHERE typeof(size) != 'integer' OR size < 0 OR size > ${2 ** 44}`,
    message: (r) => `inode ${r.ino} has the impossible size ${r.detail}`,
  },
  {
    rule: 'chunk-type',
    repairable: true,
    find: "SELECT ino, chunk_index || ' holds ' || upper(typeof(data)) AS detail FROM fs_data WHERE typeof(data) != 'blob'",
    message: (r) => `inode ${r.ino}, chunk ${r.detail} instead of a BLOB`,
    // Text keeps its bytes as a BLOB; numbers and NULL have no bytes to keep and stay findings.
    repair: "UPDATE fs_data SET data = CAST(data AS BLOB) WHERE typeof(data) = 'text'",
  },
  {
    rule: 'chunk-past-eof',
    repairable: true,
    find: `SELECT f.ino AS ino, f.chunk_index AS detail FROM fs_data f JOIN fs_inode i ON i.ino = f.ino
      WHERE ${PLAIN} AND f.chunk_index * ${CHUNK} + length(f.data) > i.size`,
    message: (r) =>
      `inode ${r.ino}, chunk ${r.detail}: holds bytes past the end of the file (reads ignore them)`,
    // Reads already stop at the size: dropping what lies past it changes nothing readable.
    repair: `DELETE FROM fs_data AS f WHERE f.chunk_index * ${CHUNK} >= (SELECT i.size FROM fs_inode i WHERE i.ino = f.ino);
UPDATE fs_data AS f SET data = substr(f.data, 1, (SELECT i.size FROM fs_inode i WHERE i.ino = f.ino) - f.chunk_index * ${CHUNK})
      WHERE ${PLAIN} AND f.chunk_index * ${CHUNK} + length(f.data) > (SELECT i.size FROM fs_inode i WHERE i.ino = f.ino)`,
  },
  {
    rule: 'chunk-size',
    repairable: true,
    find: `SELECT f.ino AS ino, f.chunk_index AS detail FROM fs_data f JOIN fs_inode i ON i.ino = f.ino
      WHERE ${PLAIN} AND (length(f.data) > ${CHUNK}
         OR (length(f.data) < ${CHUNK} AND (f.chunk_index + 1) * ${CHUNK} < i.size))`,
    message: (r) =>
      `inode ${r.ino}, chunk ${r.detail}: not exactly chunk_size bytes, yet not the last chunk`,
    // A short chunk reads as if zero-padded: padding it stores what readers already see.
    repair: `UPDATE fs_data AS f SET data = f.data || zeroblob(${CHUNK} - length(f.data))
      WHERE ${PLAIN} AND length(f.data) < ${CHUNK} AND (f.chunk_index + 1) * ${CHUNK} < (SELECT i.size FROM fs_inode i WHERE i.ino = f.ino)`,
  },
  {
    rule: 'dentry-name',
    repairable: false,
    find: `SELECT ino, quote(name) AS detail FROM fs_dentry WHERE ${BAD_NAME}`,
    message: (r) =>
      `entry ${r.detail} (inode ${r.ino}) has a name that cannot be a path component (empty, ".", "..", "/" or NUL)`,
  },
  {
    rule: 'dir-hardlink',
    repairable: false,
    find: `SELECT i.ino AS ino, COUNT(d.id) AS detail FROM fs_inode i JOIN fs_dentry d ON d.ino = i.ino
      WHERE (i.mode & ${S_IFMT}) = ${S_IFDIR} GROUP BY i.ino HAVING COUNT(d.id) > 1 OR i.ino = ${ROOT_INO}`,
    message: (r) =>
      `directory inode ${r.ino} has ${r.detail} entries (a directory has exactly one; the root none): a directory hard link or a cycle`,
  },
  {
    rule: 'unreachable',
    repairable: false,
    find: unreachable,
    message: (r) =>
      `inode ${r.ino} has entries but cannot be reached from the root (its directories form a cycle or hang off a missing parent)`,
  },
  {
    rule: 'orphan-chunk',
    repairable: true,
    find: 'SELECT DISTINCT f.ino AS ino, NULL AS detail FROM fs_data f LEFT JOIN fs_inode i ON i.ino = f.ino WHERE i.ino IS NULL',
    message: (r) => `chunks of missing inode ${r.ino}`,
    repair: 'DELETE FROM fs_data WHERE ino NOT IN (SELECT ino FROM fs_inode)',
  },
  {
    rule: 'chunks-of-non-file',
    repairable: false,
    find: `SELECT DISTINCT f.ino AS ino, i.mode AS detail FROM fs_data f JOIN fs_inode i ON i.ino = f.ino WHERE (i.mode & ${S_IFMT}) != ${S_IFREG}`,
    message: (r) =>
      `inode ${r.ino} is not a regular file (mode ${Number(r.detail).toString(8)}) but has data chunks`,
  },
  {
    rule: 'symlink-target',
    repairable: false,
    find: `SELECT i.ino AS ino, NULL AS detail FROM fs_inode i LEFT JOIN fs_symlink s ON s.ino = i.ino WHERE (i.mode & ${S_IFMT}) = ${S_IFLNK} AND s.ino IS NULL`,
    message: (r) => `symlink inode ${r.ino} has no target`,
  },
  {
    rule: 'orphan-symlink',
    repairable: true,
    find: `SELECT s.ino AS ino, s.target AS detail FROM fs_symlink s LEFT JOIN fs_inode i ON i.ino = s.ino WHERE i.ino IS NULL OR (i.mode & ${S_IFMT}) != ${S_IFLNK}`,
    message: (r) =>
      `a symlink target '${r.detail}' belongs to inode ${r.ino}, which is missing or not a symlink`,
    repair: `DELETE FROM fs_symlink WHERE ino NOT IN (SELECT ino FROM fs_inode WHERE (mode & ${S_IFMT}) = ${S_IFLNK})`,
  },
  {
    rule: 'whiteout-parent',
    repairable: true,
    find: `SELECT NULL AS ino, path AS detail FROM fs_whiteout WHERE parent_path != ${DERIVED_PARENT}`,
    message: (r) => `whiteout '${r.detail}' has a wrong parent_path`,
    repair: `UPDATE fs_whiteout SET parent_path = ${DERIVED_PARENT} WHERE parent_path != ${DERIVED_PARENT}`,
  },
  {
    rule: 'origin',
    repairable: true,
    find: 'SELECT o.delta_ino AS ino, o.base_ino AS detail FROM fs_origin o LEFT JOIN fs_inode i ON i.ino = o.delta_ino WHERE i.ino IS NULL',
    message: (r) => `origin mapping for missing delta inode ${r.ino}`,
    repair: 'DELETE FROM fs_origin WHERE delta_ino NOT IN (SELECT ino FROM fs_inode)',
  },
  {
    rule: 'mime',
    repairable: true,
    find: `SELECT m.ino AS ino, m.mime_type AS detail FROM agentfs_mime m LEFT JOIN fs_inode i ON i.ino = m.ino WHERE i.ino IS NULL OR (i.mode & ${S_IFMT}) != ${S_IFREG}`,
    message: (r) =>
      `a stored MIME type '${r.detail}' belongs to inode ${r.ino}, which is missing or not a regular file`,
    repair: `DELETE FROM agentfs_mime WHERE ino NOT IN (SELECT ino FROM fs_inode WHERE (mode & ${S_IFMT}) = ${S_IFREG})`,
  },
  {
    rule: 'kv-json',
    repairable: false,
    find: 'SELECT NULL AS ino, key AS detail FROM kv_store WHERE NOT json_valid(value)',
    message: (r) => `kv value of '${r.detail}' is not valid JSON`,
  },
  {
    rule: 'tool-call-json',
    repairable: false,
    find: 'SELECT id AS ino, name AS detail FROM tool_calls WHERE (parameters IS NOT NULL AND NOT json_valid(parameters)) OR (result IS NOT NULL AND NOT json_valid(result))',
    message: (r) =>
      `tool call ${r.ino} (${r.detail}) has parameters or a result that is not valid JSON`,
  },
  {
    rule: 'tool-call-outcome',
    repairable: false,
    find: 'SELECT id AS ino, name AS detail FROM tool_calls WHERE result IS NOT NULL AND error IS NOT NULL',
    message: (r) => `tool call ${r.ino} (${r.detail}) has both a result and an error`,
  },
  {
    rule: 'tool-call-duration',
    repairable: false,
    find: 'SELECT id AS ino, name AS detail FROM tool_calls WHERE completed_at IS NOT NULL AND duration_ms IS NOT NULL AND duration_ms != (completed_at - started_at) * 1000',
    message: (r) =>
      `tool call ${r.ino} (${r.detail}): duration_ms is not (completed_at - started_at) * 1000`,
  },
  {
    rule: 'tool-call-meta',
    repairable: true,
    find: 'SELECT m.id AS ino, NULL AS detail FROM agentfs_tool_call_meta m LEFT JOIN tool_calls t ON t.id = m.id WHERE t.id IS NULL',
    message: (r) => `metadata for missing tool call ${r.ino}`,
    repair: 'DELETE FROM agentfs_tool_call_meta WHERE id NOT IN (SELECT id FROM tool_calls)',
  },
  ...CHUNK_FRAME_CHECKS,
  ...HISTORY_CHECKS,
  ...PAYLOAD_CHECKS,
  ...SEARCH_CHECKS,
  ...VECTOR_CHECKS,
]

/** The rule of findings SQLite reports itself: the file is damaged below the tables. */
export const SQLITE_INTEGRITY_RULE = 'sqlite-integrity'

/** At most this many lines of `PRAGMA integrity_check` become findings. */
const INTEGRITY_LINES = 20

const damaged = (message: string): FsckFinding => ({
  rule: SQLITE_INTEGRITY_RULE,
  message,
  repairable: false,
})

const isCorrupt = (error: unknown) => (error as { code?: unknown } | null)?.code === 'CORRUPT'

/** What SQLite itself said, without the wrapping of the mapped error. */
const sqliteSays = (error: unknown) =>
  ((error as { cause?: Error }).cause ?? (error as Error)).message

const RESTORE = 'restore the file from a backup (export copies out what can still be read)'

const NEVER_USED = /^Page \d+: never used$/

/**
 * The problems `integrity_check` reported (its rows may hold several lines each): `ok` and the
 * per-database headers dropped, and with `hidden` (see {@link hiddenFtsPages}) the pages it
 * reports as never used.
 */
export function integrityLines(rows: readonly string[], hidden: boolean): string[] {
  return rows
    .flatMap((row) => row.split('\n'))
    .map((line) => line.trim())
    .filter(
      (line) =>
        line !== '' &&
        line !== 'ok' &&
        !/^\*\*\* in database \w+ \*\*\*$/.test(line) &&
        !(hidden && NEVER_USED.test(line)),
    )
}

/**
 * True when the file holds the full-text index's FTS5 tables and the engine has no FTS5 (the
 * Turso engine 0.7): it cannot read those tables (FTS5 makes them WITHOUT ROWID), so its
 * `integrity_check` reports their pages as never used. Those lines are not damage.
 */
export async function hiddenFtsPages(q: Executor): Promise<boolean> {
  if (fullTextSearch(q) !== false) return false
  const { rows } = await q.execute<{ n: number }>({
    sql: "SELECT count(*) AS n FROM sqlite_schema WHERE name GLOB 'agentfs_search_fts*'",
  })
  return Number(rows[0]?.n ?? 0) > 0
}

/** SQLite's own check of pages and indexes; engines without the pragma skip it. */
async function integrity(q: Queryable): Promise<FsckFinding[]> {
  try {
    const { rows } = await q.execute<Record<string, unknown>>({
      sql: `PRAGMA integrity_check(${INTEGRITY_LINES})`,
    })
    const lines = integrityLines(
      rows.map((row) => String(Object.values(row)[0])),
      await hiddenFtsPages(q),
    )
    return lines.map((line) => damaged(`SQLite finds the file damaged: ${line}; ${RESTORE}`))
  } catch (error) {
    if (isCorrupt(error))
      return [damaged(`SQLite cannot check the file (${sqliteSays(error)}); ${RESTORE}`)]
    return []
  }
}

/**
 * Checks SQLite's own integrity (pages, indexes: rule `sqlite-integrity`, never repaired), then
 * every consistency rule of the spec (root, entries, mode bits, nlink, orphans, sizes,
 * chunks, symlinks, whiteout parents, tool-call and kv JSON), our extension tables, and the
 * damage a crafted database can hold: names that cannot be path components, directory hard
 * links and cycles, entries unreachable from the root, chunks that are not BLOBs or lie past
 * the end of their file. Every check is one set-based query (cycles cannot make it loop). A
 * file may be sparse: absent chunks are holes that read as zeros. With `repair`, applies the
 * safe fixes (recount links, drop rows that point at nothing or lie past the end, pad short
 * chunks, store text chunks as BLOBs, re-derive whiteout parents) in one transaction, then
 * checks again.
 */
export async function fsck(q: Queryable, options: { repair?: boolean } = {}): Promise<FsckReport> {
  const run = async (target: Queryable) => {
    const findings: FsckFinding[] = await integrity(target)
    for (const check of CHECKS) {
      let rows: FindRow[]
      try {
        rows =
          typeof check.find === 'string'
            ? (await target.execute<FindRow>({ sql: check.find })).rows
            : await check.find(target)
      } catch (error) {
        // A damaged page fails the queries that read it: that is a finding, and the other
        // checks still run.
        if (!isCorrupt(error)) throw error
        findings.push(
          damaged(`the ${check.rule} check cannot read its rows (${sqliteSays(error)})`),
        )
        continue
      }
      for (const row of rows) {
        findings.push({
          rule: check.rule,
          message: check.message(row),
          repairable: check.repairable,
          ...(row.ino === null ? {} : { ino: Number(row.ino) }),
        })
      }
    }
    return findings
  }
  const findings = await run(q)
  // Repairs write: never on a file SQLite itself finds damaged.
  if (
    !options.repair ||
    !findings.some((f) => f.repairable) ||
    findings.some((f) => f.rule === SQLITE_INTEGRITY_RULE)
  )
    return { findings, repaired: [], ok: findings.length === 0 }
  await q.transaction(async (tx) => {
    const rules = new Set(findings.filter((f) => f.repairable).map((f) => f.rule))
    // Order matters: drop dangling rows first, then recount.
    for (const check of CHECKS.filter((c) => (c.repair || c.fix) && c.rule !== 'nlink')) {
      if (!rules.has(check.rule)) continue
      for (const sql of check.repair?.split(';\n') ?? []) await tx.execute({ sql })
      await check.fix?.(tx)
    }
    const nlink = CHECKS.find((c) => c.rule === 'nlink')!
    await tx.execute({ sql: nlink.repair! })
  })
  const remaining = await run(q)
  const left = new Set(remaining.map((f) => `${f.rule}:${f.ino}:${f.message}`))
  return {
    findings: remaining,
    repaired: findings.filter((f) => !left.has(`${f.rule}:${f.ino}:${f.message}`)),
    ok: remaining.length === 0,
  }
}
