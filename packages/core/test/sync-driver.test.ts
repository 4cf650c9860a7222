import { describe, expect, test } from 'vitest'
import { guardDriver } from '../src/driver/guard-driver.js'
import { createSyncDriver, type SyncConnection } from '../src/driver-kit/index.js'

/**
 * A fake in-process binding: every reader records whether the event loop had turned (a
 * `setImmediate` armed before the calls had run) at the moment it ran.
 */
function fakeBinding() {
  const turnedAt: boolean[] = []
  let turned = false
  const connection: SyncConnection = {
    file: undefined,
    readonly: false,
    isOpen: true,
    inTransaction: false,
    prepare(sql) {
      const reader = /^\s*(SELECT|PRAGMA)/i.test(sql)
      return {
        reader,
        readonly: reader,
        all: () => {
          if (/^\s*SELECT/i.test(sql)) turnedAt.push(turned)
          return [{ x: 1n }]
        },
        run: () => ({ changes: 0, lastInsertRowid: 0 }),
      }
    },
    exec() {},
    close() {},
  }
  return {
    connection,
    turnedAt,
    arm: () => {
      turned = false
      setImmediate(() => {
        turned = true
      })
    },
  }
}

/** A driver on a fake binding, opened with one read, the event-loop probe armed after it. */
async function opened(turnEventLoopEvery?: number) {
  const binding = fakeBinding()
  const driver = createSyncDriver({
    name: 'fake',
    memory: true,
    reopenable: false,
    open: () => binding.connection,
    ...(turnEventLoopEvery === undefined ? {} : { turnEventLoopEvery }),
  })
  await driver.execute({ sql: 'SELECT 1' }) // opens; one read so far
  binding.arm()
  binding.turnedAt.length = 0
  return { binding, driver }
}

describe('createSyncDriver turnEventLoopEvery', () => {
  test('a caller that only awaits still lets the event loop turn every N reads', async () => {
    const { binding, driver } = await opened(3)
    for (let i = 0; i < 4; i++) await driver.execute({ sql: 'SELECT 1' })
    // Two more reads make three; the next one waits for the event loop to turn.
    expect(binding.turnedAt).toEqual([false, false, true, true])
    await driver.close()
  })

  test('inside a transaction too, and concurrent calls keep their order', async () => {
    const { binding, driver } = await opened(2)
    const order: number[] = []
    await driver.transaction(async (tx) => {
      await Promise.all(
        [0, 1, 2, 3].map((i) =>
          tx.execute({ sql: `SELECT ${i}` }).then(() => {
            order.push(i)
          }),
        ),
      )
    })
    expect(order).toEqual([0, 1, 2, 3])
    expect(binding.turnedAt).toEqual([false, true, true, true])
    await driver.close()
  })

  test('without the option, reads never wait for the event loop', async () => {
    const { binding, driver } = await opened()
    for (let i = 0; i < 50; i++) await driver.execute({ sql: 'SELECT 1' })
    expect(binding.turnedAt.every((turned) => !turned)).toBe(true)
    await driver.close()
  })
})

/** A driver on a fake in-memory connection whose statements `prepare` makes. */
function fakeDriver(
  prepare: SyncConnection['prepare'],
  inTransaction: () => boolean = () => false,
) {
  const connection: SyncConnection = {
    file: undefined,
    readonly: false,
    isOpen: true,
    get inTransaction() {
      return inTransaction()
    },
    prepare,
    exec() {},
    close() {},
  }
  return createSyncDriver({ name: 'fake', memory: true, reopenable: false, open: () => connection })
}

