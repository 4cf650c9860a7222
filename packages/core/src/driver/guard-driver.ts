import { joinRealm } from '../audit/integrity-keys.js'
import { AgentFsError, isAgentFsError } from '../errors.js'
import {
  type Driver,
  type DriverCapabilities,
  type Executor,
  type IdTable,
  type QueryResult,
  type ReadThen,
  type SqlValue,
  type Statement,
  settledNow,
} from './driver.js'
import { mapSqliteError } from './map-error.js'
import { Mutex } from './mutex.js'
import {
  checkParams,
  conversion,
  rowsAsAskedLater,
  runNow,
  TransactionHandle,
} from './transaction-handle.js'
import { beginUnit } from './transaction-unit.js'

/**
 * A transaction handle. Statements run inside the enclosing transaction; `transaction()` nests
 * with a SAVEPOINT, so code written against {@link Queryable} composes with a caller's
 * transaction.
 */
export interface Transaction extends Queryable {
  /** True inside a transaction (always, for a handle). */
  readonly inTransaction: true
}

/** A driver or a transaction: what domain packages run their statements on. */
export interface Queryable extends Executor {
  /**
   * Runs `fn` atomically: a top-level call opens a transaction, a call on a {@link Transaction}
   * opens a savepoint. If `fn` rejects, everything it did is rolled back and the error rethrown.
   */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>
  /** False on the top-level handle, true on a transaction handle. */
  readonly inTransaction: boolean
  /** The driver's capabilities, for SQL that depends on them (see {@link recursiveQueries}). */
  readonly capabilities?: DriverCapabilities
}

/**
 * Whether `WITH RECURSIVE` may be used on this executor: false only when its driver says the
 * engine lacks it (`capabilities.recursiveQueries === false`).
 */
export function recursiveQueries(executor: Executor): boolean {
  return (executor as Partial<Queryable>).capabilities?.recursiveQueries !== false
}

/** The driver's `capabilities.fullTextSearch` (undefined when it does not say). */
export function fullTextSearch(executor: Executor): boolean | undefined {
  return (executor as Partial<Queryable>).capabilities?.fullTextSearch
}

/**
 * The id for a new row of `table`: the synced database's choice, or undefined where the engine
 * chooses (AUTOINCREMENT).
 */
export function explicitId(executor: Executor, table: IdTable): Promise<number> | undefined {
  return (executor as Partial<Queryable>).capabilities?.sync?.nextId(table, executor)
}

/** True when `executor` allots row ids itself (a synced database): {@link explicitId} gives them. */
export function explicitIds(executor: Executor): boolean {
  return (executor as Partial<Queryable>).capabilities?.sync !== undefined
}

/** True when whole-file writes replace the inode (a synced database; see `SyncCapabilities`). */
export function replaceOnRewrite(executor: Executor): boolean {
  return (executor as Partial<Queryable>).capabilities?.sync?.replaceOnRewrite === true
}

/** A driver wrapped by the core: serialised, closed-checked, error-mapped. */
export interface GuardedDriver extends Queryable {
  readonly name: string
  readonly driver: Driver
  readonly capabilities: DriverCapabilities
  readonly closed: boolean
  /**
   * Moves whenever this handle may have changed the database or its transaction state in a
   * way `total_changes()` does not count: a transaction starting or ending (a rollback undoes
   * counted changes), a script, any top-level statement other than a SELECT. Caches validated
   * by {@link snapshotSource} compare it.
   */
  readonly generation: number
  /**
   * True while a transaction (or a script) of this handle is under way: a caller that would
   * block its thread until another connection to the same file gets the write lock can tell
   * that it would be waiting on itself.
   */
  readonly transactionOpen: boolean
  /**
   * Transactions and scripts this handle has begun: a caller can tell whether anything it did
   * in between may have written rows (a lone statement outside one, such as an access time,
   * does not count).
   */
  readonly transactions: number
  executeScript(sql: string): Promise<void>
  /** Waits for running calls, then closes the driver. Idempotent. */
  close(): Promise<void>
}

const closedError = (name: string) =>
  new AgentFsError('CLOSED', `The ${name} database is closed; open a new one to continue`)

/**
 * Wraps a driver with what every engine needs and no driver should reimplement: a mutex for
 * single-connection engines, parameter validation, clear errors after `close()`, savepoint
 * nesting, and mapping of stray native errors to {@link AgentFsError}.
 */
