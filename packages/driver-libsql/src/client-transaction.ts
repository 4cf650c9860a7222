import {
  type AgentFsError,
  type Executor,
  isAgentFsError,
  mapSqliteError,
  type QueryResult,
  type Statement,
} from '@agentfs/core'
import { retryBusy } from '@agentfs/core/driver-kit'
import {
  bindArgs,
  type LibsqlClient,
  type LibsqlInStatement,
  type LibsqlResultSet,
  type LibsqlTransaction,
  toResult,
} from './client.js'

/** What a client transaction needs from its driver. */
export interface TransactionContext {
  /** How long BEGIN may wait for the write lock, in ms. */
  readonly busyTimeout: number
  /** Maps a client error (with the statement's SQL, when known). */
  readonly mapError: (error: unknown, sql?: string) => AgentFsError
}

/** Runs one statement on a client or transaction, results and errors mapped. */
export async function runOn<Row>(
  target: { execute(s: LibsqlInStatement): Promise<LibsqlResultSet> },
  statement: Statement,
  mapError: TransactionContext['mapError'],
): Promise<QueryResult<Row>> {
  try {
    const result = await target.execute({ sql: statement.sql, args: bindArgs(statement.params) })
    return toResult<Row>(result)
  } catch (error) {
    throw mapError(error, statement.sql)
  }
}

/**
 * One write transaction on the client's interactive `transaction('write')`. The executor offers
 * `defer` when the transaction has `batch`: queued statements go with the next statement, or with
 * COMMIT, in one request whose steps each run only if the one before succeeded. A queued
 * statement that fails fails every later call and the transaction. BEGIN travels with the first
 * request; if the server refuses it (BUSY), nothing has run, and that request is retried on a new
 * transaction until the busy timeout.
 */
export async function clientTransaction<T>(
  handle: LibsqlClient,
  fn: (tx: Executor) => Promise<T>,
  { busyTimeout, mapError }: TransactionContext,
): Promise<T> {
  let remote: LibsqlTransaction
  const begin = () => retryBusy(() => handle.transaction('write'), busyTimeout)
  try {
    remote = await begin()
  } catch (error) {
    throw mapError(error)
  }
  /** Statements queued with `defer`, sent with the next statement or with COMMIT. */
  let queued: Statement[] = []
  /** A queued statement failed: every later call rejects, and the transaction rolls back. */
  let failure: AgentFsError | undefined
  /** Sends the queued statements and then `statement` (or COMMIT) in one request. */
  const send = async <Row>(
    statement: Statement | undefined,
    beginning: boolean,
  ): Promise<QueryResult<Row>> => {
    if (failure) throw failure
    const group = queued
    queued = []
    if (group.length === 0 && statement !== undefined)
      return runOn<Row>(remote, statement, mapError)
    const all = statement === undefined ? group : [...group, statement]
    // `defer` is offered only when the transaction has `batch`.
    const batch = remote.batch as NonNullable<LibsqlTransaction['batch']>
    try {
      const results = await batch.call(
        remote,
        all.map((s) => ({ sql: s.sql, args: bindArgs(s.params) })),
      )
      return toResult<Row>(results[results.length - 1] as LibsqlResultSet)
    } catch (error) {
      const index = (error as { statementIndex?: unknown }).statementIndex
      const failed = typeof index === 'number' ? all[index] : undefined
      const mapped = mapError(error, failed?.sql)
      // BEGIN itself was refused (it goes with the first request): nothing ran, the caller
      // retries the whole group on a new transaction.
      if (isAgentFsError(mapped, 'BUSY') && beginning) {
        queued = [...group, ...queued]
        throw mapped
      }
      if (failed !== statement) failure = mapped
      throw mapped
    }
  }
  // A remote client sends BEGIN with the transaction's first statement, so the write lock can
  // be refused there: nothing has happened yet, so that statement is retried on a new
  // transaction until the busy timeout, as BEGIN is.
  let first = true
  const execute = <Row>(statement: Statement | undefined): Promise<QueryResult<Row>> => {
    if (!first) return send<Row>(statement, false)
    first = false
    return retryBusy(async () => {
      try {
        return await send<Row>(statement, true)
      } catch (error) {
        if (isAgentFsError(error, 'BUSY')) {
          remote.close()
          remote = await handle.transaction('write')
        }
        throw error
      }
    }, busyTimeout)
  }
  const executor: Executor = { execute: (statement) => execute(statement) }
  if (remote.batch !== undefined)
    executor.defer = (statement) => {
      queued.push(statement)
    }
  try {
    const result = await fn(executor)
    if (failure) throw failure
    if (queued.length > 0) {
      // The queued statements and COMMIT in one request; closing the stream afterwards sends
      // its close without waiting for it.
      queued.push({ sql: 'COMMIT' })
      await execute(undefined)
    } else {
      try {
        await remote.commit()
      } catch (error) {
        throw mapSqliteError(error)
      }
    }
    return result
  } catch (error) {
    await remote.rollback().catch(() => undefined)
    throw error
  } finally {
    remote.close()
  }
}
