import type { Executor } from '../driver/driver.js'
import type { Queryable } from '../driver/guard-driver.js'
import { AgentFsError } from '../errors.js'
import { META_SCHEMA_VERSION } from './extensions.js'
import { SPEC_INDEXES, SPEC_TABLES } from './schema.js'

/** A table or index found in `sqlite_schema`. */
export interface FoundObject {
  readonly type: string
  readonly name: string
  readonly table: string
  readonly sql: string | null
}

/** Spec versions whose on-disk layout we recognise. */
export type SpecLayout = 'empty' | 'v0.0' | 'v0.1' | 'v0.2' | 'v0.3' | 'v0.4'

/** What {@link inspectLayout} found in a database. */
export interface LayoutReport {
  /** The newest spec version whose layout the database satisfies. */
  readonly layout: SpecLayout
  /** `tool_calls` as the reference AgentFS SDK writes it (extra `status`, nullable completion). */
  readonly referenceToolCalls: boolean
  /**
   * Our own schema version: the larger of `PRAGMA user_version` and `agentfs_meta`'s (a synced
   * copy has only the latter); 0 when never opened by this library.
   */
  readonly agentfsVersion: number
  /** Every table and index, by name. */
  readonly objects: ReadonlyMap<string, FoundObject>
  /** Column names per table, in declaration order. */
  readonly columns: ReadonlyMap<string, readonly string[]>
}

/** The schema version `agentfs_meta` records (0 without the row); a value that is not one is refused. */
export async function metaVersion(q: Executor): Promise<number> {
  const { rows } = await q.execute<{ value: unknown }>({
    sql: 'SELECT value FROM agentfs_meta WHERE key = ?',
    params: [META_SCHEMA_VERSION],
  })
  if (rows.length === 0) return 0
  const value = rows[0]!.value
  if (typeof value !== 'string' || !/^\d{1,6}$/.test(value))
    throw new AgentFsError(
      'CORRUPT',
      `agentfs_meta.schema_version holds ${JSON.stringify(String(value)).slice(0, 40)}, not a schema version: the database was damaged or written by other software; run fsck or restore a backup`,
    )
  return Number(value)
}

/** Reads the schema of a database and classifies its layout. Read-only. */
export async function inspectLayout(q: Queryable): Promise<LayoutReport> {
  const { rows } = await q.execute<FoundObject>({
    sql: 'SELECT type, name, tbl_name AS "table", sql FROM sqlite_schema WHERE name NOT GLOB \'sqlite_*\' ORDER BY name',
  })
  const objects = new Map(rows.map((row) => [row.name, row]))
  const columns = new Map<string, string[]>()
  for (const row of rows) {
    if (row.type !== 'table') continue
    const info = await q.execute<{ name: string }>({
      sql: 'SELECT name FROM pragma_table_info(?) ORDER BY cid',
      params: [row.name],
    })
    columns.set(
      row.name,
      info.rows.map((c) => c.name),
    )
  }
  const version = await q.execute<{ user_version: number }>({ sql: 'PRAGMA user_version' })
  const stored = columns.has('agentfs_meta') ? await metaVersion(q) : 0
  const has = (tableName: string, column?: string) =>
    column === undefined
      ? columns.has(tableName)
      : (columns.get(tableName)?.includes(column) ?? false)

  let layout: SpecLayout
  const specTables = [...SPEC_TABLES.map((t) => t.name)]
  if (!specTables.some((name) => has(name))) layout = 'empty'
  else if (has('fs_data', 'offset') || (!has('fs_config') && has('fs_inode'))) layout = 'v0.0'
  else if (!has('fs_inode', 'nlink')) layout = 'v0.1'
  else if (!has('fs_origin')) layout = has('fs_inode', 'rdev') ? 'v0.4' : 'v0.2'
  else layout = has('fs_inode', 'rdev') ? 'v0.4' : 'v0.3'

  return {
    layout,
    referenceToolCalls: has('tool_calls', 'status'),
    agentfsVersion: Math.max(Number(version.rows[0]?.user_version ?? 0), stored),
    objects,
    columns,
  }
}

/** Names of the spec's indexes, for checks. */
export const SPEC_INDEX_NAMES: readonly string[] = SPEC_INDEXES.map((i) => i.name)
