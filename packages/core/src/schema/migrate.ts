import type { Clock } from '../clock.js'
import { COMPRESSION_GUARD, type Compression, canCompress } from '../content/chunk-codec.js'
import type { Statement } from '../driver/driver.js'
import type { Queryable, Transaction } from '../driver/guard-driver.js'
import { AgentFsError, isAgentFsError } from '../errors.js'
import { EXTENSION_MIGRATIONS, META_SCHEMA_VERSION } from './extensions.js'
import { inspectLayout, type LayoutReport } from './layout.js'
import { writeMeta } from './meta.js'
import {
  canonicalColumns,
  checkChunkSize,
  DERIVED,
  type MigrateOptions,
  type MigrationPlan,
  OLD_SUFFIX,
  planFromReport,
} from './migration-plan.js'
import {
  DEFAULT_CHUNK_SIZE,
  ROOT_INO,
  S_IFDIR,
  type SchemaObject,
  SPEC_INDEXES,
  SPEC_TABLES,
  SPEC_VERSION,
} from './schema.js'

/**
 * What makes a new database compressed: `fs_config.compression`, and a trigger that refuses
 * the one write the reference SDK makes when it opens a database (its `schema_version` row),
 * so that a reader which does not know compression stops with a message instead of returning
 * stored frames as file content. Written after our own `schema_version` row.
 */
function compressionStatements(compression: Compression): Statement[] {
  if (!canCompress())
    throw new AgentFsError(
      'MISUSE',
      'zstd is not loaded: create compressed databases with openDatabase, or await loadCompressor() first',
    )
  return [
    { sql: "INSERT INTO fs_config (key, value) VALUES ('compression', ?)", params: [compression] },
    {
      sql: `CREATE TRIGGER ${COMPRESSION_GUARD} BEFORE INSERT ON fs_config WHEN NEW.key = 'schema_version'
BEGIN SELECT RAISE(ABORT, 'this AgentFS database stores file content compressed (fs_config.compression = ${compression}); open it with @agentfs/sdk, which reads it'); END`,
    },
  ]
}

export type { MigrateOptions, MigrationPlan, MigrationStep } from './migration-plan.js'
export { checkChunkSize, planFromReport, planMigration } from './migration-plan.js'

/**
 * Brings any recognised layout (v0.0 … v0.4, the reference SDK's) to the current schema in one
 * transaction. Rows are never dropped; derived data (`nlink`, fixed chunks, whiteout parents) is
 * back-filled. On failure nothing changes and a `MIGRATION_FAILED` error is thrown.
 */
