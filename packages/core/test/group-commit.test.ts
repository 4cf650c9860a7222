import { describe, expect, test } from 'vitest'
import {
  type AgentDatabase,
  fixedClock,
  groupCommits,
  guardDriver,
  plainChunks,
  seededIds,
} from '../src/index.js'
import { fakeDriver } from './fake-driver.js'

/**
 * A database over a logging engine whose SELECTs naming `failOn` fail with an I/O error, after
 * which the transaction is still open (SQLite keeps it on a failed read); no real engine.
 */
function loggingDatabase(failOn: string): { db: AgentDatabase; log: string[] } {
  const { driver, log } = fakeDriver({ failOn, failCode: 'SQLITE_IOERR_READ', delayMs: 0 })
  const guarded = guardDriver(driver)
  const db: AgentDatabase = {
    driver: guarded,
    clock: fixedClock(),
    ids: seededIds(1),
    chunkSize: 4096,
    chunks: plainChunks(4096),
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
