import type { Driver, Executor, QueryResult, Statement } from '../src/index.js'

export interface FakeDriverOptions {
  /** Report concurrent transactions (a remote server) instead of one connection. */
  readonly concurrent?: boolean
  /** Statements whose SQL contains this fail, with `failCode`. */
  readonly failOn?: string
  /** The engine code the failing statements carry (default SQLITE_CONSTRAINT_UNIQUE). */
  readonly failCode?: string
  /** Each statement waits this long first (default 1 ms; 0 answers at once). */
  readonly delayMs?: number
  /** Offer `executeNow` (logged with " now"), at the top level and in transactions. */
  readonly now?: boolean
}

/** A driver that records statements and can be told to fail; no engine behind it. */
export function fakeDriver(options: FakeDriverOptions = {}) {
  const log: string[] = []
  let closes = 0
  const delay = options.delayMs ?? 1
  const exec = async (sql: string): Promise<QueryResult<never>> => {
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay))
    log.push(sql)
    if (options.failOn && sql.includes(options.failOn)) {
      throw Object.assign(new Error(`native failure on ${sql}`), {
        code: options.failCode ?? 'SQLITE_CONSTRAINT_UNIQUE',
      })
    }
    return { rows: [], changes: 0 }
  }
  const now = (statement: Statement): QueryResult<never> => {
    log.push(`${statement.sql} now`)
    return { rows: [], changes: 0 }
  }
  const driver: Driver = {
    name: 'fake',
    capabilities: {
      concurrentTransactions: options.concurrent ?? false,
      inMemory: true,
      remote: false,
    },
    execute: (statement) => exec(statement.sql),
    ...(options.now && { executeNow: now }),
    async transaction(fn) {
      await exec('BEGIN')
      const tx: Executor = {
        execute: (statement) => exec(statement.sql),
        ...(options.now && { executeNow: now }),
      }
      try {
        const result = await fn(tx)
        await exec('COMMIT')
        return result
      } catch (error) {
        await exec('ROLLBACK')
        throw error
      }
    },
    executeScript: async (sql) => void (await exec(sql)),
    close: async () => {
      closes++
    },
  }
  return { driver, log, closes: () => closes }
}
