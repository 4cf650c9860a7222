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
