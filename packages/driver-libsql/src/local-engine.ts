import { createRequire } from 'node:module'
import { AgentFsError, type Driver, mapSqliteError } from '@agentfs/core'
import {
  connectionOver,
  createSyncDriver,
  proveOpens,
  type SyncConnection,
  type SyncDriverOptions,
  type SyncStatement,
  statementOver,
} from '@agentfs/core/driver-kit'

/** The parts of the `libsql` engine's `Statement` this driver uses (structural). */
interface EngineStatement {
  readonly reader: boolean
  all(params: readonly unknown[]): unknown[]
  run(params: readonly unknown[]): { changes: number; lastInsertRowid: number | bigint }
  safeIntegers(toggle?: boolean): this
  raw(toggle?: boolean): this
  pluck(toggle?: boolean): this
}

/** The parts of the `libsql` engine's `Database` this driver uses. */
interface EngineDatabase {
  readonly open: boolean
  readonly inTransaction: boolean
  prepare(source: string): EngineStatement
  exec(source: string): void
  close(): void
}

type EngineConstructor = new (
  path: string,
  options?: { timeout?: number; encryptionKey?: string },
) => EngineDatabase

/**
 * A reader is a statement that returns rows; of those, only `… RETURNING` changes anything (the
 * engine, unlike better-sqlite3, does not say whether a statement is read-only).
 */
const RETURNING = /\bRETURNING\b/i

/** libSQL binds Buffers as BLOBs; a plain Uint8Array gets a zero-copy Buffer view. */
const toBuffer = (value: Uint8Array): Buffer =>
  Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength)

function openEngine(path: string, encryptionKey: string | undefined): EngineDatabase {
  let Database: EngineConstructor
  try {
    Database = createRequire(import.meta.url)('libsql') as EngineConstructor
  } catch (error) {
    throw new AgentFsError(
      'CANT_OPEN',
      'the libsql engine is not installed: npm install libsql (a dependency of @agentfs/driver-libsql and of @libsql/client)',
      { cause: error },
    )
  }
  let db: EngineDatabase
  try {
    db = new Database(path, { timeout: 0, ...(encryptionKey ? { encryptionKey } : {}) })
  } catch (error) {
    throw mapSqliteError(error)
  }
  // A key is proved at once (a wrong one is WRONG_KEY here, not a "corrupt" file later); a file
  // without SQLite's header opened without one is said to be encrypted or damaged.
  try {
    proveOpens(path, encryptionKey !== undefined, () =>
      db.prepare('SELECT count(*) FROM sqlite_schema').all([]),
    )
  } catch (error) {
    db.close()
    throw mapSqliteError(error)
  }
  // Sorts and temporary tables that spill go to memory, never to a plaintext temp file.
  if (encryptionKey !== undefined) db.exec('PRAGMA temp_store = MEMORY')
  return db
}

/**
 * A prepared statement as the kit's {@link SyncStatement}. Parameters always go as one array:
 * the engine takes a single object argument as named parameters, so a lone null or Buffer
 * parameter passed spread would be misread (or crash it).
 */
function syncStatement(statement: EngineStatement, sql: string): SyncStatement {
  return statementOver(
    {
      all: (params) => statement.all(params),
      run: (params) => statement.run(params),
      readBigInts: (on) => statement.safeIntegers(on),
    },
    statement.reader,
    statement.reader && !RETURNING.test(sql),
  )
}

function connection(db: EngineDatabase, file: string | undefined): SyncConnection {
  return connectionOver(db, {
    file,
    readonly: false,
    prepare: (sql) => syncStatement(db.prepare(sql), sql),
    prepareArrays(sql) {
      const statement = db.prepare(sql)
      if (statement.reader) statement.raw(true)
      return syncStatement(statement, sql)
    },
    preparePluck(sql) {
      const statement = db.prepare(sql)
      if (statement.reader) statement.pluck(true)
      return syncStatement(statement, sql)
    },
  })
}

/**
 * A local libSQL database (`file:` or `:memory:`) on the `libsql` engine directly, built with the
 * core driver kit: prepared statements cached per connection, WAL, an asynchronous busy wait, a
 * per-file lock shared by the process's connections, and an event-loop turn every 1,000 reads
 * so the result sets' native memory is freed. `@libsql/client`'s local mode prepares every
 * statement anew and keeps native memory the garbage collector does not see; this path does
 * neither. `path` is a file path or `:memory:`.
 */
export function localEngineDriver(
  path: string,
  options: SyncDriverOptions,
  encryptionKey?: string,
): Driver {
  const memory = path === ':memory:' || path === ''
  return createSyncDriver({
    ...options,
    name: 'libsql',
    target: path,
    memory,
    reopenable: true,
    open: () => connection(openEngine(path, encryptionKey), memory ? undefined : path),
    blob: toBuffer,
    // The engine frees each result set in a finalizer Node defers to `setImmediate` (about
    // 0.9 KiB each): letting the event loop turn every 1,000 reads keeps that bounded.
    turnEventLoopEvery: 1000,
    ...(encryptionKey !== undefined && !memory ? { encrypted: true } : {}),
  })
}
