import { createHash } from 'node:crypto'
import {
  type ChunkFormat,
  COMPRESSION_GUARD,
  decodeChunk,
  type Executor,
  hiddenFtsPages,
  integrityLines,
} from '@agentfs/core'

/** Options of {@link canonicalDump}. */
export interface DumpOptions {
  /** Quoted values longer than this are replaced by their length and SHA-256 (default 200). */
  readonly maxValueLength?: number
  /**
   * How the database stores file content. With a compression, the dump is of the content:
   * `fs_data` chunks decoded, the compression marker (its `fs_config` row and trigger) left
   * out, so a compressed database dumps as the plain one holding the same files.
   */
  readonly chunks?: ChunkFormat
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`

/**
 * Engine-internal objects a dump leaves out: the Turso engine keeps an AUTOINCREMENT sequence
 * table per table beside `sqlite_sequence` (which it keeps too). The full-text index's FTS5
 * table and its shadow tables exist only on engines with FTS5 (others keep the same words in
 * `agentfs_search_posting`): a cache of file content, left out too.
 */
const INTERNAL = "name NOT GLOB '__turso_internal_*' AND name NOT GLOB 'agentfs_search_fts*'"

/**
 * DDL in a form that does not depend on how the engine stores its text: `IF NOT EXISTS` goes
 * (SQLite drops it, the Turso engine keeps it), whitespace runs become one space and go away
 * next to `(`, `)` and `,`, and quotes around plain identifiers go. SQLite
 * keeps the statement as written, the Turso engine rewrites it on one line; both come out the
 * same, and any difference in names, types or constraints still shows.
 */
export function normalizeDdl(sql: string): string {
  return sql
    .replace(
      /^\s*CREATE\s+(UNIQUE\s+)?(TABLE|INDEX|VIEW|TRIGGER)\s+IF\s+NOT\s+EXISTS\s+/i,
      'CREATE $1$2 ',
    )
    .replace(/\s+/g, ' ')
    .replace(/\s*([(),])\s*/g, '$1')
    .replace(/"([A-Za-z_][A-Za-z0-9_]*)"/g, '$1')
    .trim()
}

function shorten(text: string, max: number): string {
  if (text.length <= max) return text
  const digest = createHash('sha256').update(text).digest('hex').slice(0, 32)
  return `<${text.length} chars sha256:${digest}>`
}

/**
 * The canonical dump of a database, computed by the engine through the driver under test:
 * schema (`sqlite_schema` ordered by type and name, DDL normalised by {@link normalizeDdl},
 * `user_version`; engine-internal tables left out), every table including
 * `sqlite_sequence` as `typeof:quote` cells in a total order, then `integrity_check` and
 * `foreign_key_check`. Two databases with equal dumps hold equal state, whichever client wrote
 * them, because `typeof` and `quote` are evaluated by SQLite, not by JavaScript.
 */
export async function canonicalDump(db: Executor, options: DumpOptions = {}): Promise<string> {
  const max = options.maxValueLength ?? 200
  const out: string[] = ['# schema']
  const schema = await db.execute<{
    type: string
    name: string
    tbl_name: string
    sql: string | null
  }>({
    sql: `SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE name NOT GLOB 'sqlite_*' AND ${INTERNAL} ORDER BY type, name`,
  })
  const codec = options.chunks?.codec ? options.chunks : undefined
  for (const row of schema.rows) {
    if (codec && row.type === 'trigger' && row.name === COMPRESSION_GUARD) continue
    out.push(`${row.type} ${row.name} on ${row.tbl_name}`)
    out.push(`  ${row.sql === null ? '(auto)' : normalizeDdl(row.sql)}`)
  }
  const version = await db.execute<{ user_version: number }>({ sql: 'PRAGMA user_version' })
  out.push(`# user_version ${Number(version.rows[0]?.user_version ?? 0)}`)

  const tables = await db.execute<{ name: string }>({
    sql: `SELECT name FROM sqlite_schema WHERE type = 'table' AND (name NOT GLOB 'sqlite_*' OR name = 'sqlite_sequence') AND ${INTERNAL} ORDER BY name`,
  })
  for (const { name } of tables.rows) {
    const info = await db.execute<{ name: string; type: string }>({
      sql: 'SELECT name, type FROM pragma_table_info(?) ORDER BY cid',
      params: [name],
    })
    const columns = info.rows.map((c) => c.name)
    out.push(`# table ${name} (${info.rows.map((c) => `${c.name} ${c.type}`.trim()).join(', ')})`)
    if (columns.length === 0) continue
    const cells = columns.map((c) => `typeof(${ident(c)}) || ':' || quote(${ident(c)})`)
    const order = columns.map((c) => `quote(${ident(c)})`).join(', ')
    if (codec && name === 'fs_data') {
      const rows = await db.execute<{ line: string; ino: number; data: unknown }>({
        sql: `SELECT ${cells.slice(0, 2).join(' || char(31) || ')} AS line, ino, data FROM fs_data ORDER BY ${order}`,
      })
      for (const row of rows.rows) {
        const data = decodeChunk(codec, row.data, Number(row.ino), 'dump')
        const quoted = `blob:X'${Buffer.from(data).toString('hex').toUpperCase()}'`
        out.push(
          [...String(row.line).split('\x1f'), quoted].map((cell) => shorten(cell, max)).join(' | '),
        )
      }
      out.push(`# ${rows.rows.length} rows`)
      continue
    }
    const where = codec && name === 'fs_config' ? " WHERE key != 'compression'" : ''
    const rows = await db.execute<{ line: string }>({
      // char(31) (unit separator) splits cells, so text containing ' | ' cannot confuse it.
      sql: `SELECT ${cells.join(' || char(31) || ')} AS line FROM ${ident(name)}${where} ORDER BY ${order}`,
    })
    for (const row of rows.rows) {
      out.push(
        String(row.line)
          .split('\x1f')
          .map((cell) => shorten(cell, max))
          .join(' | '),
      )
    }
    out.push(`# ${rows.rows.length} rows`)
  }

  const integrity = await db.execute<{ integrity_check: string }>({ sql: 'PRAGMA integrity_check' })
  // An engine without FTS5 cannot read the full-text index's tables: the pages it reports as
  // never used are theirs (see hiddenFtsPages), not damage.
  const problems = integrityLines(
    integrity.rows.map((r) => String(r.integrity_check)),
    await hiddenFtsPages(db),
  )
  out.push(`# integrity_check ${problems.length === 0 ? 'ok' : problems.join('; ')}`)
  const fk = await db.execute<Record<string, unknown>>({ sql: 'PRAGMA foreign_key_check' })
  out.push(
    `# foreign_key_check ${fk.rows.length === 0 ? 'ok' : JSON.stringify(fk.rows, stableReplacer)}`,
  )
  return `${out.join('\n')}\n`
}

/** `JSON.stringify` replacer that writes bigints as strings and byte arrays as hex. */
export function stableReplacer(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return `${value}n`
  if (value instanceof Uint8Array)
    return `0x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}`
  if (value && typeof value === 'object' && (value as { type?: unknown }).type === 'Buffer') {
    return `0x${Buffer.from((value as { data: number[] }).data).toString('hex')}`
  }
  return value
}
