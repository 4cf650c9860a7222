import { describe, expect, test } from 'vitest'
import {
  type AgentDatabase,
  type Driver,
  type Executor,
  fixedClock,
  groupCommits,
  guardDriver,
  type QueryResult,
  seededIds,
} from '../src/index.js'

/**
 * An engine that logs statements and fails a SELECT naming `failOn` with an I/O error, after
 * which the transaction is still open (SQLite keeps it on a failed read); no real engine.
 */
function loggingDatabase(failOn: string): { db: AgentDatabase; log: string[] } {
  const log: string[] = []
  const exec = async (sql: string): Promise<QueryResult<never>> => {
    log.push(sql)
    if (sql.includes(failOn))
      throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_READ' })
    return { rows: [], changes: 0 }
  }
  const driver: Driver = {
    name: 'logging',
    capabilities: { concurrentTransactions: false, inMemory: true, remote: false },
    execute: (statement) => exec(statement.sql),
    async transaction(fn) {
      await exec('BEGIN')
      const tx: Executor = { execute: (statement) => exec(statement.sql) }
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
    close: async () => {},
  }
  const guarded = guardDriver(driver)
  const db: AgentDatabase = {
    driver: guarded,
    clock: fixedClock(),
    ids: seededIds(1),
    chunkSize: 4096,
    referenceToolCalls: false,
    migration: { steps: [] } as unknown as AgentDatabase['migration'],
    inTransaction: false,
    capabilities: driver.capabilities,
    get generation() {
      return guarded.generation
    },
    execute: (statement) => guarded.execute(statement),
    transaction: (fn) => guarded.transaction(fn),
    close: () => guarded.close(),
  }
  return { db, log }
}

describe('groupCommits', () => {
  test('a read that fails with an I/O error commits its group at once; calls queued behind it run in the next', async () => {
    const { db, log } = loggingDatabase('FROM broken')
    const grouped = groupCommits(db, { maxDelayMs: 1000 })
    const first = grouped.transaction((tx) => tx.execute({ sql: 'INSERT 1' }))
    const read = grouped.execute({ sql: 'SELECT x FROM broken' })
    const after = grouped.transaction((tx) => tx.execute({ sql: 'INSERT 2' }))
    await first
    await expect(read).rejects.toMatchObject({ code: 'IO' })
    // Without the early end this would wait for the 1 s timer (or, worse, wait on itself).
    const start = Date.now()
    await after
    expect(Date.now() - start).toBeLessThan(500)
    await grouped.flush()
    expect(log).toEqual([
      'BEGIN',
      'SAVEPOINT agentfs_sp0',
      'INSERT 1',
      'RELEASE agentfs_sp0',
      'SELECT x FROM broken',
      'COMMIT',
      'BEGIN',
      'SAVEPOINT agentfs_sp0',
      'INSERT 2',
      'RELEASE agentfs_sp0',
      'COMMIT',
    ])
  })

  test('a read outside any group runs on its own; one while a group is open runs in it, after the changes before it', async () => {
    const { db, log } = loggingDatabase('never')
    const grouped = groupCommits(db, { maxDelayMs: 1000 })
    await grouped.execute({ sql: 'SELECT 1' })
    await grouped.transaction((tx) => tx.execute({ sql: 'INSERT 1' }))
    await grouped.execute({ sql: 'SELECT 2' })
    await grouped.flush()
    expect(log).toEqual([
      'SELECT 1',
      'BEGIN',
      'SAVEPOINT agentfs_sp0',
      'INSERT 1',
      'RELEASE agentfs_sp0',
      'SELECT 2',
      'COMMIT',
    ])
  })
})