describe('createSyncDriver first', () => {
  /** A binding whose read-only statement counts how it was run; `value` is every row's x. */
  function counting(value: number) {
    const calls = { first: 0, numbers: 0, all: 0 }
    const rows = () => [{ x: value }, { x: 2 }]
    // Only the test's statements count (the driver runs its own when it opens).
    const driver = fakeDriver((sql) => ({
      reader: true,
      readonly: !/RETURNING/.test(sql),
      firstNumbers: () => {
        if (/\bx\b/.test(sql)) calls.first++
        return rows().slice(0, 1)
      },
      allNumbers: () => {
        if (/\bx\b/.test(sql)) calls.numbers++
        return rows()
      },
      all: () => {
        if (/\bx\b/.test(sql)) calls.all++
        return [{ x: BigInt(value) }, { x: 2n }]
      },
      run: () => ({ changes: 0, lastInsertRowid: 0 }),
    }))
    return { driver, calls }
  }

  test('a `first` read steps its statement once; a read without it collects every row', async () => {
    const { driver, calls } = counting(1)
    expect((await driver.execute({ sql: 'SELECT x', first: true })).rows).toEqual([{ x: 1 }])
    expect(calls).toEqual({ first: 1, numbers: 0, all: 0 })
    expect((await driver.execute({ sql: 'SELECT x' })).rows).toEqual([{ x: 1 }, { x: 2 }])
    expect(calls).toEqual({ first: 1, numbers: 1, all: 0 })
  })

  test('a first row beyond 2^53 is read again exactly; a statement that writes runs whole', async () => {
    const big = 2 ** 53 + 2
    const { driver, calls } = counting(big)
    const { rows } = await driver.execute({ sql: 'SELECT x', first: true })
    expect(rows[0]).toEqual({ x: BigInt(big) })
    expect(calls.all).toBe(1)
    const written = await counting(1)
    await written.driver.execute({ sql: 'INSERT INTO t VALUES (1) RETURNING x', first: true })
    expect(written.calls).toEqual({ first: 0, numbers: 0, all: 1 })
  })
})

describe('createSyncDriver readThen', () => {
  /** A binding that records the statements run, in order; `fail` makes that text throw. */
  function recording(fail?: string) {
    const ran: string[] = []
    let inTransaction = false
    const driver = fakeDriver(
      (sql) => {
        const reader = /^\s*(SELECT|PRAGMA)/i.test(sql)
        const step = () => {
          if (/^(SELECT|INSERT|BEGIN|COMMIT|ROLLBACK)/.test(sql)) ran.push(sql)
          if (sql === fail)
            throw Object.assign(new Error('UNIQUE constraint failed'), {
              code: 'SQLITE_CONSTRAINT_UNIQUE',
            })
          if (sql === 'BEGIN') inTransaction = true
          if (sql === 'COMMIT' || sql === 'ROLLBACK') inTransaction = false
        }
        return {
          reader,
          readonly: reader,
          all: () => {
            step()
            return reader ? [{ x: 1n }] : []
          },
          run: () => {
            step()
            return { changes: 1, lastInsertRowid: 0 }
          },
        }
      },
      () => inTransaction,
    )
    return { driver, ran }
  }

  test('the read and the statement it asks for run in one deferred transaction', async () => {
    const { driver, ran } = recording()
    await driver.execute({ sql: 'SELECT 0' })
    ran.length = 0
    const done = await driver.readThen!({ sql: 'SELECT x' }, (r) =>
      r.rows.length === 1 ? { sql: 'INSERT y' } : undefined,
    )
    expect(done).toMatchObject({ followed: true, result: { rows: [{ x: 1 }] } })
    expect(ran).toEqual(['BEGIN', 'SELECT x', 'INSERT y', 'COMMIT'])
    ran.length = 0
    expect((await driver.readThen!({ sql: 'SELECT x' }, () => undefined)).followed).toBe(false)
    expect(ran).toEqual(['BEGIN', 'SELECT x', 'COMMIT'])
  })

  test('a failing second statement is rolled back and returned', async () => {
    const { driver, ran } = recording('INSERT y')
    await driver.execute({ sql: 'SELECT 0' })
    ran.length = 0
    const done = await driver.readThen!({ sql: 'SELECT x' }, () => ({ sql: 'INSERT y' }))
    expect(done.followed).toBe(false)
    expect(done.result.rows).toEqual([{ x: 1 }])
    expect((done.followError as { code?: string }).code).toBe('CONSTRAINT_UNIQUE')
    expect(ran).toEqual(['BEGIN', 'SELECT x', 'INSERT y', 'ROLLBACK'])
  })
})

