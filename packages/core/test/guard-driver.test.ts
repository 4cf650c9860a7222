import { describe, expect, test } from 'vitest'
import { guardDriver, isAgentFsError, placeholders } from '../src/index.js'
import { fakeDriver } from './fake-driver.js'

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('guardDriver', () => {
  test('serialises a single-connection driver: outside calls wait for the transaction', async () => {
    const { driver, log } = fakeDriver()
    const db = guardDriver(driver)
    const tx = db.transaction(async (t) => {
      await t.execute({ sql: 'A' })
      await pause(10)
      await t.execute({ sql: 'B' })
    })
    await pause(2)
    const outside = db.execute({ sql: 'OUTSIDE' })
    await Promise.all([tx, outside])
    expect(log).toEqual(['BEGIN', 'A', 'B', 'COMMIT', 'OUTSIDE'])
  })

  test('executeNow runs a statement at once only while the connection is free', async () => {
    const { driver, log } = fakeDriver({ now: true })
    const db = guardDriver(driver)
    expect(db.executeNow!({ sql: 'SELECT 1' })).toEqual({ rows: [], changes: 0 })
    expect(await db.execute({ sql: 'SELECT 2' })).toEqual({ rows: [], changes: 0 })
    // Only a statement other than a SELECT moves the generation.
    const generation = db.generation
    db.executeNow!({ sql: 'SELECT 3' })
    expect(db.generation).toBe(generation)
    db.executeNow!({ sql: 'UPDATE t' })
    expect(db.generation).toBeGreaterThan(generation)
    // A transaction under way holds the connection: nothing runs now, and a call waits its turn.
    const tx = db.transaction(async (t) => {
      await t.execute({ sql: 'A' })
      await pause(10)
    })
    await pause(2)
    expect(db.executeNow!({ sql: 'OUTSIDE' })).toBeUndefined()
    const outside = db.execute({ sql: 'OUTSIDE' })
    await Promise.all([tx, outside])
    expect(log).toEqual([
      'SELECT 1 now',
      'SELECT 2 now',
      'SELECT 3 now',
      'UPDATE t now',
      'BEGIN',
      'A now',
      'COMMIT',
      'OUTSIDE',
    ])
    // Parameters are checked first; after close nothing runs and execute says why.
    expect(() => db.executeNow!({ sql: 'SELECT ?', params: [{} as never] })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    )
    await db.close()
    expect(db.executeNow!({ sql: 'SELECT 4' })).toBeUndefined()
    expect(isAgentFsError(await db.execute({ sql: 'SELECT 4' }).catch((e) => e), 'CLOSED')).toBe(
      true,
    )
  })

  test('executeNow leaves every statement to execute on a driver that isolates transactions', async () => {
    const { driver, log } = fakeDriver({ now: true, concurrent: true })
    const db = guardDriver(driver)
    expect(db.executeNow!({ sql: 'SELECT 1' })).toBeUndefined()
    await db.execute({ sql: 'SELECT 1' })
    expect(log).toEqual(['SELECT 1'])
  })

  test('does not serialise a driver that isolates transactions itself', async () => {
    const { driver, log } = fakeDriver({ concurrent: true })
    const db = guardDriver(driver)
    const tx = db.transaction(async (t) => {
      await t.execute({ sql: 'A' })
      await pause(15)
      await t.execute({ sql: 'B' })
    })
    await pause(5)
    await db.execute({ sql: 'OUTSIDE' })
    await tx
    expect(log.indexOf('OUTSIDE')).toBeLessThan(log.indexOf('B'))
  })

  test('nests with savepoints and rolls back only the inner part', async () => {
    const { driver, log } = fakeDriver()
    const db = guardDriver(driver)
    await db.transaction(async (t) => {
      expect(t.inTransaction).toBe(true)
      await t.transaction(async (inner) => inner.execute({ sql: 'OK' }))
      await t
        .transaction(async (inner) => {
          await inner.execute({ sql: 'BAD' })
          throw new Error('inner')
        })
        .catch(() => undefined)
    })
    expect(log).toEqual([
      'BEGIN',
      'SAVEPOINT agentfs_sp0',
      'OK',
      'RELEASE agentfs_sp0',
      'SAVEPOINT agentfs_sp0',
      'BAD',
      'ROLLBACK TO agentfs_sp0',
      'RELEASE agentfs_sp0',
      'COMMIT',
    ])
  })

  test('maps native errors a driver lets through', async () => {
    const { driver } = fakeDriver({ failOn: 'DUP' })
    const db = guardDriver(driver)
    const error = await db.execute({ sql: 'DUP' }).catch((e: unknown) => e)
    expect(isAgentFsError(error, 'CONSTRAINT_UNIQUE')).toBe(true)
    expect((error as Error).cause).toBeInstanceOf(Error)
    const txError = await db.transaction((t) => t.execute({ sql: 'DUP' })).catch((e: unknown) => e)
    expect(isAgentFsError(txError, 'CONSTRAINT_UNIQUE')).toBe(true)
  })

  test('close lets queued calls finish, closes the driver once, then refuses calls', async () => {
    const { driver, log, closes } = fakeDriver()
    const db = guardDriver(driver)
    const queued = [db.execute({ sql: 'ONE' }), db.execute({ sql: 'TWO' })]
    const closing = db.close()
    expect(db.closed).toBe(true)
    await Promise.all(queued)
    await closing
    await db.close()
    expect(log).toEqual(['ONE', 'TWO'])
    expect(closes()).toBe(1)
    await expect(db.execute({ sql: 'THREE' })).rejects.toMatchObject({ code: 'CLOSED' })
  })

  test('rejects bad parameters before touching the driver', async () => {
    const { driver, log } = fakeDriver()
    const db = guardDriver(driver)
    await expect(db.execute({ sql: 'X', params: [undefined as never] })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    expect(log).toEqual([])
  })
})

describe('placeholders', () => {
  test('one ? per value, comma-separated, none for none', () => {
    expect(placeholders(0)).toBe('')
    expect(placeholders(1)).toBe('?')
    expect(placeholders(3)).toBe('?, ?, ?')
    expect(placeholders(500).split(', ')).toHaveLength(500)
  })
})
