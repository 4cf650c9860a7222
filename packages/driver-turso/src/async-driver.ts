import {
  AgentFsError,
  type Driver,
  type DriverCapabilities,
  type Executor,
  mapSqliteError,
  type QueryResult,
  type Statement,
  type SyncCapabilities,
} from '@agentfs/core'
import { bindIntegers, convertRows, Mutex, retryBusy } from '@agentfs/core/driver-kit'
import { HexVariants, hexParams } from './blob-binding.js'
import { engineError, PRAGMA_FUNCTION, RETURNING } from './engine.js'

/** The parts of a statement of Turso's promise API (`@tursodatabase/database`, `…/sync`). */
export interface TursoAsyncStatement {
  readonly reader: boolean
  all(...params: unknown[]): Promise<unknown[]>
  run(...params: unknown[]): Promise<{ changes: number; lastInsertRowid: number }>
  safeIntegers(toggle?: boolean): unknown
  close(): void
}

/**
 * The parts of a `Database` of Turso's promise API this driver uses: `connect()` of
 * `@tursodatabase/database`, or of `@tursodatabase/sync` (whose `push`/`pull` must then run
 * through {@link TursoAsyncDriver.exclusive}).
 */
export interface TursoAsyncDatabase {
  readonly inTransaction: boolean
  prepare(sql: string): TursoAsyncStatement | Promise<TursoAsyncStatement>
  exec(sql: string): Promise<void>
  close(): Promise<void>
}

/** Options of {@link tursoAsyncDriver}. */
export interface TursoAsyncDriverOptions {
  /** An open database of Turso's promise API. The driver closes it. */
  readonly database: TursoAsyncDatabase
  /** The driver's name (default `turso`). */
  readonly name?: string
  /** For a synced database: how ids are chosen and files rewritten (see `SyncCapabilities`). */
  readonly sync?: SyncCapabilities
  /** Prepared statements kept (LRU), default 256. */
  readonly statementCacheSize?: number
  /** How long to wait, asynchronously, for another connection's write lock (ms, default 5000). */
  readonly busyTimeoutMs?: number
  /**
   * Refuse schema changes (`CREATE`, `DROP`, `ALTER`) with a `MISUSE` error carrying this
   * reason, before they run. A synced database sets it: the 0.7 engine aborts the process when
   * it pushes a schema change with a transform set.
   */
  readonly refuseSchemaChanges?: string
}