describe('createSyncDriver executeNow', () => {
  test('not before the connection is open, nor when the event loop is due a turn', async () => {
    const binding = fakeBinding()
    const driver = createSyncDriver({
      name: 'fake',
      memory: true,
      reopenable: false,
      open: () => binding.connection,
      turnEventLoopEvery: 3,
    })
    // Opening is asynchronous: nothing runs now, execute opens it.
    expect(driver.executeNow!({ sql: 'SELECT 1' })).toBeUndefined()
    await driver.execute({ sql: 'SELECT 1' })
    binding.arm()
    binding.turnedAt.length = 0
    expect(driver.executeNow!({ sql: 'SELECT 1' })?.rows).toEqual([{ x: 1 }])
    expect(driver.executeNow!({ sql: 'SELECT 1' })?.rows).toEqual([{ x: 1 }])
    // Three reads since the last turn: the next waits for one, by way of execute.
    expect(driver.executeNow!({ sql: 'SELECT 1' })).toBeUndefined()
    expect(binding.turnedAt).toEqual([false, false])
    await guardDriver(driver).execute({ sql: 'SELECT 1' })
    expect(binding.turnedAt).toEqual([false, false, true])
    await driver.close()
  })

  test('a busy statement is left to execute, which retries it; other errors are thrown mapped', async () => {
    let busy = 1
    const driver = fakeDriver((sql) => ({
      reader: false,
      readonly: false,
      all: () => [],
      run: () => {
        if (sql === 'INSERT busy' && busy-- > 0)
          throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })
        if (sql === 'INSERT dup')
          throw Object.assign(new Error('UNIQUE constraint failed'), {
            code: 'SQLITE_CONSTRAINT_UNIQUE',
          })
        return { changes: 1, lastInsertRowid: 0 }
      },
    }))
    await driver.execute({ sql: 'INSERT ok' })
    expect(driver.executeNow!({ sql: 'INSERT busy' })).toBeUndefined()
    expect((await driver.execute({ sql: 'INSERT busy' })).changes).toBe(1)
    expect(() => driver.executeNow!({ sql: 'INSERT dup' })).toThrow(
      expect.objectContaining({ code: 'CONSTRAINT_UNIQUE' }),
    )
    await driver.close()
  })
})

describe('createSyncDriver after a failed ROLLBACK', () => {
  test('the reopened connection prepares every statement again, whatever its row shape', async () => {
    let opened = 0
    const connections: { closed: boolean; inTransaction: boolean }[] = []
    const open = (): SyncConnection => {
      const state = { closed: false, inTransaction: false }
      const id = ++opened
      connections.push(state)
      const statement = (sql: string, shape: 'objects' | 'arrays' | 'pluck' = 'objects') => {
        const reader = /^\s*SELECT/i.test(sql)
        const row = (x: bigint) => (shape === 'pluck' ? x : shape === 'arrays' ? [x] : { x })
        const step = () => {
          if (state.closed) throw new Error(`statement of closed connection ${id}`)
          if (sql === 'BEGIN IMMEDIATE') state.inTransaction = true
          if (sql === 'COMMIT') state.inTransaction = false
          // The first connection cannot roll back: the kit must close it.
          if (sql === 'ROLLBACK' && id === 1) throw new Error('cannot roll back')
          if (sql === 'ROLLBACK') state.inTransaction = false
        }
        return {
          reader,
          readonly: reader,
          all: () => {
            step()
            return reader ? [row(BigInt(id))] : []
          },
          run: () => {
            step()
            return { changes: 0, lastInsertRowid: 0 }
          },
        }
      }
      return {
        file: undefined,
        readonly: false,
        isOpen: true,
        get inTransaction() {
          return state.inTransaction
        },
        prepare: (sql) => statement(sql),
        prepareArrays: (sql) => statement(sql, 'arrays'),
        preparePluck: (sql) => statement(sql, 'pluck'),
        exec() {},
        close() {
          state.closed = true
        },
      }
    }
    const driver = createSyncDriver({ name: 'fake', memory: true, reopenable: true, open })
    const read = { sql: 'SELECT x' }
    for (const shape of [{}, { arrays: true }, { pluck: true }])
      await driver.execute({ ...read, ...shape })
    await expect(
      driver.transaction(async () => {
        throw new Error('undo')
      }),
    ).rejects.toThrow('undo')
    expect(connections[0]!.closed).toBe(true)
    // Each shape reads on the new connection, none through a statement of the closed one.
    expect((await driver.execute(read)).rows).toEqual([{ x: 2 }])
    expect((await driver.execute({ ...read, arrays: true })).rows).toEqual([[2]])
    expect((await driver.execute({ ...read, pluck: true })).rows).toEqual([2])
    await driver.close()
  })
})
