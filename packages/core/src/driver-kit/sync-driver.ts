import { isBusyError, retryBusy } from '../driver/busy-retry.js'
import {
  arrayRowsOf,
  type Driver,
  type Executor,
  pluckedRowsOf,
  type QueryResult,
  type ReadThen,
  readThen,
  type SqlValue,
  type Statement,
  settledNow,
} from '../driver/driver.js'
import { mapSqliteError } from '../driver/map-error.js'
import { AgentFsError } from '../errors.js'
import { type KitHost, transactBegun } from './kit-transaction.js'
import type { SyncConnection, SyncDriverSpec, SyncStatement } from './kit-types.js'
import { FileLock } from './lazy.js'
import {
  bindIntegers,
  convertRows,
  convertValues,
  exactNumberRows,
  exactNumberValues,
} from './values.js'

const BEGIN_DEFERRED: Statement = { sql: 'BEGIN' }
const COMMIT: Statement = { sql: 'COMMIT' }
const BEGIN_IMMEDIATE: Statement = { sql: 'BEGIN IMMEDIATE' }

/** {@link Executor.readThen} as two statements on `executor`'s `execute`. */
function readThenApart<Row>(
  executor: Executor,
  read: Statement,
  next: (result: QueryResult<Row>) => Statement | undefined,
): Promise<ReadThen<Row>> {
  return readThen<Row>({ execute: (statement) => executor.execute(statement) }, read, next)
}

const same = (rows: unknown[]): unknown[] => rows

/** How a binding's statement hands rows over: objects, arrays (`Statement.arrays`), values (`Statement.pluck`). */
type RowShape = 'objects' | 'arrays' | 'pluck'

/**
 * Builds a {@link Driver} from a synchronous SQLite binding: lazy open, WAL and the pragmas, a
 * per-file lock shared by the connections of this process, asynchronous BUSY retry, a FIFO
 * statement cache, integer binding, a fast path that runs a statement without awaiting, and
 * transactions whose failed ROLLBACK closes the connection rather than leave it inside.
 *
 * @example
 * export const acmeDriver = (path: string) =>
 *   createSyncDriver({ name: 'acme', memory: path === ':memory:', reopenable: true,
 *     open: () => acmeConnection(path) })
 */
