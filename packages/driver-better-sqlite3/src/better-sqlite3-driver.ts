import { realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import {
  AgentFsError,
  type Driver,
  type Executor,
  fromSqlInteger,
  isBusyError,
  type Mutex,
  mapSqliteError,
  type QueryResult,
  retryBusy,
  type SqlValue,
  type Statement,
  sharedMutex,
} from '@agentfs/core'

/** The parts of a better-sqlite3 `Statement` this driver uses (structural: no type dependency). */
export interface BetterSqlite3Statement {
  readonly reader: boolean
  readonly readonly: boolean
  all(...params: unknown[]): unknown[]
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint }
  safeIntegers(toggle?: boolean): this
}

/** The parts of a better-sqlite3 `Database` this driver uses. */
export interface BetterSqlite3Database {
  /** The path the database was opened with. */
  readonly name: string
  readonly open: boolean
  readonly inTransaction: boolean
  readonly memory: boolean
  readonly readonly: boolean
  prepare(source: string): BetterSqlite3Statement
  exec(source: string): this
  close(): this
}

/** `PRAGMA synchronous` levels. */
export type SynchronousMode = 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA'

/**
 * Refuses a better-sqlite3 build that crashes this Node.js: 12.x aborts on Node 24
 * (`Statement::~Statement` assertion) and 13.x needs Node 22 (it crashes on Node 20). A clear
 * error naming the version to install beats a SIGABRT or a segfault later.
 */
export function checkEngineVersion(
  node = process.versions.node,
  engine = betterSqlite3Version(),
): void {
  if (engine === undefined) return
  const nodeMajor = Number(node.split('.')[0])
  const engineMajor = Number(engine.split('.')[0])
  if (engineMajor >= 13 && nodeMajor < 22)
    throw new AgentFsError(
      'CANT_OPEN',
      `better-sqlite3 ${engine} needs Node.js 22 or newer, and this is Node.js ${node}: install better-sqlite3 12 (npm install better-sqlite3@12.6.2) or use a newer Node.js`,
    )
  if (engineMajor <= 12 && nodeMajor >= 24)
    throw new AgentFsError(
      'CANT_OPEN',
      `better-sqlite3 ${engine} crashes on Node.js ${node}: install better-sqlite3 13 (npm install better-sqlite3@13.2.0)`,
    )
}

/** The errors `bindings` and `node-gyp-build` throw when no compiled module exists. */
function isUnbuiltBinding(error: unknown): boolean {
  const message = error instanceof Error ? error.message : ''
  return /Could not locate the bindings file|No native build was found/.test(message)
}

function betterSqlite3Version(): string | undefined {
  try {
    return (createRequire(import.meta.url)('better-sqlite3/package.json') as { version: string })
      .version
  } catch {
    return undefined
  }
}

/** Options of {@link betterSqlite3Driver}. Give exactly one of `path` and `database`. */
export interface BetterSqlite3DriverConfig {
  /** A file path, or `:memory:`. The driver opens it on first use. */
  readonly path?: string
  /** An open database, or a (lazy) factory for one. The driver closes it on `close()`. */
  readonly database?:
    | BetterSqlite3Database
    | (() => BetterSqlite3Database | Promise<BetterSqlite3Database>)
  /** Open the file read-only (only with `path`). */
  readonly readonly?: boolean
  /** `PRAGMA synchronous` (default `NORMAL`; `FULL` fsyncs every commit). */
  readonly synchronous?: SynchronousMode
  /**
   * How long to wait for another connection's write lock, in ms (default 5000). The wait is
   * asynchronous (see `retryBusy`), so connections in the same process do not deadlock.
   */
  readonly busyTimeoutMs?: number
  /** WAL file size kept after checkpoints, in bytes (default 4 MiB). */
  readonly journalSizeLimit?: number
  /**
   * A transaction that binds more than this many bytes is followed by
   * `PRAGMA wal_checkpoint(TRUNCATE)`, so one large write does not leave a WAL of its size on
   * disk (default 8 MiB; `Infinity` turns it off). Best effort: skipped while readers block it.
   */
  readonly truncateWalAfterBytes?: number
  /** Prepared statements kept (LRU), default 256. */
  readonly statementCacheSize?: number
}

function convertRows<Row>(rows: unknown[]): Row[] {
  for (const row of rows as Record<string, unknown>[]) {
    for (const key in row) {
      const value = row[key]
      if (typeof value === 'bigint') row[key] = fromSqlInteger(value)
    }
  }
  return rows as Row[]
}

function bindParams(params: readonly SqlValue[] | undefined): unknown[] {
  if (!params || params.length === 0) return []
  const out = new Array<unknown>(params.length)
  for (let i = 0; i < params.length; i++) {
    const value = params[i]
    if (typeof value === 'number') {
      // better-sqlite3 binds every JS number as REAL; integral ones must be INTEGER, as in
      // other engines, or typeof() and expressions without column affinity disagree.
      out[i] = Number.isSafeInteger(value) ? BigInt(value) : value
    } else if (value instanceof Uint8Array && !Buffer.isBuffer(value)) {
      // better-sqlite3 binds Buffers as BLOBs; a plain Uint8Array gets a zero-copy Buffer view.
      out[i] = Buffer.from(value.buffer, value.byteOffset, value.byteLength)
    } else {
      out[i] = value
    }
  }
  return out
}