/** A {@link Driver} that also lends its connection, between transactions, to other work. */
export interface TursoAsyncDriver extends Driver {
  /**
   * Runs `fn` when no statement or transaction of this driver is running, and holds every later
   * one until it settles: the place for the sync engine's `push()` and `pull()`, which fail
   * while a transaction is open.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T>
}

interface Prepared {
  readonly reader: boolean
  readonly readonly: boolean
  all(params: readonly unknown[]): Promise<unknown[]>
  run(params: readonly unknown[]): Promise<{ changes: number; lastInsertRowid: number }>
  close(): void
}

const guarded = async <T>(fn: () => Promise<T>): Promise<T> => {
  try {
    return await fn()
  } catch (error) {
    throw engineError(error)
  }
}

/** A statement (or a script) that changes the schema, wherever it starts in a script. */
const SCHEMA_CHANGE = /(^|;)(\s|--[^\n]*(\n|$)|\/\*[\s\S]*?\*\/)*(CREATE|DROP|ALTER)\b/i

/** Row-returning calls between two event-loop turns (the binding frees rows in finalizers). */
const TURN_EVERY = 100

/**
 * A {@link Driver} on Turso's promise API: a `Database` from `connect()` of
 * `@tursodatabase/database`, or the synced `Database` of `@tursodatabase/sync`. Calls are
 * serialised on one connection; transactions are `BEGIN IMMEDIATE` … `COMMIT` on it. Long BLOB
 * parameters are bound as hex through `unhex(?)`, as in {@link tursoDriver}. The engine has no
 * `WITH RECURSIVE` (`capabilities.recursiveQueries: false`).
 *
 * @example
 * import { connect } from '@tursodatabase/database'
 * const driver = tursoAsyncDriver({ database: await connect('agent.db') })
 */
export function tursoAsyncDriver(options: TursoAsyncDriverOptions): TursoAsyncDriver {
  const db = options.database
  const name = options.name ?? 'turso'
  const cacheSize = options.statementCacheSize ?? 256
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000
  const mutex = new Mutex()
  const cache = new Map<string, Prepared>()
  let closed = false
  let reads = 0

  const prepareOne = async (sql: string, reader?: boolean): Promise<TursoAsyncStatement> => {
    const statement = await db.prepare(sql)
    if (reader ?? statement.reader) statement.safeIntegers(true)
    return statement
  }

  const prepare = async (sql: string): Promise<Prepared> => {
    if (PRAGMA_FUNCTION.test(sql)) {
      // Kept prepared, a statement of pragma functions holds a read transaction that a later
      // schema change trips over inside the engine: prepared for each run instead.
      const once = async <T>(fn: (s: TursoAsyncStatement) => Promise<T>): Promise<T> => {
        const own = !db.inTransaction
        if (own) await db.exec('BEGIN')
        const statement = await prepareOne(sql)
        try {
          return await fn(statement)
        } finally {
          statement.close()
          if (own && db.inTransaction) await db.exec('COMMIT')
        }
      }
      return {
        reader: true,
        readonly: !RETURNING.test(sql),
        all: (params) => once((s) => s.all(...params)),
        run: (params) => once((s) => s.run(...params)),
        close: () => {},
      }
    }
    const statement = await prepareOne(sql)
    const reader = statement.reader
    const hex = new HexVariants<TursoAsyncStatement>(sql)
    const pick = async (
      params: readonly unknown[],
    ): Promise<[TursoAsyncStatement, readonly unknown[]]> => {
      const plan = hex.plan(params)
      if (plan === undefined) return [statement, params]
      const variant =
        hex.get(plan.key) ?? hex.keep(plan.key, await prepareOne(hex.sqlFor(plan.blobs), reader))
      return [variant, hexParams(params, plan.blobs)]
    }
    return {
      reader,
      readonly: reader && !RETURNING.test(sql),
      all: async (params) => {
        const [chosen, values] = await pick(params)
        return chosen.all(...values)
      },
      run: async (params) => {
        const [chosen, values] = await pick(params)
        return chosen.run(...values)
      },
      close: () => {
        statement.close()
        hex.close()
      },
    }
  }

  const cached = async (sql: string): Promise<Prepared> => {
    const hit = cache.get(sql)
    if (hit !== undefined) {
      cache.delete(sql)
      cache.set(sql, hit)
      return hit
    }
    const made = await prepare(sql)
    cache.set(sql, made)
    if (cache.size > cacheSize) {
      const [oldest, statement] = cache.entries().next().value as [string, Prepared]
      cache.delete(oldest)
      statement.close()
    }
    return made
  }

  const refuse = options.refuseSchemaChanges
  const checkSchemaChange = (sql: string) => {
    if (refuse !== undefined && SCHEMA_CHANGE.test(sql))
      throw new AgentFsError('MISUSE', `${sql.trim().split(/\s+/, 3).join(' ')} refused: ${refuse}`)
  }

  const run = async <Row>(statement: Statement): Promise<QueryResult<Row>> => {
    checkSchemaChange(statement.sql)
    const prepared = await guarded(() => cached(statement.sql))
    const params = bindIntegers(statement.params)
    if (prepared.reader) {
      if (++reads % TURN_EVERY === 0) await new Promise((resolve) => setImmediate(resolve))
      const rows = await guarded(() => prepared.all(params))
      return { rows: convertRows<Row>(rows), changes: prepared.readonly ? 0 : rows.length }
    }
    const result = await guarded(() => prepared.run(params))
    return {
      rows: [],
      changes: Number(result.changes),
      lastInsertRowid: BigInt(result.lastInsertRowid),
    }
  }

  const check = () => {
    if (closed)
      throw new AgentFsError('CLOSED', `The ${name} database is closed; open a new one to continue`)
  }
  const mapped = async <T>(fn: () => Promise<T>, sql?: string): Promise<T> => {
    try {
      return await fn()
    } catch (error) {
      throw mapSqliteError(error, sql === undefined ? undefined : { sql })
    }
  }

  const capabilities: DriverCapabilities = {
    concurrentTransactions: false,
    inMemory: false,
    remote: false,
    recursiveQueries: false,
    // No FTS5 in the 0.7 engine: the full-text index keeps its words in a table.
    fullTextSearch: false,
    ...(options.sync === undefined ? {} : { sync: options.sync }),
  }

  return {
    name,
    capabilities,
    execute<Row>(statement: Statement) {
      return mutex.run(() => {
        check()
        // A statement refused for a lock did nothing: it is tried again until the lock frees.
        return mapped(() => retryBusy(() => run<Row>(statement), busyTimeoutMs), statement.sql)
      })
    },
    transaction<T>(fn: (tx: Executor) => Promise<T>) {
      return mutex.run(async () => {
        check()
        await mapped(() =>
          retryBusy(() => guarded(() => db.exec('BEGIN IMMEDIATE')), busyTimeoutMs),
        )
        let active = true
        const tx: Executor = {
          execute: <Row>(statement: Statement) => {
            if (!active)
              return Promise.reject(
                new AgentFsError(
                  'MISUSE',
                  `A ${name} transaction handle was used after its transaction ended`,
                ),
              )
            return mapped(() => run<Row>(statement), statement.sql)
          },
        }
        try {
          const result = await fn(tx)
          await mapped(() => guarded(() => db.exec('COMMIT')))
          return result
        } catch (error) {
          if (db.inTransaction) await guarded(() => db.exec('ROLLBACK')).catch(() => {})
          throw error
        } finally {
          active = false
        }
      })
    },
    executeScript(sql: string) {
      return mutex.run(async () => {
        check()
        checkSchemaChange(sql)
        // `exec` autocommits statement by statement: one transaction makes the script atomic.
        const own = !db.inTransaction
        await mapped(async () => {
          if (own) await retryBusy(() => guarded(() => db.exec('BEGIN IMMEDIATE')), busyTimeoutMs)
          try {
            await guarded(() => db.exec(sql))
            if (own) await guarded(() => db.exec('COMMIT'))
          } catch (error) {
            if (own && db.inTransaction) await db.exec('ROLLBACK').catch(() => {})
            throw error
          }
        })
      })
    },
    exclusive<T>(fn: () => Promise<T>) {
      return mutex.run(async () => {
        check()
        return fn()
      })
    },
    close() {
      return mutex.run(async () => {
        if (closed) return
        closed = true
        for (const statement of cache.values()) statement.close()
        cache.clear()
        await db.close()
      })
    },
  }
}