export function createSyncDriver(spec: SyncDriverSpec): Driver {
  const cacheSize = spec.statementCacheSize ?? 256
  const busyTimeout = spec.busyTimeoutMs ?? 5000
  const truncateAfter = spec.truncateWalAfterBytes ?? 8 * 1024 * 1024
  const blob = spec.blob
  const turnEvery = spec.turnEventLoopEvery ?? Number.POSITIVE_INFINITY
  let readsSinceTurn = 0
  /** One turn shared by every call that arrives while it is pending, so they keep their order. */
  let pendingTurn: Promise<void> | undefined
  const needsTurn = (): boolean => readsSinceTurn >= turnEvery
  const turn = (): Promise<void> => {
    pendingTurn ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      readsSinceTurn = 0
      pendingTurn = undefined
    })
    return pendingTurn
  }
  const cache = new Map<string, SyncStatement>()
  const arrayCache = new Map<string, SyncStatement>()
  const pluckCache = new Map<string, SyncStatement>()
  /** Drops every prepared statement (of a connection closed or about to be). */
  const forgetStatements = () => {
    cache.clear()
    arrayCache.clear()
    pluckCache.clear()
  }
  let db: SyncConnection | undefined
  let opening: Promise<SyncConnection> | undefined
  let closed = false
  const fileLock = new FileLock(busyTimeout)
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => fileLock.exclusive(fn)

  async function openDb(): Promise<SyncConnection> {
    try {
      return await openDbUnmapped()
    } catch (error) {
      throw mapSqliteError(error, { sql: `(opening ${spec.target ?? 'database'})` })
    }
  }

  async function openDbUnmapped(): Promise<SyncConnection> {
    const handle = await spec.open()
    // Busy waits happen asynchronously in retryBusy, never inside SQLite.
    handle.prepare('PRAGMA busy_timeout = 0').all([])
    if (handle.file !== undefined) fileLock.attach(handle.file)
    await exclusive(async () => {
      if (handle.file !== undefined && !handle.readonly) {
        await retryBusy(() => handle.prepare('PRAGMA journal_mode = WAL').all([]), busyTimeout)
        const limit = Math.trunc(spec.journalSizeLimit ?? 4 * 1024 * 1024)
        handle.prepare(`PRAGMA journal_size_limit = ${limit}`).all([])
      }
      handle.prepare(`PRAGMA synchronous = ${spec.synchronous ?? 'NORMAL'}`).run([])
    })
    return handle
  }

  function current(): SyncConnection | Promise<SyncConnection> {
    if (closed) throw new AgentFsError('CLOSED', `The ${spec.name} driver is closed`)
    if (db) return db
    opening ??= openDb().then((handle) => {
      db = handle
      return handle
    })
    return opening
  }

  function prepare(handle: SyncConnection, sql: string, shape: RowShape): SyncStatement {
    // Statements that return arrays or values are other prepared statements (a binding's row
    // mode is a property of the statement), kept apart.
    const map = shape === 'pluck' ? pluckCache : shape === 'arrays' ? arrayCache : cache
    // First in, first out: refreshing an entry's place on every hit (delete + set) costs more
    // than preparing again the rare hot statement that reaches the front.
    let statement = map.get(sql)
    if (statement) return statement
    statement =
      shape === 'pluck'
        ? handle.preparePluck!(sql)
        : shape === 'arrays'
          ? handle.prepareArrays!(sql)
          : handle.prepare(sql)
    map.set(sql, statement)
    if (map.size > cacheSize) map.delete(map.keys().next().value as string)
    return statement
  }

  function runRaw<Row>(handle: SyncConnection, statement: Statement): QueryResult<Row> {
    // The binding's own row mode when it has one; otherwise object rows, converted.
    const shape: RowShape =
      statement.pluck === true
        ? handle.preparePluck !== undefined
          ? 'pluck'
          : 'objects'
        : statement.arrays === true && handle.prepareArrays !== undefined
          ? 'arrays'
          : 'objects'
    const prepared = prepare(handle, statement.sql, shape)
    const params = bindIntegers(statement.params, blob)
    if (prepared.reader) {
      readsSinceTurn++
      const convert =
        shape !== 'objects'
          ? same
          : statement.pluck === true
            ? pluckedRowsOf
            : statement.arrays === true
              ? arrayRowsOf
              : same
      const exact = shape === 'pluck' ? exactNumberValues : exactNumberRows
      if (statement.first === true && prepared.firstNumbers !== undefined && prepared.readonly) {
        // One step of the statement: the lookups of every read (an entry, a key).
        const rows = prepared.firstNumbers(params)
        if (rows !== undefined && exact(rows)) return { rows: convert(rows) as Row[], changes: 0 }
      }
      if (prepared.allNumbers !== undefined && prepared.readonly) {
        // Reading again is harmless: the statement cannot change anything, and inside a
        // transaction it sees the same snapshot.
        const rows = prepared.allNumbers(params)
        if (rows !== undefined && exact(rows)) return { rows: convert(rows) as Row[], changes: 0 }
      }
      const all = prepared.all(params)
      const rows = convert(shape === 'pluck' ? convertValues(all) : convertRows(all)) as Row[]
      return { rows, changes: prepared.readonly ? 0 : rows.length }
    }
    const info = prepared.run(params)
    return {
      rows: [],
      changes: Number(info.changes),
      lastInsertRowid: BigInt(info.lastInsertRowid),
    }
  }

  function run<Row>(handle: SyncConnection, statement: Statement): QueryResult<Row> {
    try {
      return runRaw<Row>(handle, statement)
    } catch (error) {
      throw mapSqliteError(error, { sql: statement.sql })
    }
  }

  /** Outside a transaction a BUSY statement is retried asynchronously until the timeout. */
  async function runRetrying<Row>(
    handle: SyncConnection,
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

  const withDb = async (): Promise<SyncConnection> => current()
  const host: KitHost = { run, needsTurn, turn, rollback, truncateAfter }

  /**
   * The statement run at once on the open, uncontended connection (see `Executor.executeNow`);
   * a busy statement changed nothing and is left to `execute`, which waits and retries.
   */
  function executeNow<Row = Record<string, SqlValue>>(
    statement: Statement,
  ): QueryResult<Row> | undefined {
    const handle = db
    if (!handle || fileLock.contended || needsTurn()) return undefined
    try {
      return runRaw<Row>(handle, statement)
    } catch (error) {
      if (handle.inTransaction || !isBusyError(error))
        throw mapSqliteError(error, { sql: statement.sql })
      return undefined
    }
  }

  return {
    name: spec.name,
    capabilities: {
      concurrentTransactions: false,
      inMemory: spec.memory,
      remote: false,
      // One connection, replaced only after a failed ROLLBACK (inside a transaction, which
      // moves the guard's generation): SQLite's data_version and total_changes() hold.
      snapshotTokens: spec.snapshotTokens ?? true,
      arrayRows: true,
      pluckRows: true,
      ...(spec.recursiveQueries === undefined ? {} : { recursiveQueries: spec.recursiveQueries }),
      ...(spec.fullTextSearch === undefined ? {} : { fullTextSearch: spec.fullTextSearch }),
      ...(spec.encrypted ? { encrypted: true } : {}),
    },
    execute<Row = Record<string, SqlValue>>(statement: Statement): Promise<QueryResult<Row>> {
      // Fast path: the statement runs synchronously; only a lock wait or a busy retry goes async.
      const settled = settledNow<Row>(executeNow, statement)
      if (settled !== undefined) return settled
      return (async () => {
        if (needsTurn()) await turn()
        const opened = db ?? (await withDb())
        return fileLock.contended
          ? exclusive(() => runRetrying<Row>(opened, statement))
          : runRetrying<Row>(opened, statement)
      })()
    },
    executeNow,
    readThen<Row = Record<string, SqlValue>>(
      read: Statement,
      next: (result: QueryResult<Row>) => Statement | undefined,
    ): Promise<ReadThen<Row>> {
      // In one deferred transaction when the connection is free right now (the common case);
      // otherwise as two statements, each waiting and retrying as `execute` does.
      const handle = db
      if (!handle || fileLock.contended || needsTurn() || handle.inTransaction)
        return readThenApart(this, read, next)
      try {
        runRaw(handle, BEGIN_DEFERRED)
      } catch {
        return readThenApart(this, read, next)
      }
      let result: QueryResult<Row>
      let follow: Statement | undefined
      try {
        result = runRaw<Row>(handle, read)
        follow = next(result)
      } catch (error) {
        rollback(handle)
        // A busy database (a WAL being recovered): read again the way `execute` retries.
        if (isBusyError(error)) return readThenApart(this, read, next)
        return Promise.reject(mapSqliteError(error, { sql: read.sql }))
      }
      let followError: unknown
      if (follow !== undefined) {
        try {
          // Takes the write lock now; busy when another connection holds it or wrote since
          // this read (its snapshot is then stale): the caller may run it again on its own.
          runRaw(handle, follow)
        } catch (error) {
          followError = mapSqliteError(error, { sql: follow.sql })
        }
      }
      if (followError === undefined) {
        try {
          runRaw(handle, COMMIT)
          return Promise.resolve({ result, followed: follow !== undefined })
        } catch (error) {
          followError = mapSqliteError(error, { sql: 'COMMIT' })
        }
      }
      rollback(handle)
      return Promise.resolve({ result, followed: false, followError })
    },
    transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
      // Fast path: an open connection whose lock is free begins at once, and the transaction
      // settles in one step after the callback's; a held lock or a busy database waits its turn.
      const handle = db
      const held = handle === undefined ? undefined : fileLock.tryHold()
      if (handle === undefined || held === undefined)
        return (async () => {
          const opened = db ?? (await withDb())
          return exclusive(() => transact(opened, fn))
        })()
      try {
        runRaw(handle, BEGIN_IMMEDIATE)
      } catch (error) {
        held.unlock()
        if (!isBusyError(error))
          return Promise.reject(mapSqliteError(error, { sql: BEGIN_IMMEDIATE.sql }))
        return exclusive(() => transact(handle, fn))
      }
      return transactBegun(host, handle, fn, held)
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
      forgetStatements()
      if (handle?.isOpen) handle.close()
      fileLock.release()
    },
  }

  /**
   * Ends a failed transaction. The caller's error is what it reports, whatever ROLLBACK says. A
   * ROLLBACK that fails is tried again; a connection still inside the transaction after that is
   * closed (SQLite then discards the transaction), so its half-done changes can never be seen
   * or committed by a later call; a reopenable connection opens afresh on the next call.
   */
  function rollback(handle: SyncConnection): void {
    for (let attempt = 0; attempt < 3 && handle.inTransaction; attempt++) {
      try {
        run(handle, { sql: 'ROLLBACK' })
      } catch {
        // Tried again below; the caller's own error is the one reported.
      }
    }
    if (!handle.inTransaction) return
    forgetStatements()
    handle.close()
    if (db === handle) db = undefined
    opening = undefined
    fileLock.release()
    if (!spec.reopenable) closed = true
  }

  /** The transaction of a connection whose lock is held: BEGIN IMMEDIATE, waiting while busy. */
  async function transact<T>(handle: SyncConnection, fn: (tx: Executor) => Promise<T>): Promise<T> {
    await runRetrying(handle, BEGIN_IMMEDIATE)
    return transactBegun(host, handle, fn)
  }
}
