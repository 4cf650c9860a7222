import { AgentFsError, type Driver } from '@agentfs/core'
import {
  createSyncDriver,
  type LocalDriverConfig,
  localSource,
  type SyncConnection,
  type SyncStatement,
  statementOver,
} from '@agentfs/core/driver-kit'

/** The parts of a `node:sqlite` `StatementSync` this driver uses (structural). */
export interface NodeSqliteStatement {
  all(...params: unknown[]): unknown[]
  get(...params: unknown[]): unknown
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint }
  columns(): readonly unknown[]
  setReadBigInts(enabled: boolean): void
  /** Node 22.16+/24: rows as arrays. */
  setReturnArrays?(enabled: boolean): void
}

/** The parts of a `node:sqlite` `DatabaseSync` this driver uses (structural). */
export interface NodeSqliteDatabase {
  readonly isOpen: boolean
  /** The file of the main database, or null in memory (Node 24; absent in 22). */
  location?(): string | null
  readonly isTransaction: boolean
  prepare(sql: string): NodeSqliteStatement
  exec(sql: string): void
  close(): void
}

/**
 * Options of {@link nodeSqliteDriver}: a `path`, or a `database` (a `DatabaseSync` opened with
 * `timeout: 0`, the default: lock waits happen in the driver). Give exactly one.
 */
export interface NodeSqliteDriverConfig extends LocalDriverConfig<NodeSqliteDatabase> {
  /** Open the file read-only (only with `path`; the file must exist). */
  readonly readonly?: boolean
}

/**
 * Why `node:sqlite` cannot serve this process, or undefined. The driver needs Node.js 22.16 or
 * newer: `isTransaction` and `StatementSync#columns()` arrived there.
 */
export function nodeSqliteProblem(version = process.versions.node): string | undefined {
  const [major, minor] = version.split('.').map(Number) as [number, number]
  if (major > 22 || (major === 22 && minor >= 16)) return undefined
  return `node:sqlite needs Node.js 22.16 or newer for this driver, and this is Node.js ${version}: use a newer Node.js, or @agentfs/driver-better-sqlite3`
}

interface NodeSqliteModule {
  DatabaseSync: new (
    path: string,
    options: { readOnly: boolean; timeout: number },
  ) => NodeSqliteDatabase
}

async function openFile(path: string, readonly: boolean): Promise<NodeSqliteDatabase> {
  const problem = nodeSqliteProblem()
  if (problem !== undefined) throw new AgentFsError('CANT_OPEN', problem)
  return new (loadSqlite().DatabaseSync)(path, { readOnly: readonly, timeout: 0 })
}

/**
 * `node:sqlite`, loaded without Node 22's `ExperimentalWarning` ("SQLite is an experimental
 * feature"): choosing this driver is the opt-in, and the warning is nothing its user can act
 * on. Every other warning passes through.
 */
function loadSqlite(): NodeSqliteModule {
  const emit = process.emitWarning
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning?.message
    if (typeof text === 'string' && text.startsWith('SQLite is an experimental feature')) return
    return (emit as (...a: unknown[]) => void).call(process, warning, ...rest)
  } as typeof process.emitWarning
  try {
    // Not `import('node:sqlite')`: bundlers strip the `node:` prefix, and `sqlite` alone is no
    // built-in module.
    return (process as unknown as { getBuiltinModule(name: string): unknown }).getBuiltinModule(
      'node:sqlite',
    ) as NodeSqliteModule
  } finally {
    process.emitWarning = emit
  }
}

/**
 * A statement that returns rows is a reader; of those, only `… RETURNING` changes anything
 * (`node:sqlite`, unlike better-sqlite3, does not say whether a statement is read-only).
 */
const RETURNING = /\bRETURNING\b/i

/** A prepared statement as the kit's {@link SyncStatement}. */
function syncStatement(statement: NodeSqliteStatement, sql: string): SyncStatement {
  const reader = statement.columns().length > 0
  return statementOver(
    {
      all: (params) => statement.all(...params),
      get: (params) => statement.get(...params),
      run: (params) => statement.run(...params),
      readBigInts: (on) => statement.setReadBigInts(on),
      // node:sqlite refuses an integer beyond 2^53 as a number rather than round it.
      refusesNumber: (error) => (error as { code?: unknown }).code === 'ERR_OUT_OF_RANGE',
    },
    reader,
    reader && !RETURNING.test(sql),
  )
}

function connection(db: NodeSqliteDatabase, file: string | undefined, readonly: boolean) {
  const conn: SyncConnection = {
    file,
    readonly,
    get isOpen() {
      return db.isOpen
    },
    get inTransaction() {
      return db.isTransaction
    },
    prepare: (sql) => syncStatement(db.prepare(sql), sql),
    // Array rows where this Node.js has them (setReturnArrays); the kit converts otherwise.
    ...(typeof db.prepare('SELECT 1').setReturnArrays === 'function'
      ? {
          prepareArrays(sql: string) {
            const statement = db.prepare(sql)
            statement.setReturnArrays!(true)
            return syncStatement(statement, sql)
          },
        }
      : {}),
    exec(sql: string) {
      db.exec(sql)
    },
    close() {
      db.close()
    },
  }
  return conn
}

/**
 * A {@link Driver} over Node's built-in `node:sqlite` (Node.js 22.16+): nothing native to
 * install or build. Built with the core driver kit, so it behaves as the better-sqlite3 driver
 * does: WAL, an asynchronous busy wait, a per-file lock between the connections of a process,
 * a statement cache.
 *
 * @example
 * const driver = nodeSqliteDriver({ path: 'agent.db' })
 * const db = await openDatabase({ driver })
 */
export function nodeSqliteDriver(config: NodeSqliteDriverConfig): Driver {
  const readonly = config.readonly ?? false
  const given = localSource('nodeSqliteDriver', config, (path) => openFile(path, readonly))
  const memory = given.memory
  return createSyncDriver({
    ...config,
    name: 'node:sqlite',
    target: config.path ?? 'database',
    memory,
    reopenable: given.reopenable,
    open: async () => {
      const db = await given.open()
      // A database handed in says its file where Node can (`location()`); else it is treated
      // as unshared: no per-file lock, no WAL set up by the driver.
      const file = memory ? undefined : (config.path ?? db.location?.() ?? undefined)
      return connection(db, file || undefined, readonly)
    },
  })
}
