import type { Executor, QueryResult, SqlValue, Statement } from '../driver/driver.js'
import { AgentFsError } from '../errors.js'
import type { SyncConnection } from './kit-types.js'

/** What a transaction needs from the kit driver that runs it (see `createSyncDriver`). */
export interface KitHost {
  /** Runs one statement on `handle`, its engine error mapped. */
  run<Row>(handle: SyncConnection, statement: Statement): QueryResult<Row>
  /** True when the event loop is owed a turn before the next statement (`turnEventLoopEvery`). */
  needsTurn(): boolean
  /** Waits for that turn. */
  turn(): Promise<void>
  /**
   * Ends a failed transaction: ROLLBACK, and a connection still inside it after that is closed
   * (the driver's own rollback).
   */
  rollback(handle: SyncConnection): void
  /** A transaction that binds more than this many bytes is followed by a WAL truncation. */
  readonly truncateAfter: number
}

const COMMIT: Statement = { sql: 'COMMIT' }

/**
 * The executor a kit transaction's callback gets: every statement runs at once on the
 * connection inside the open transaction, counting the bytes it binds; refused once the
 * transaction has ended.
 */
class KitTransaction implements Executor {
  active = true
  bound = 0
  readonly #host: KitHost
  readonly #handle: SyncConnection

  constructor(host: KitHost, handle: SyncConnection) {
    this.#host = host
    this.#handle = handle
  }

  #run<Row>(statement: Statement): QueryResult<Row> {
    if (!this.active) throw new AgentFsError('MISUSE', 'Transaction already finished')
    const params = statement.params
    if (params !== undefined)
      for (let i = 0; i < params.length; i++) {
        const p = params[i]
        if (typeof p === 'string') this.bound += p.length
        else if (p instanceof Uint8Array) this.bound += p.byteLength
      }
    return this.#host.run<Row>(this.#handle, statement)
  }

  execute<Row = Record<string, SqlValue>>(statement: Statement): Promise<QueryResult<Row>> {
    if (this.#host.needsTurn()) return this.#host.turn().then(() => this.execute<Row>(statement))
    try {
      return Promise.resolve(this.#run<Row>(statement))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  executeNow<Row = Record<string, SqlValue>>(statement: Statement): QueryResult<Row> | undefined {
    return this.#host.needsTurn() ? undefined : this.#run<Row>(statement)
  }
}

/**
 * Runs `fn` in the write transaction just begun on `handle`, then commits; a callback that fails
 * (throws or rejects) or a COMMIT that fails rolls back, and the promise rejects with that error.
 * `held` (the caller's lock) is unlocked once the transaction has ended either way, before the
 * promise settles. One `then` on the callback's promise: no async frames.
 */
export function transactBegun<T>(
  host: KitHost,
  handle: SyncConnection,
  fn: (tx: Executor) => Promise<T>,
  held?: { unlock(): void },
): Promise<T> {
  const tx = new KitTransaction(host, handle)
  const failed = (error: unknown): never => {
    tx.active = false
    try {
      host.rollback(handle)
    } finally {
      held?.unlock()
    }
    throw error
  }
  let pending: Promise<T>
  try {
    pending = Promise.resolve(fn(tx))
  } catch (error) {
    try {
      failed(error)
    } catch (thrown) {
      return Promise.reject(thrown)
    }
  }
  return pending!.then((result) => {
    tx.active = false
    try {
      host.run(handle, COMMIT)
    } catch (error) {
      failed(error)
    }
    try {
      if (tx.bound > host.truncateAfter && handle.file !== undefined) {
        // The commit's auto-checkpoint already copied the pages; this gives the WAL's space back.
        handle.prepare('PRAGMA wal_checkpoint(TRUNCATE)').all([])
      }
    } catch {
      // A reader holds the WAL: the next checkpoint will do it.
    } finally {
      held?.unlock()
    }
    return result
  }, failed)
}
