import { describe, expect, test } from 'vitest'
import {
  type Executor,
  type QueryResult,
  runInOrder,
  type Statement,
} from '../src/driver/driver.js'

/**
 * An executor that logs how each statement ran: `now` (executeNow), `exec` (execute) or `defer`.
 * `nowFor` statements run at once, then `executeNow` answers undefined (a turn owed).
 */
function executor(options: { nowFor?: number; defer?: boolean; throwAt?: string }) {
  const log: string[] = []
  let nowLeft = options.nowFor ?? Number.POSITIVE_INFINITY
  const result = (statement: Statement): QueryResult<unknown> => {
    if (statement.sql === options.throwAt) throw new Error(`failed: ${statement.sql}`)
    return { rows: [statement.sql], changes: 1 }
  }
  const tx: Executor = {
    execute: async (statement) => {
      log.push(`exec ${statement.sql}`)
      return result(statement) as QueryResult<never>
    },
    executeNow: (statement) => {
      if (nowLeft <= 0) return undefined
      nowLeft--
      log.push(`now ${statement.sql}`)
      return result(statement) as QueryResult<never>
    },
    ...(options.defer === true && {
      defer: (statement: Statement) => {
        log.push(`defer ${statement.sql}`)
      },
    }),
  }
  return { tx, log }
}

const statements: Statement[] = [{ sql: 'a' }, { sql: 'b' }, { sql: 'c' }]

describe('runInOrder', () => {
  test('runs every statement at once and gives the last result as a value', () => {
    const { tx, log } = executor({})
    const done = runInOrder(tx, statements)
    expect(done).not.toBeInstanceOf(Promise)
    expect((done as QueryResult<unknown>).rows).toEqual(['c'])
    expect(log).toEqual(['now a', 'now b', 'now c'])
  })

  test('goes on later from the first statement that cannot run now, each run once, in order', async () => {
    for (const nowFor of [0, 1, 2]) {
      const { tx, log } = executor({ nowFor })
      const done = runInOrder(tx, statements)
      expect(done).toBeInstanceOf(Promise)
      expect((await done).rows).toEqual(['c'])
      expect(log).toEqual([
        ...['now a', 'now b'].slice(0, nowFor),
        ...['exec a', 'exec b', 'exec c'].slice(nowFor),
      ])
    }
  })

  test('queues all but the last where the executor defers (a remote transaction)', async () => {
    const { tx, log } = executor({ defer: true })
    expect((await runInOrder(tx, statements)).rows).toEqual(['c'])
    expect(log).toEqual(['defer a', 'defer b', 'exec c'])
  })

  test('a statement that fails at once throws, and nothing after it runs', () => {
    const { tx, log } = executor({ throwAt: 'b' })
    expect(() => runInOrder(tx, statements)).toThrow('failed: b')
    expect(log).toEqual(['now a', 'now b'])
  })

  test('one statement', async () => {
    expect((runInOrder(executor({}).tx, [{ sql: 'x' }]) as QueryResult<unknown>).rows).toEqual([
      'x',
    ])
    expect((await runInOrder(executor({ nowFor: 0 }).tx, [{ sql: 'x' }])).rows).toEqual(['x'])
  })
})