/**
 * A {@link Driver} over better-sqlite3 (synchronous, in-process). File databases get WAL, a busy
 * timeout and `synchronous = NORMAL` unless configured otherwise.
 *
 * @example
 * const driver = betterSqlite3Driver({ path: 'agent.db' })
 * const db = await openDatabase({ driver })
 */
export function betterSqlite3Driver(config: BetterSqlite3DriverConfig): Driver {
  if ((config.path === undefined) === (config.database === undefined)) {
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'betterSqlite3Driver needs exactly one of `path` and `database`',
    )
  }
  const cacheSize = config.statementCacheSize ?? 256
  const busyTimeout = config.busyTimeoutMs ?? 5000
  const truncateAfter = config.truncateWalAfterBytes ?? 8 * 1024 * 1024
  const cache = new Map<string, BetterSqlite3Statement>()
  let db: BetterSqlite3Database | undefined
  let opening: Promise<BetterSqlite3Database> | undefined
  let closed = false
  const memory = config.path === ':memory:' || config.path === ''
  /** Shared with other connections of this process to the same file (see `sharedMutex`). */
  let fileLock: { mutex: Mutex; readonly shared: boolean; release(): void } | undefined
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> =>
    fileLock ? fileLock.mutex.run(fn, busyTimeout) : fn()
  /** A single statement waits only if another connection of this process uses the file. */
  const contended = () => fileLock !== undefined && (fileLock.shared || fileLock.mutex.locked)

  async function openDb(): Promise<BetterSqlite3Database> {
    try {
      return await openDbUnmapped()
    } catch (error) {
      throw mapSqliteError(error, { sql: `(opening ${config.path ?? 'database'})` })
    }
  }

  async function openDbUnmapped(): Promise<BetterSqlite3Database> {
    let handle: BetterSqlite3Database
    if (config.database !== undefined) {
      handle = typeof config.database === 'function' ? await config.database() : config.database
    } else {
      checkEngineVersion()
      const { default: Database } = await import('better-sqlite3').catch((error: unknown) => {
        throw new AgentFsError(
          'CANT_OPEN',
          'better-sqlite3 is not installed: npm install better-sqlite3 (it is a peer dependency of @agentfs/driver-better-sqlite3)',
          { cause: error },
        )
      })
      try {
        handle = new Database(config.path!, {
          readonly: config.readonly ?? false,
          fileMustExist: config.readonly ?? false,
          timeout: 0,
        }) as unknown as BetterSqlite3Database
      } catch (error) {
        if (isUnbuiltBinding(error))
          throw new AgentFsError(
            'CANT_OPEN',
            "better-sqlite3's native module is not built (pnpm 10 skips dependency build scripts until they are approved): run pnpm approve-builds, or npm rebuild better-sqlite3",
            { cause: error },
          )
        throw mapSqliteError(error)
      }
    }
    // Busy waits happen asynchronously in retryBusy, never inside SQLite.
    handle.prepare('PRAGMA busy_timeout = 0').all()
    if (!handle.memory) fileLock = sharedMutex(realpathSync(handle.name))
    await exclusive(async () => {
      if (!handle.memory && !handle.readonly) {
        await retryBusy(() => handle.prepare('PRAGMA journal_mode = WAL').all(), busyTimeout)
        const limit = Math.trunc(config.journalSizeLimit ?? 4 * 1024 * 1024)
        handle.prepare(`PRAGMA journal_size_limit = ${limit}`).all()
      }
      handle.prepare(`PRAGMA synchronous = ${config.synchronous ?? 'NORMAL'}`).run()
    })
    return handle
  }

  function current(): BetterSqlite3Database | Promise<BetterSqlite3Database> {
    if (closed) throw new AgentFsError('CLOSED', 'The better-sqlite3 driver is closed')
    if (db) return db
    opening ??= openDb().then((handle) => {
      db = handle
      return handle
    })
    return opening
  }

  function prepare(handle: BetterSqlite3Database, sql: string): BetterSqlite3Statement {
    let statement = cache.get(sql)
    if (statement) {
      // Refresh LRU position.
      cache.delete(sql)
      cache.set(sql, statement)
      return statement
    }
    statement = handle.prepare(sql)
    if (statement.reader) statement.safeIntegers(true)
    cache.set(sql, statement)
    if (cache.size > cacheSize) cache.delete(cache.keys().next().value as string)
    return statement
  }

  function runRaw<Row>(handle: BetterSqlite3Database, statement: Statement): QueryResult<Row> {
    const prepared = prepare(handle, statement.sql)
    const params = bindParams(statement.params)
    if (prepared.reader) {
      const rows = convertRows<Row>(prepared.all(...params))
      return { rows, changes: prepared.readonly ? 0 : rows.length }
    }
    const info = prepared.run(...params)
    return { rows: [], changes: info.changes, lastInsertRowid: BigInt(info.lastInsertRowid) }
  }

  function run<Row>(handle: BetterSqlite3Database, statement: Statement): QueryResult<Row> {
    try {
      return runRaw<Row>(handle, statement)
    } catch (error) {
      throw mapSqliteError(error, { sql: statement.sql })
    }
  }

  /** Outside a transaction a BUSY statement is retried asynchronously until the timeout. */
  async function runRetrying<Row>(
    handle: BetterSqlite3Database,
    statement: Statement,
  ): Promise<QueryResult<Row>> {
    try {
      return runRaw<Row>(handle, statement)
    } catch (error) {
      if (handle.inTransaction || !isBusyError(error))
        throw mapSqliteError(error, { sql: statement.sql })
      try {
        return await retryBusy(() => runRaw<Row>(handle, statement), busyTimeout)
      } catch (retryError) {
        throw mapSqliteError(retryError, { sql: statement.sql })
      }
    }
  }

  const withDb = async (): Promise<BetterSqlite3Database> => current()

  return {
    name: 'better-sqlite3',
    capabilities: { concurrentTransactions: false, inMemory: memory, remote: false },
    execute<Row = Record<string, SqlValue>>(statement: Statement): Promise<QueryResult<Row>> {
      // Fast path: the statement runs synchronously; only a lock wait or a busy retry goes async.
      const handle = db
      if (handle && !contended()) {
        try {
          return Promise.resolve(runRaw<Row>(handle, statement))
        } catch (error) {
          if (handle.inTransaction || !isBusyError(error)) {
            return Promise.reject(mapSqliteError(error, { sql: statement.sql }))
          }
        }
      }
      return (async () => {
        const opened = db ?? (await withDb())
        return contended()
          ? exclusive(() => runRetrying<Row>(opened, statement))
          : runRetrying<Row>(opened, statement)
      })()
    },
    async transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
      const handle = db ?? (await withDb())
      return exclusive(() => transact(handle, fn))
    },
    async executeScript(sql: string): Promise<void> {
      const handle = db ?? (await withDb())
      await exclusive(async () => {
        try {
          // Not retried on BUSY: a script that failed part-way may already have run statements.
          handle.exec(sql)
        } catch (error) {
          throw mapSqliteError(error)
        }
      })
    },
    async close(): Promise<void> {
      if (closed) return
      closed = true
      const handle = db ?? (opening ? await opening.catch(() => undefined) : undefined)
      cache.clear()
      if (handle?.open) handle.close()
      fileLock?.release()
    },
  }

  /**
   * Ends a failed transaction. The caller's error is what it reports, whatever ROLLBACK says. A
   * ROLLBACK that fails is tried again; a connection still inside the transaction after that is
   * closed (SQLite then discards the transaction), so its half-done changes can never be seen
   * or committed by a later call; a path or factory opens a fresh connection on the next call.
   */
  function rollback(handle: BetterSqlite3Database): void {
    for (let attempt = 0; attempt < 3 && handle.inTransaction; attempt++) {
      try {
        run(handle, { sql: 'ROLLBACK' })
      } catch {
        // Tried again below; the caller's own error is the one reported.
      }
    }
    if (!handle.inTransaction) return
    cache.clear()
    handle.close()
    if (db === handle) db = undefined
    opening = undefined
    fileLock?.release()
    fileLock = undefined
    // A connection handed in as an instance cannot be opened again.
    if (config.database !== undefined && typeof config.database !== 'function') closed = true
  }

  async function transact<T>(
    handle: BetterSqlite3Database,
    fn: (tx: Executor) => Promise<T>,
  ): Promise<T> {
    await runRetrying(handle, { sql: 'BEGIN IMMEDIATE' })
    let active = true
    let bound = 0
    const tx: Executor = {
      execute: <Row = Record<string, SqlValue>>(statement: Statement) => {
        if (!active)
          return Promise.reject(new AgentFsError('MISUSE', 'Transaction already finished'))
        if (statement.params)
          for (const p of statement.params)
            if (typeof p === 'string' || p instanceof Uint8Array)
              bound += typeof p === 'string' ? p.length : p.byteLength
        try {
          return Promise.resolve(run<Row>(handle, statement))
        } catch (error) {
          return Promise.reject(error)
        }
      },
    }
    let result: T
    try {
      result = await fn(tx)
    } catch (error) {
      active = false
      rollback(handle)
      throw error
    }
    active = false
    try {
      run(handle, { sql: 'COMMIT' })
    } catch (error) {
      rollback(handle)
      throw error
    }
    if (bound > truncateAfter && !handle.memory) {
      try {
        // The commit's auto-checkpoint already copied the pages; this gives the WAL's space back.
        handle.prepare('PRAGMA wal_checkpoint(TRUNCATE)').all()
      } catch {
        // A reader holds the WAL: the next checkpoint will do it.
      }
    }
    return result
  }
}
