import { createRequire } from 'node:module'
import { AgentFsError, type Driver, mapSqliteError } from '@agentfs/core'
import {
  connectionOver,
  createSyncDriver,
  type LocalDriverConfig,
  localSource,
  type SyncConnection,
  type SyncStatement,
} from '@agentfs/core/driver-kit'
import { HexVariants, hexParams } from './blob-binding.js'
import { engineError, PRAGMA_FUNCTION, RETURNING, rethrow } from './engine.js'

/** The parts of a Turso `Statement` (`@tursodatabase/database/compat`) this driver uses. */
export interface TursoStatement {
  readonly reader: boolean
  all(params: readonly unknown[]): unknown[]
  run(params: readonly unknown[]): { changes: number; lastInsertRowid: number }
  safeIntegers(toggle?: boolean): unknown
  close(): void
}

/** The parts of a Turso `Database` (`@tursodatabase/database/compat`) this driver uses. */
export interface TursoDatabase {
  readonly open: boolean
  readonly inTransaction: boolean
  prepare(sql: string): TursoStatement
  exec(sql: string): void
  close(): void
}

/**
 * Options of {@link tursoDriver}: a `path`, or a `database` from `@tursodatabase/database/compat`
 * (the synchronous API). Give exactly one.
 */
export type TursoDriverConfig = LocalDriverConfig<TursoDatabase>

type TursoConstructor = new (path: string, options?: { timeout?: number }) => TursoDatabase

function openFile(path: string): TursoDatabase {
  let Database: TursoConstructor
  try {
    const compat = createRequire(import.meta.url)('@tursodatabase/database/compat') as {
      Database: TursoConstructor
    }
    Database = compat.Database
  } catch (error) {
    throw new AgentFsError(
      'CANT_OPEN',
      'the Turso engine is not installed: npm install @tursodatabase/database (a dependency of @agentfs/driver-turso)',
      { cause: error },
    )
  }
  return new Database(path)
}

function statementOf(db: TursoDatabase, sql: string): SyncStatement {
  if (PRAGMA_FUNCTION.test(sql)) {
    const probe = rethrow(() => db.prepare(sql))
    const reader = probe.reader
    probe.close()
    const once = <T>(fn: (statement: TursoStatement) => T): T =>
      rethrow(() => {
        // Outside a transaction it runs inside one of its own: run bare, it leaves the
        // connection in a state where the next autocommitted writes are undone by a later
        // ROLLBACK.
        const own = !db.inTransaction
        if (own) db.exec('BEGIN')
        const statement = db.prepare(sql)
        try {
          statement.safeIntegers(true)
          return fn(statement)
        } finally {
          statement.close()
          if (own && db.inTransaction) db.exec('COMMIT')
        }
      })
    return {
      reader,
      readonly: !RETURNING.test(sql),
      all: (params) => once((s) => s.all(params)),
      run: (params) => once((s) => s.run(params)),
    }
  }
  const statement = rethrow(() => db.prepare(sql))
  const reader = statement.reader
  if (reader) statement.safeIntegers(true)
  const hex = new HexVariants<TursoStatement>(sql)
  /** The statement and parameters to run: long BLOBs go as hex text where the SQL allows. */
  const pick = (params: readonly unknown[]): [TursoStatement, readonly unknown[]] => {
    const plan = hex.plan(params)
    if (plan === undefined) return [statement, params]
    let variant = hex.get(plan.key)
    if (variant === undefined) {
      variant = db.prepare(hex.sqlFor(plan.blobs))
      if (reader) variant.safeIntegers(true)
      hex.keep(plan.key, variant)
    }
    return [variant, hexParams(params, plan.blobs)]
  }
  return {
    reader,
    readonly: reader && !RETURNING.test(sql),
    all: (params) =>
      rethrow(() => {
        const [chosen, values] = pick(params)
        return chosen.all(values)
      }),
    run: (params) =>
      rethrow(() => {
        const [chosen, values] = pick(params)
        return chosen.run(values)
      }),
  }
}

function connection(db: TursoDatabase, file: string | undefined): SyncConnection {
  return connectionOver(db, {
    file,
    readonly: false,
    prepare: (sql) => statementOf(db, sql),
    guard: rethrow,
  })
}

/**
 * A {@link Driver} on the Turso engine (`@tursodatabase/database`, its synchronous
 * better-sqlite3-compatible API), built with the core driver kit: WAL, an asynchronous busy
 * wait, a per-file lock between the connections of a process, a statement cache. The engine has
 * no `WITH RECURSIVE`; the driver says so (`capabilities.recursiveQueries: false`) and the
 * filesystem walks trees with plain statements instead.
 *
 * @example
 * const driver = tursoDriver({ path: 'agent.db' })
 * const db = await openDatabase({ driver })
 */
export function tursoDriver(config: TursoDriverConfig): Driver {
  const given = localSource('tursoDriver', config, openFile)
  const memory = given.memory
  return createSyncDriver({
    ...config,
    name: 'turso',
    target: config.path ?? 'database',
    memory,
    reopenable: given.reopenable,
    // The binding frees the buffers of rows it returned in finalizers that run when the event
    // loop turns; reading 64 KiB chunks in a loop of awaited calls otherwise grows by hundreds
    // of MiB before they run.
    turnEventLoopEvery: 100,
    recursiveQueries: false,
    // No FTS5 in the 0.7 engine: the full-text index keeps its words in a table.
    fullTextSearch: false,
    // The engine has no pragma_data_version table: nothing is cached across statements.
    snapshotTokens: false,
    open: async () => {
      let db: TursoDatabase
      try {
        db = await given.open()
      } catch (error) {
        throw mapSqliteError(engineError(error))
      }
      return connection(db, memory ? undefined : config.path)
    },
  })
}