export function guardDriver(driver: Driver): GuardedDriver {
  const mutex = new Mutex()
  const serial = !driver.capabilities.concurrentTransactions
  const now = driver.executeNow !== undefined
  /** Set by close(): new calls are refused, calls already queued still run. */
  let closeRequested = false
  /** Set once the driver itself is closed. */
  let closed = false
  let closing: Promise<void> | undefined
  /** Calls running on a concurrent driver (a serial one queues them on the mutex instead). */
  let running = 0
  let whenIdle: (() => void) | undefined
  let generation = 0
  /** Transactions and scripts under way (several on a concurrent driver). */
  let open = 0
  /** Transactions and scripts begun so far. */
  let begun = 0

  const guard = <T>(fn: () => Promise<T>): Promise<T> => {
    if (closeRequested) return Promise.reject(closedError(driver.name))
    if (serial) return mutex.run(fn)
    running++
    return fn().finally(() => {
      if (--running === 0) whenIdle?.()
    })
  }
  /**
   * Runs one call of the driver (`sql`: what its errors name) on the connection: a free
   * single-connection lock is taken without an extra async frame (the fast path every lone
   * statement takes), otherwise the call waits its turn; errors come back mapped.
   */
  const serially = <T>(sql: string, run: () => Promise<T>): Promise<T> => {
    if (serial && !closeRequested && !closed && mutex.tryLock()) {
      let pending: Promise<T>
      try {
        pending = run()
      } catch (error) {
        mutex.unlock()
        return Promise.reject(mapSqliteError(error, { sql }))
      }
      return pending.then(
        (result) => {
          mutex.unlock()
          return result
        },
        (error: unknown) => {
          mutex.unlock()
          throw mapSqliteError(error, { sql })
        },
      )
    }
    return guard(async () => {
      if (closed) throw closedError(driver.name)
      try {
        return await run()
      } catch (error) {
        throw mapSqliteError(error, { sql })
      }
    })
  }
  /** The statement run now, on a free connection; undefined when it must wait (see `Executor.executeNow`). */
  const executeNow = <Row = Record<string, SqlValue>>(
    statement: Statement,
  ): QueryResult<Row> | undefined => {
    checkParams(statement)
    // A free connection of an in-process engine: the statement runs now, with no lock to hold
    // across a wait (nothing else can run until it returns).
    if (!now || !serial || closeRequested || closed || mutex.locked) return undefined
    if (!PLAIN_SELECT.test(statement.sql)) generation++
    return runNow<Row>(driver, statement, driver.capabilities)
  }
  const ended = <T>(result: T): T => {
    open--
    generation++
    return result
  }
  const endedBadly = (error: unknown): never => {
    open--
    generation++
    // Errors thrown by the callback itself pass through untouched; engine errors get mapped.
    if (error instanceof Error && !isAgentFsError(error) && isEngineError(error))
      throw mapSqliteError(error)
    throw error
  }
  const unlocking = <T>(result: T): T => {
    mutex.unlock()
    return result
  }
  const unlockingThrow = (error: unknown): never => {
    mutex.unlock()
    throw error
  }
  /** One top-level transaction on the driver, `fn` given its guarded handle (the lock held). */
  const transact = <T>(fn: (tx: Transaction) => Promise<T>): Promise<T> => {
    generation++
    open++
    begun++
    let pending: Promise<T>
    try {
      pending = driver.transaction((tx) => {
        const handle = new TransactionHandle(tx, 0, driver.name, driver.capabilities)
        beginUnit(handle)
        joinRealm(handle, driver)
        return handle.run(fn)
      })
    } catch (error) {
      pending = Promise.reject(error)
    }
    return pending.then(ended, endedBadly)
  }
  /** Resolves once every call started before it has finished. */
  const drained = (): Promise<void> => {
    if (serial) return mutex.run(async () => {})
    if (running === 0) return Promise.resolve()
    return new Promise((resolve) => {
      whenIdle = resolve
    })
  }

  return {
    name: driver.name,
    driver,
    inTransaction: false,
    get capabilities() {
      return driver.capabilities
    },
    get closed() {
      return closeRequested
    },
    get generation() {
      return generation
    },
    get transactionOpen() {
      return open > 0
    },
    get transactions() {
      return begun
    },
    executeNow,
    execute<Row = Record<string, SqlValue>>(statement: Statement): Promise<QueryResult<Row>> {
      const settled = settledNow<Row>(executeNow, statement)
      if (settled !== undefined) return settled
      if (!PLAIN_SELECT.test(statement.sql)) generation++
      return serially(statement.sql, () =>
        rowsAsAskedLater(driver.execute<Row>(statement), statement, driver.capabilities),
      )
    },
    ...(driver.readThen !== undefined && {
      readThen<Row = Record<string, SqlValue>>(
        read: Statement,
        next: (result: QueryResult<Row>) => Statement | undefined,
      ): Promise<ReadThen<Row>> {
        try {
          checkParams(read)
        } catch (error) {
          return Promise.reject(error)
        }
        // The second statement may change the database: the generation moves before it runs.
        const follow = (result: QueryResult<Row>) => {
          const statement = next(result)
          if (statement !== undefined) {
            checkParams(statement)
            generation++
          }
          return statement
        }
        const convert = conversion(read, driver.capabilities)
        return serially(read.sql, () =>
          driver.readThen!<Row>(read, follow).then((done) =>
            convert ? { ...done, result: convert(done.result) } : done,
          ),
        )
      },
    }),
    transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
      // A free single-connection lock is taken at once, and released in the step that settles
      // the transaction: no async frame of its own on the path every write takes.
      if (serial && !closeRequested && !closed && mutex.tryLock())
        return transact(fn).then(unlocking, unlockingThrow)
      return guard(() => (closed ? Promise.reject(closedError(driver.name)) : transact(fn)))
    },
    executeScript(sql: string): Promise<void> {
      return guard(async () => {
        generation++
        open++
        begun++
        try {
          await driver.executeScript(sql)
        } catch (error) {
          throw mapSqliteError(error)
        } finally {
          open--
          generation++
        }
      })
    },
    close(): Promise<void> {
      if (!closing) {
        closeRequested = true
        // Let calls already queued or running finish, then close the connection.
        closing = drained().then(async () => {
          closed = true
          await driver.close()
        })
      }
      return closing
    },
  }
}

/** A top-level statement that cannot change the database or the transaction state. */
const PLAIN_SELECT = /^\s*SELECT\s/i

function isEngineError(error: Error): boolean {
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' && code.startsWith('SQLITE_')
}
