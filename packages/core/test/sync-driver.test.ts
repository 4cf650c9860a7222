import { describe, expect, test } from 'vitest'
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