export async function migrate(q: Queryable, options: MigrateOptions): Promise<MigrationPlan> {
  const chunkSize = checkChunkSize(options.chunkSize ?? DEFAULT_CHUNK_SIZE)
  if (q.inTransaction) {
    throw new AgentFsError('MISUSE', 'migrate() must run outside a transaction')
  }
  // Fast path: nothing to do, no write lock taken (read-only databases open fine).
  const quick = await inspectLayout(q)
  const quickPlan = planFromReport(quick)
  if (quickPlan.steps.length === 0) return quickPlan

  // Correct whatever the connection's `foreign_keys` setting (see dropAside): a remote server
  // runs each request on a stream of its own, so a pragma sent before the transaction would not
  // reach it.
  try {
    return await q.transaction(async (tx) => {
      // Re-inspect under the write lock: another process may have migrated meanwhile.
      const report = await inspectLayout(tx)
      const plan = planFromReport(report)
      if (plan.steps.length > 0)
        await applyPlan(tx, report, plan, chunkSize, options.clock, options.compression)
      return plan
    })
  } catch (error) {
    if (
      isAgentFsError(error, 'BUSY') ||
      isAgentFsError(error, 'READONLY') ||
      isAgentFsError(error, 'CLOSED') ||
      isAgentFsError(error, 'INVALID_ARGUMENT')
    ) {
      throw error
    }
    throw new AgentFsError(
      'MIGRATION_FAILED',
      `Migrating the database from layout ${quick.layout} failed and was rolled back; the database is unchanged. ` +
        `Cause: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    )
  }
}

async function applyPlan(
  tx: Transaction,
  report: LayoutReport,
  plan: MigrationPlan,
  chunkSize: number,
  clock: Clock,
  compression: Compression | undefined,
): Promise<void> {
  await tx.execute({ sql: 'PRAGMA legacy_alter_table = ON' })
  const now = clock.now()
  const byName = new Map(SPEC_TABLES.map((t) => [t.name, t]))
  /** Tables moved aside, dropped at the end (see {@link dropAside}). */
  const aside: string[] = []
  // fs_inode rebuilds derive nlink from fs_dentry, so dentries are rebuilt after inodes.
  for (const step of plan.steps) {
    const spec = byName.get(step.target)
    switch (step.kind) {
      case 'create-table':
        await tx.execute({ sql: spec!.sql })
        break
      case 'rebuild-table':
        aside.push(await rebuildTable(tx, spec!, report.columns.get(spec!.name)!, now.sec))
        break
      case 'add-columns':
        await addColumns(tx, spec!, report.columns.get(spec!.name)!)
        break
      case 'recut-data':
        aside.push(await recutData(tx, spec!, chunkSize))
        break
      case 'create-index':
        await tx.execute({ sql: SPEC_INDEXES.find((i) => i.name === step.target)!.sql })
        break
      case 'recreate-index':
        await tx.execute({ sql: `DROP INDEX ${step.target}` })
        await tx.execute({ sql: SPEC_INDEXES.find((i) => i.name === step.target)!.sql })
        break
      case 'init-config':
        await tx.execute({
          sql: "INSERT INTO fs_config (key, value) VALUES ('chunk_size', ?) ON CONFLICT(key) DO NOTHING",
          params: [String(chunkSize)],
        })
        await tx.execute({
          sql: "INSERT INTO fs_config (key, value) VALUES ('schema_version', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
          params: [SPEC_VERSION],
        })
        if (compression !== undefined && report.layout === 'empty')
          for (const statement of compressionStatements(compression)) await tx.execute(statement)
        break
      case 'init-root':
        await tx.execute({
          sql: `INSERT INTO fs_inode (ino, mode, nlink, uid, gid, size, atime, mtime, ctime, atime_nsec, mtime_nsec, ctime_nsec)
VALUES (?, ?, 1, 0, 0, 0, ?, ?, ?, ?, ?, ?) ON CONFLICT(ino) DO NOTHING`,
          params: [
            ROOT_INO,
            S_IFDIR | 0o755,
            now.sec,
            now.sec,
            now.sec,
            now.nsec,
            now.nsec,
            now.nsec,
          ],
        })
        break
      case 'extension': {
        const ext = EXTENSION_MIGRATIONS.find((e) => `v${e.version}` === step.target)!
        for (const sql of ext.statements) await tx.execute({ sql })
        await ext.backfill?.(tx)
        break
      }
    }
  }
  await dropAside(tx, aside)
  await tx.execute({ sql: `PRAGMA user_version = ${plan.toVersion}` })
  await writeMeta(tx, META_SCHEMA_VERSION, String(plan.toVersion))
  await tx.execute({ sql: 'PRAGMA legacy_alter_table = OFF' })
}

/**
 * Drops the tables moved aside, once every row is copied out of them, children before parents.
 * This keeps migrations correct with foreign keys enforced (a remote server's connections start
 * with `foreign_keys = ON`, and the pragma cannot be switched inside a transaction): renaming a
 * parent then rewrites its children's REFERENCES to the old name, and dropping a table deletes
 * its rows first, cascading into every table that still references it. Dropped in this order,
 * a cascade only reaches tables that are themselves being dropped. A live table left
 * referencing a table moved aside would lose rows or break: the migration fails instead.
 */
async function dropAside(tx: Transaction, aside: readonly string[]): Promise<void> {
  const schema = async () =>
    (
      await tx.execute<{ name: string; sql: string | null }>({
        sql: "SELECT name, sql FROM sqlite_schema WHERE type = 'table'",
      })
    ).rows
  const references = (sql: string | null, table: string) =>
    sql !== null && new RegExp(`REFERENCES\\s+["\\[\`]?${table}\\b`, 'i').test(sql)
  const live = (await schema()).filter((t) => !aside.includes(t.name))
  for (const table of live)
    for (const old of aside)
      if (references(table.sql, old))
        throw new Error(`table ${table.name} references ${old}, which the migration replaces`)
  const remaining = [...aside]
  while (remaining.length > 0) {
    const tables = (await schema()).filter((t) => remaining.includes(t.name))
    // A table no other remaining table references goes first (any one, if they form a cycle).
    const next =
      remaining.find((name) => !tables.some((t) => t.name !== name && references(t.sql, name))) ??
      remaining[0]!
    await tx.execute({ sql: `DROP TABLE ${next}` })
    remaining.splice(remaining.indexOf(next), 1)
  }
}

/** Renames a table out of the way and drops its indexes (index names are global). */
async function moveAside(
  tx: Transaction,
  name: string,
): Promise<{ old: string; seq: number | undefined }> {
  const old = `${name}${OLD_SUFFIX}`
  const seq = await sequenceOf(tx, name)
  await tx.execute({ sql: `ALTER TABLE ${name} RENAME TO ${old}` })
  const indexes = await tx.execute<{ name: string }>({
    sql: "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
    params: [old],
  })
  for (const row of indexes.rows) await tx.execute({ sql: `DROP INDEX ${row.name}` })
  return { old, seq }
}

async function sequenceOf(tx: Transaction, name: string): Promise<number | undefined> {
  const exists = await tx.execute({
    sql: "SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_sequence'",
  })
  if (exists.rows.length === 0) return undefined
  const row = await tx.execute<{ seq: number }>({
    sql: 'SELECT seq FROM sqlite_sequence WHERE name = ?',
    params: [name],
  })
  return row.rows[0] === undefined ? undefined : Number(row.rows[0].seq)
}

/** Keeps AUTOINCREMENT counters from going backwards across a rebuild. */
async function restoreSequence(tx: Transaction, name: string, seq: number | undefined) {
  if (seq === undefined) return
  const current = await sequenceOf(tx, name)
  if (current === undefined) {
    await tx.execute({
      sql: 'INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)',
      params: [name, seq],
    })
  } else if (current < seq) {
    await tx.execute({
      sql: 'UPDATE sqlite_sequence SET seq = ? WHERE name = ?',
      params: [seq, name],
    })
  }
}

/** Rebuilds a table to the spec's DDL, rows copied; returns the old table's name (moved aside). */
async function rebuildTable(
  tx: Transaction,
  spec: SchemaObject,
  have: readonly string[],
  nowSec: number,
): Promise<string> {
  const { old, seq } = await moveAside(tx, spec.name)
  await tx.execute({ sql: spec.sql })
  const target: string[] = []
  const source: string[] = []
  for (const column of canonicalColumns(spec)) {
    if (have.includes(column)) {
      target.push(column)
      source.push(`old.${column}`)
      continue
    }
    const derived = DERIVED[spec.name]?.[column]
    if (derived) {
      target.push(column)
      source.push(derived)
    } else if (spec.name === 'fs_whiteout' && column === 'created_at') {
      target.push(column)
      source.push(String(nowSec))
    }
  }
  await tx.execute({
    sql: `INSERT INTO ${spec.name} (${target.join(', ')}) SELECT ${source.join(', ')} FROM ${old} AS old`,
  })
  await restoreSequence(tx, spec.name, seq)
  return old
}

async function addColumns(tx: Transaction, spec: SchemaObject, have: readonly string[]) {
  const lines = spec.sql.split('\n').map((l) => l.trim().replace(/,$/, ''))
  for (const column of canonicalColumns(spec)) {
    if (have.includes(column)) continue
    const definition = lines.find((l) => l.startsWith(`${column} `))!
    // ADD COLUMN cannot add NOT NULL without a default; such columns are added nullable.
    const safe =
      /NOT NULL/.test(definition) && !/DEFAULT/.test(definition)
        ? definition.replace(/\s*NOT NULL/, '')
        : definition
    await tx.execute({ sql: `ALTER TABLE ${spec.name} ADD COLUMN ${safe}` })
    const derived = DERIVED[spec.name]?.[column]
    if (derived) {
      await tx.execute({
        sql: `UPDATE ${spec.name} AS old SET ${column} = ${derived}`,
      })
    }
  }
}

/**
 * v0.0 stored variable chunks at byte offsets; v0.1+ stores fixed `chunk_size` chunks. Lays each
 * file's old chunks out at their offsets (gaps read as zeros, later rows win on overlap) and
 * re-cuts them. Works one file at a time.
 */
async function recutData(tx: Transaction, spec: SchemaObject, chunkSize: number): Promise<string> {
  const { old } = await moveAside(tx, 'fs_data')
  await tx.execute({ sql: spec.sql })
  const inodes = await tx.execute<{ ino: number }>({
    sql: `SELECT DISTINCT ino FROM ${old} ORDER BY ino`,
  })
  for (const { ino } of inodes.rows) {
    const parts = await tx.execute<{ offset: number; data: Uint8Array }>({
      sql: `SELECT offset, data FROM ${old} WHERE ino = ? ORDER BY offset, id`,
      params: [ino],
    })
    let length = 0
    for (const part of parts.rows)
      length = Math.max(length, Number(part.offset) + part.data.byteLength)
    const chunks = new Map<number, Uint8Array>()
    for (const part of parts.rows) {
      let position = Number(part.offset)
      let read = 0
      while (read < part.data.byteLength) {
        const index = Math.floor(position / chunkSize)
        const within = position % chunkSize
        let chunk = chunks.get(index)
        if (!chunk) {
          chunk = new Uint8Array(Math.min(chunkSize, length - index * chunkSize))
          chunks.set(index, chunk)
        }
        const take = Math.min(chunk.byteLength - within, part.data.byteLength - read)
        chunk.set(part.data.subarray(read, read + take), within)
        read += take
        position += take
      }
    }
    const count = Math.ceil(length / chunkSize)
    for (let index = 0; index < count; index++) {
      const chunk =
        chunks.get(index) ?? new Uint8Array(Math.min(chunkSize, length - index * chunkSize))
      await tx.execute({
        sql: 'INSERT INTO fs_data (ino, chunk_index, data) VALUES (?, ?, ?)',
        params: [ino, index, chunk],
      })
    }
    await tx.execute({ sql: 'UPDATE fs_inode SET size = ? WHERE ino = ?', params: [length, ino] })
  }
  return old
}
