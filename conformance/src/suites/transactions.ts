import {
  type GuardedDriver,
  guardDriver,
  isAgentFsError,
  readThen,
  type Transaction,
} from '@agentfs/core'
import { expect } from 'vitest'
import type { SuiteContext } from './context.js'

const tick = (ms = 5) => new Promise((resolve) => setTimeout(resolve, ms))

async function table(db: GuardedDriver) {
  await db.execute({ sql: 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)' })
}
async function values(db: GuardedDriver): Promise<string[]> {
  const result = await db.execute<{ v: string }>({ sql: 'SELECT v FROM t ORDER BY id' })
  return result.rows.map((r) => r.v)
}

/** Transactions: commit, rollback, savepoints, serialisation of concurrent callers, close. */
export function transactionsSuite({ resources, it }: SuiteContext): void {
  const open = async () => guardDriver(await resources().driver())

  it(
    'transactions/read-then',
    'readThen: the read, then the statement its result asks for; a failing second statement is reported and rolled back, the read stands',
    async () => {
      const db = await open()
      await table(db)
      await db.execute({ sql: "INSERT INTO t (id, v) VALUES (1, 'a')" })
      const read = { sql: 'SELECT v FROM t WHERE id = ?', params: [1], first: true }
      // The second statement, built from the read's row.
      const wrote = await readThen<{ v: string }>(db, read, (r) => ({
        sql: 'INSERT INTO t (id, v) VALUES (2, ?)',
        params: [`${r.rows[0]!.v}+`],
      }))
      expect(wrote).toMatchObject({ followed: true, result: { rows: [{ v: 'a' }] } })
      expect(await values(db)).toEqual(['a', 'a+'])
      // Nothing asked for: nothing written.
      const quiet = await readThen(db, read, () => undefined)
      expect(quiet.followed).toBe(false)
      expect(quiet.followError).toBeUndefined()
      // A second statement that fails (a duplicate key): returned, not thrown; nothing of it
      // stays, and the connection goes on (no transaction left open).
      const failed = await readThen<{ v: string }>(db, read, () => ({
        sql: "INSERT INTO t (id, v) VALUES (1, 'dup')",
      }))
      expect(failed.followed).toBe(false)
      expect(failed.result.rows).toEqual([{ v: 'a' }])
      expect(isAgentFsError(failed.followError, 'CONSTRAINT_UNIQUE')).toBe(true)
      await db.execute({ sql: "INSERT INTO t (id, v) VALUES (3, 'c')" })
      expect(await values(db)).toEqual(['a', 'a+', 'c'])
      // Inside a transaction it runs there, and rolls back with it.
      await expect(
        db.transaction(async (tx) => {
          const inner = await readThen(tx, read, () => ({
            sql: "INSERT INTO t (id, v) VALUES (4, 'd')",
          }))
          expect(inner.followed).toBe(true)
          throw new Error('undo')
        }),
      ).rejects.toThrow('undo')
      expect(await values(db)).toEqual(['a', 'a+', 'c'])
      // A read that fails rejects, and the connection goes on.
      await expect(readThen(db, { sql: 'SELECT nope FROM t' }, () => undefined)).rejects.toSatisfy(
        (error: unknown) => isAgentFsError(error),
      )
      expect(await values(db)).toEqual(['a', 'a+', 'c'])
    },
  )

  it(
    'transactions/execute-now',
    'executeNow: a statement run at once gives what execute gives, changes what execute changes, throws what it rejects with; in a transaction it is part of it',
    async (skip) => {
      const driver = await resources().driver()
      await driver.execute({ sql: 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)' })
      const now = driver.executeNow?.bind(driver)
      if (now === undefined) return skip('the driver has no executeNow (it is optional)')
      const read = { sql: 'SELECT id, v FROM t ORDER BY id' }
      // A free connection runs it now; undefined would only mean "use execute".
      const wrote = now({ sql: "INSERT INTO t (id, v) VALUES (1, 'a')" })
      if (wrote === undefined)
        await driver.execute({ sql: "INSERT INTO t (id, v) VALUES (1, 'a')" })
      else expect(wrote.changes).toBe(1)
      const got = now(read) ?? (await driver.execute(read))
      expect(got.rows).toEqual((await driver.execute(read)).rows)
      expect(got.rows).toEqual([{ id: 1, v: 'a' }])
      const first = now({ ...read, first: true, arrays: true })
      if (first !== undefined && driver.capabilities.arrayRows === true)
        expect(first.rows[0]).toEqual([1, 'a'])
      // An engine error is thrown, mapped, and the connection goes on.
      expect(() => now({ sql: "INSERT INTO t (id, v) VALUES (1, 'dup')" })).toThrow(
        expect.objectContaining({ code: 'CONSTRAINT_UNIQUE' }),
      )
      // Inside a transaction: seen by the transaction, rolled back with it.
      await expect(
        driver.transaction(async (tx) => {
          const inside = tx.executeNow?.({ sql: "INSERT INTO t (id, v) VALUES (2, 'b')" })
          if (inside === undefined)
            await tx.execute({ sql: "INSERT INTO t (id, v) VALUES (2, 'b')" })
          expect((await tx.execute(read)).rows).toHaveLength(2)
          throw new Error('undo')
        }),
      ).rejects.toThrow('undo')
      expect((await driver.execute(read)).rows).toEqual([{ id: 1, v: 'a' }])
      // Through the guarded handle, which uses it, the same answers.
      const db = guardDriver(driver)
      expect((await db.execute(read)).rows).toEqual([{ id: 1, v: 'a' }])
      await expect(
        db.execute({ sql: "INSERT INTO t (id, v) VALUES (1, 'dup')" }),
      ).rejects.toSatisfy((error: unknown) => isAgentFsError(error, 'CONSTRAINT_UNIQUE'))
    },
  )

  it('transactions/commit', 'a resolved callback commits every statement', async () => {
    const db = await open()
    await table(db)
    const result = await db.transaction(async (tx) => {
      await tx.execute({ sql: "INSERT INTO t (v) VALUES ('a')" })
      await tx.execute({ sql: "INSERT INTO t (v) VALUES ('b')" })
      return 'done'
    })
    expect(result).toBe('done')
    expect(await values(db)).toEqual(['a', 'b'])
  })

  it(
    'transactions/rollback',
    'a rejected callback rolls back and rethrows the same error',
    async () => {
      const db = await open()
      await table(db)
      const boom = new Error('boom')
      const caught = await db
        .transaction(async (tx) => {
          await tx.execute({ sql: "INSERT INTO t (v) VALUES ('a')" })
          await tick()
          throw boom
        })
        .catch((e: unknown) => e)
      expect(caught).toBe(boom)
      expect(await values(db)).toEqual([])
    },
  )

  it(
    'transactions/sync-callback',
    'a callback that throws before returning a promise rolls back, rejects with its error and frees the connection; one that returns a value commits',
    async () => {
      const db = await open()
      await table(db)
      const boom = new Error('boom')
      const pending = db.transaction(((tx: Transaction) => {
        tx.executeNow?.({ sql: "INSERT INTO t (v) VALUES ('a')" })
        throw boom
      }) as unknown as (tx: Transaction) => Promise<void>)
      // A rejection, not a throw at the call: the caller's await sees it.
      expect(pending).toBeInstanceOf(Promise)
      expect(await pending.catch((e: unknown) => e)).toBe(boom)
      expect(await values(db)).toEqual([])
      const plain = await db.transaction(((tx: Transaction) => {
        const ran = tx.executeNow?.({ sql: "INSERT INTO t (v) VALUES ('b')" })
        return ran === undefined
          ? tx.execute({ sql: "INSERT INTO t (v) VALUES ('b')" }).then(() => 7)
          : 7
      }) as unknown as (tx: Transaction) => Promise<number>)
      expect(plain).toBe(7)
      expect(await values(db)).toEqual(['b'])
      // The connection is free: a transaction after both commits.
      await db.transaction((tx) => tx.execute({ sql: "INSERT INTO t (v) VALUES ('c')" }))
      expect(await values(db)).toEqual(['b', 'c'])
    },
  )

  it(
    'transactions/engine-error',
    'an engine error inside a transaction rolls back and is mapped',
    async () => {
      const db = await open()
      await table(db)
      const caught = await db
        .transaction(async (tx) => {
          await tx.execute({ sql: "INSERT INTO t (id, v) VALUES (1, 'a')" })
          await tx.execute({ sql: "INSERT INTO t (id, v) VALUES (1, 'dup')" })
        })
        .catch((e: unknown) => e)
      expect(isAgentFsError(caught, 'CONSTRAINT_UNIQUE')).toBe(true)
      expect(await values(db)).toEqual([])
    },
  )

  it(
    'transactions/savepoint',
    'nested transactions are savepoints: inner failure keeps outer work',
    async () => {
      const db = await open()
      await table(db)
      await db.transaction(async (tx) => {
        await tx.execute({ sql: "INSERT INTO t (v) VALUES ('outer')" })
        await tx
          .transaction(async (inner) => {
            await inner.execute({ sql: "INSERT INTO t (v) VALUES ('inner')" })
            throw new Error('inner fails')
          })
          .catch(() => undefined)
        await tx.transaction(async (inner) => {
          await inner.execute({ sql: "INSERT INTO t (v) VALUES ('inner-ok')" })
        })
      })
      expect(await values(db)).toEqual(['outer', 'inner-ok'])
    },
  )

  it(
    'transactions/no-interleaving',
    'a call made while a transaction awaits never joins it',
    async () => {
      const db = await open()
      await table(db)
      const failing = db
        .transaction(async (tx) => {
          await tx.execute({ sql: "INSERT INTO t (v) VALUES ('in-tx')" })
          await tick(20)
          throw new Error('roll back')
        })
        .catch(() => 'rolled back')
      // Issued while the transaction above is open and waiting on a timer.
      await tick(1)
      const outside = db.execute({ sql: "INSERT INTO t (v) VALUES ('outside')" })
      expect(await failing).toBe('rolled back')
      await outside
      expect(await values(db)).toEqual(['outside'])
    },
  )

  it(
    'transactions/serialised',
    'concurrent read-modify-write transactions lose no update',
    async () => {
      const db = await open()
      await db.execute({ sql: 'CREATE TABLE counter (n INTEGER NOT NULL)' })
      await db.execute({ sql: 'INSERT INTO counter (n) VALUES (0)' })
      await Promise.all(
        Array.from({ length: 20 }, () =>
          db.transaction(async (tx) => {
            const { rows } = await tx.execute<{ n: number }>({ sql: 'SELECT n FROM counter' })
            await tick(1)
            await tx.execute({ sql: 'UPDATE counter SET n = ?', params: [rows[0]!.n + 1] })
          }),
        ),
      )
      const { rows } = await db.execute<{ n: number }>({ sql: 'SELECT n FROM counter' })
      expect(rows[0]!.n).toBe(20)
    },
  )

  it(
    'transactions/stale-handle',
    'a transaction handle used after its transaction ends is refused',
    async () => {
      const db = await open()
      await table(db)
      let leaked: { execute: GuardedDriver['execute'] } | undefined
      await db.transaction(async (tx) => {
        leaked = tx
      })
      const error = await leaked!.execute({ sql: 'SELECT 1' }).catch((e: unknown) => e)
      expect(isAgentFsError(error, 'MISUSE')).toBe(true)
    },
  )

  it(
    'transactions/close',
    'close waits for queued calls, is idempotent, and later calls fail with CLOSED',
    async () => {
      const db = await open()
      await table(db)
      const pending = db.transaction(async (tx) => {
        await tick(10)
        await tx.execute({ sql: "INSERT INTO t (v) VALUES ('before-close')" })
      })
      const closing = db.close()
      await pending
      await closing
      await db.close()
      const error = await db.execute({ sql: 'SELECT 1' }).catch((e: unknown) => e)
      expect(isAgentFsError(error, 'CLOSED')).toBe(true)
      const txError = await db.transaction(async () => 1).catch((e: unknown) => e)
      expect(isAgentFsError(txError, 'CLOSED')).toBe(true)
      expect(db.closed).toBe(true)
    },
  )

  it(
    'transactions/script',
    'executeScript runs every statement and stops at the first failure',
    async () => {
      const db = await open()
      await db.executeScript(
        'CREATE TABLE a (x); INSERT INTO a VALUES (1); INSERT INTO a VALUES (2);',
      )
      const { rows } = await db.execute<{ n: number }>({ sql: 'SELECT COUNT(*) AS n FROM a' })
      expect(rows[0]!.n).toBe(2)
      const error = await db
        .executeScript('CREATE TABLE b (x); INSERT INTO missing VALUES (1); CREATE TABLE c (x);')
        .catch((e: unknown) => e)
      expect(isAgentFsError(error, 'SQL')).toBe(true)
      const tables = await db.execute<{ name: string }>({
        sql: "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name",
      })
      expect(tables.rows.map((r) => r.name)).not.toContain('c')
    },
  )
}
