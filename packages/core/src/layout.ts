import type { Queryable } from './guard-driver.js'
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
  /** Our own schema version (`PRAGMA user_version`); 0 when never opened by this library. */
  readonly agentfsVersion: number
  /** Every table and index, by name. */
  readonly objects: ReadonlyMap<string, FoundObject>
  /** Column names per table, in declaration order. */
  readonly columns: ReadonlyMap<string, readonly string[]>
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
    agentfsVersion: Number(version.rows[0]?.user_version ?? 0),
    objects,
    columns,
  }
}

/** Names of the spec's indexes, for checks. */
export const SPEC_INDEX_NAMES: readonly string[] = SPEC_INDEXES.map((i) => i.name)
