import { joinRealm, REALM } from '../audit/integrity-keys.js'
import { AgentFsError } from '../errors.js'
import type { DriverCapabilities, Executor, QueryResult, SqlValue, Statement } from './driver.js'
import { arrayRowsOf, pluckedRowsOf } from './driver.js'
import type { Transaction } from './guard-driver.js'
import { mapSqliteError } from './map-error.js'
import { joinUnit, type TransactionUnit, UNIT, unitMark } from './transaction-unit.js'

// The guarded handle's pieces for one statement (parameter checks, the row shapes a driver
// cannot give) and its transaction handle (see `guardDriver`).

/** Refuses a parameter no engine binds (undefined, an object, a function…). */
export function checkParams(statement: Statement): void {
  const params = statement.params
  if (!params) return
  for (let i = 0; i < params.length; i++) {
    const value: unknown = params[i]
    if (
      value === null ||
      typeof value === 'number' ||
      typeof value === 'string' ||
      typeof value === 'bigint' ||
      value instanceof Uint8Array
    ) {
      continue
    }
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `Parameter ${i + 1} of "${statement.sql.slice(0, 80)}" is ${value === undefined ? 'undefined' : typeof value}; ` +
        'pass null, a number, a bigint, a string or a Uint8Array',
    )
  }
}

/** A result's object rows as arrays of their values (for drivers without `arrayRows`). */
function toArrayRows<Row>(result: QueryResult<Row>): QueryResult<Row> {
  return { ...result, rows: arrayRowsOf(result.rows) as Row[] }
}

function toPluckedRows<Row>(result: QueryResult<Row>): QueryResult<Row> {
  return { ...result, rows: pluckedRowsOf(result.rows) as Row[] }
}

/** How the rows of `statement` must be converted on a driver with `capabilities`, if at all. */
export function conversion(
  statement: Statement,
  capabilities: DriverCapabilities,
): (<Row>(result: QueryResult<Row>) => QueryResult<Row>) | undefined {
  if (statement.pluck === true) return capabilities.pluckRows === true ? undefined : toPluckedRows
  if (statement.arrays === true) return capabilities.arrayRows === true ? undefined : toArrayRows
  return undefined
}

/** `result`, with the rows the statement asks for (arrays, values) when the driver cannot. */
export function rowsAsAsked<Row>(
  result: QueryResult<Row>,
  statement: Statement,
  capabilities: DriverCapabilities,
): QueryResult<Row> {
  const convert = conversion(statement, capabilities)
  return convert === undefined ? result : convert(result)
}

/**
 * `statement` run by `executor`'s `executeNow` (which it must have), its engine error mapped, its
 * rows as the statement asks for them; undefined when it did not run.
 */
export function runNow<Row>(
  executor: Executor,
  statement: Statement,
  capabilities: DriverCapabilities,
): QueryResult<Row> | undefined {
  let result: QueryResult<Row> | undefined
  try {
    result = executor.executeNow!<Row>(statement)
  } catch (error) {
    throw mapSqliteError(error, { sql: statement.sql })
  }
  return result === undefined ? undefined : rowsAsAsked(result, statement, capabilities)
}

/** `pending`, with the rows the statement asks for (arrays, values) when the driver cannot. */
export function rowsAsAskedLater<Row>(
  pending: Promise<QueryResult<Row>>,
  statement: Statement,
  capabilities: DriverCapabilities,
): Promise<QueryResult<Row>> {
  const convert = conversion(statement, capabilities)
  return convert === undefined ? pending : pending.then(convert)
}

export class TransactionHandle implements Transaction {
  /** The handle's transaction unit (see `beginUnit`), declared so that setting it keeps the shape. */
  [UNIT]: TransactionUnit | undefined = undefined;
  /** The connection it runs on (see `joinRealm`), declared likewise. */
  [REALM]: object | undefined = undefined
  readonly inTransaction = true as const
  #active = true
  #depth: number
  readonly #inner: Executor
  readonly #name: string
  /** True when the driver's transaction offers `executeNow`. */
  readonly #now: boolean
  readonly capabilities: DriverCapabilities
  /** Present when the driver's transaction can queue statements (see `Executor.defer`). */
  readonly defer?: (statement: Statement) => void

  constructor(inner: Executor, depth: number, name: string, capabilities: DriverCapabilities) {
    this.#inner = inner
    this.#depth = depth
    this.#name = name
    this.capabilities = capabilities
    this.#now = inner.executeNow !== undefined
    if (inner.defer !== undefined) {
      const queue = inner.defer.bind(inner)
      this.defer = (statement) => {
        this.#check()
        checkParams(statement)
        queue(statement)
      }
    }
  }

  end(): void {
    this.#active = false
  }

  /**
   * `fn` given this handle; the handle ends when `fn` settles (thrown, rejected or resolved),
   * before the returned promise does.
   */
  run<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    let pending: Promise<T>
    try {
      pending = Promise.resolve(fn(this))
    } catch (error) {
      this.#active = false
      return Promise.reject(error)
    }
    return pending.then(
      (result) => {
        this.#active = false
        return result
      },
      (error: unknown) => {
        this.#active = false
        throw error
      },
    )
  }

  #check(): void {
    if (!this.#active) {
      throw new AgentFsError(
        'MISUSE',
        `A ${this.#name} transaction handle was used after its transaction ended; run the statement inside the callback`,
      )
    }
  }

  executeNow<Row = Record<string, SqlValue>>(statement: Statement): QueryResult<Row> | undefined {
    this.#check()
    checkParams(statement)
    return this.#now ? runNow<Row>(this.#inner, statement, this.capabilities) : undefined
  }

  execute<Row = Record<string, SqlValue>>(statement: Statement): Promise<QueryResult<Row>> {
    let pending: Promise<QueryResult<Row>>
    try {
      const result = this.executeNow<Row>(statement)
      if (result !== undefined) return Promise.resolve(result)
      pending = rowsAsAskedLater(this.#inner.execute<Row>(statement), statement, this.capabilities)
    } catch (error) {
      return Promise.reject(mapSqliteError(error, { sql: statement.sql }))
    }
    return pending.catch((error: unknown) => {
      throw mapSqliteError(error, { sql: statement.sql })
    })
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    this.#check()
    const savepoint = `agentfs_sp${this.#depth}`
    await this.execute({ sql: `SAVEPOINT ${savepoint}` })
    const nested = new TransactionHandle(
      this.#inner,
      this.#depth + 1,
      this.#name,
      this.capabilities,
    )
    // A savepoint is part of its transaction's unit; rolled back, its changes leave the unit.
    joinUnit(this, nested)
    joinRealm(nested, this)
    const restore = unitMark(this)
    let result: T
    try {
      result = await fn(nested)
    } catch (error) {
      nested.end()
      restore?.()
      await this.execute({ sql: `ROLLBACK TO ${savepoint}` })
      await this.execute({ sql: `RELEASE ${savepoint}` })
      throw error
    }
    nested.end()
    await this.execute({ sql: `RELEASE ${savepoint}` })
    return result
  }
}
