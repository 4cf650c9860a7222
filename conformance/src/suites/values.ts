import { guardDriver, isAgentFsError } from '@agentfs/core'
import { expect } from 'vitest'
import type { SuiteContext } from './context.js'

/** Value round-trips: every SQLite storage class maps to the documented JavaScript type. */
export function valuesSuite({ resources, it }: SuiteContext): void {
  const roundTrip = async (value: unknown) => {
    const db = guardDriver(await resources().driver())
    const result = await db.execute<{ v: unknown; t: string }>({
      sql: 'SELECT ? AS v, typeof(?) AS t',
      params: [value as never, value as never],
    })
    return result.rows[0]!
  }

  it('values/integers', 'safe integers come back as numbers', async () => {
    for (const value of [0, 1, -1, 2 ** 31, 2 ** 53 - 1, -(2 ** 53 - 1)]) {
      const row = await roundTrip(value)
      expect(row).toEqual({ v: value, t: 'integer' })
    }
  })

  it('values/bigints', 'integers beyond 2^53 come back as bigints', async () => {
    for (const value of [
      2n ** 53n,
      2n ** 53n + 1n,
      -(2n ** 53n) - 1n,
      2n ** 63n - 1n,
      -(2n ** 63n),
    ]) {
      const row = await roundTrip(value)
      expect(row).toEqual({ v: value, t: 'integer' })
    }
    // A small bigint is narrowed back to a number.
    expect(await roundTrip(5n)).toEqual({ v: 5, t: 'integer' })
  })

  it(
    'values/bigints-among-rows',
    'a large integer in a later row is exact, the rest numbers',
    async () => {
      const db = guardDriver(await resources().driver())
      const big = 2n ** 53n + 1n
      const { rows } = await db.execute<{ v: unknown }>({
        sql: 'WITH t(n, v) AS (VALUES (1, 7), (2, ?), (3, -(?)), (4, 2.5)) SELECT v FROM t ORDER BY n',
        params: [big, big],
      })
      expect(rows.map((row) => row.v)).toEqual([7, big, -big, 2.5])
    },
  )

  it('values/array-rows', 'a statement with `arrays` returns rows as value arrays', async () => {
    const db = guardDriver(await resources().driver())
    const big = 2n ** 53n + 1n
    const sql = "SELECT 1 AS a, 'x' AS b, ? AS c, 2.5 AS d, x'00ff' AS e"
    const arrays = await db.execute({ sql, params: [big], arrays: true })
    expect(arrays.rows).toHaveLength(1)
    const [row] = arrays.rows as unknown as unknown[][]
    expect(row!.slice(0, 4)).toEqual([1, 'x', big, 2.5])
    expect([...(row![4] as Uint8Array)]).toEqual([0, 255])
    // The same text without `arrays` still gives objects (and the other way round).
    const objects = await db.execute({ sql, params: [5] })
    expect(objects.rows[0]).toMatchObject({ a: 1, b: 'x', c: 5, d: 2.5 })
    const again = await db.execute({ sql, params: [6], arrays: true })
    expect((again.rows[0] as unknown as unknown[]).slice(0, 4)).toEqual([1, 'x', 6, 2.5])
    // Inside a transaction, and for several rows.
    const inTx = await db.transaction((tx) =>
      tx.execute({
        sql: 'WITH t(n) AS (VALUES (1), (2), (3)) SELECT n, n * 2 AS twice FROM t ORDER BY n',
        arrays: true,
      }),
    )
    expect(inTx.rows).toEqual([
      [1, 2],
      [2, 4],
      [3, 6],
    ])
  })

  it(
    'values/first-row',
    'a statement with `first` gives its first row exactly (a large integer too), none when there is none',
    async () => {
      const db = guardDriver(await resources().driver())
      const big = 2n ** 53n + 1n
      const sql = 'WITH t(n, v) AS (VALUES (1, ?), (2, 7), (3, 8)) SELECT n, v FROM t ORDER BY n'
      for (const arrays of [false, true]) {
        const { rows } = await db.execute({ sql, params: [big], first: true, arrays })
        expect(rows[0]).toEqual(arrays ? [1, big] : { n: 1, v: big })
        const small = await db.execute({ sql, params: [5], first: true, arrays })
        expect(small.rows[0]).toEqual(arrays ? [1, 5] : { n: 1, v: 5 })
        const none = await db.execute({ sql: `${sql} LIMIT 0`, params: [5], first: true, arrays })
        expect(none.rows).toEqual([])
      }
      // Inside a transaction, and on a write, which always runs whole.
      await db.execute({ sql: 'CREATE TABLE IF NOT EXISTS first_t (k INTEGER PRIMARY KEY)' })
      const inTx = await db.transaction(async (tx) => {
        const inserted = await tx.execute({
          sql: 'INSERT INTO first_t (k) VALUES (1), (2) RETURNING k',
          first: true,
        })
        return {
          inserted,
          read: await tx.execute({ sql: 'SELECT k FROM first_t ORDER BY k', first: true }),
        }
      })
      expect(inTx.inserted.rows[0]).toEqual({ k: 1 })
      expect(inTx.read.rows[0]).toEqual({ k: 1 })
      expect((await db.execute({ sql: 'SELECT COUNT(*) AS n FROM first_t' })).rows[0]).toEqual({
        n: 2,
      })
    },
  )

  it(
    'values/pluck',
    "a statement with `pluck` gives its one column's values: every type mapped as in rows, large integers exact, first or all, in and out of a transaction",
    async () => {
      const db = guardDriver(await resources().driver())
      const big = 2n ** 53n + 1n
      const blob = new Uint8Array([0, 1, 254, 255])
      const sql =
        'WITH t(n, v) AS (VALUES (1, ?), (2, 7), (3, 1.5), (4, ?), (5, NULL), (6, ?)) SELECT v FROM t ORDER BY n'
      const params = [big, 'text', blob]
      // Blobs may come as a Uint8Array subclass (a Buffer): compared by their bytes.
      const bytes = (rows: unknown[]) => rows.map((v) => (v instanceof Uint8Array ? [...v] : v))
      const all = await db.execute({ sql, params, pluck: true })
      expect(bytes(all.rows)).toEqual([big, 7, 1.5, 'text', null, [...blob]])
      expect(all.rows[5]).toBeInstanceOf(Uint8Array)
      const small = await db.execute({ sql, params: [5, 'text', blob], pluck: true })
      expect(bytes(small.rows)).toEqual([5, 7, 1.5, 'text', null, [...blob]])
      expect((await db.execute({ sql, params, pluck: true, first: true })).rows[0]).toBe(big)
      expect((await db.execute({ sql: `${sql} LIMIT 0`, params, pluck: true })).rows).toEqual([])
      const none = await db.execute({ sql: `${sql} LIMIT 0`, params, pluck: true, first: true })
      expect(none.rows).toEqual([])
      // A NULL first value is a row, not none.
      const nul = await db.execute({ sql: 'SELECT NULL AS v', pluck: true, first: true })
      expect(nul.rows).toEqual([null])
      // The same SQL without `pluck` still gives objects (a statement per row shape).
      expect((await db.execute({ sql, params, first: true })).rows[0]).toEqual({ v: big })
      const inTx = await db.transaction((tx) =>
        tx.execute({ sql, params: [5, 'x', blob], pluck: true }),
      )
      expect(bytes(inTx.rows)).toEqual([5, 7, 1.5, 'x', null, [...blob]])
    },
  )

  it('values/reals', 'REAL values keep full precision', async () => {
    for (const value of [1.5, -2.25, 0.1, 1e308, 5e-324, Math.PI]) {
      const row = await roundTrip(value)
      expect(row).toEqual({ v: value, t: 'real' })
    }
  })

  it('values/text', 'text round-trips unicode, and empty text is not NULL', async () => {
    for (const value of [
      '',
      'héllo wörld',
      '日本語テキスト',
      'emoji 😀👍🏽',
      'tab\tnew\nline',
      'quote \' and " and \\',
    ]) {
      const row = await roundTrip(value)
      expect(row).toEqual({ v: value, t: 'text' })
    }
    expect(await roundTrip(null)).toEqual({ v: null, t: 'null' })
  })

  it('values/blobs', 'blobs round-trip; an empty blob is a blob, not NULL', async () => {
    const empty = await roundTrip(new Uint8Array(0))
    expect(empty.t).toBe('blob')
    expect(empty.v).toBeInstanceOf(Uint8Array)
    expect((empty.v as Uint8Array).byteLength).toBe(0)

    const all = new Uint8Array(256).map((_, i) => i)
    const row = await roundTrip(all)
    expect(row.t).toBe('blob')
    expect(Buffer.from(row.v as Uint8Array).equals(Buffer.from(all))).toBe(true)

    // A view binds only its own bytes.
    const backing = new Uint8Array([9, 9, 1, 2, 3, 9])
    const view = await roundTrip(backing.subarray(2, 5))
    expect([...(view.v as Uint8Array)]).toEqual([1, 2, 3])
  })

  it('values/large-blob', 'an 8 MiB blob round-trips through a table', async () => {
    const db = guardDriver(await resources().driver())
    const big = new Uint8Array(8 * 1024 * 1024)
    for (let i = 0; i < big.length; i += 4096) big[i] = (i / 4096) & 255
    await db.execute({ sql: 'CREATE TABLE t (b BLOB)' })
    await db.execute({ sql: 'INSERT INTO t (b) VALUES (?)', params: [big] })
    const result = await db.execute<{ b: Uint8Array; n: number }>({
      sql: 'SELECT b, length(b) AS n FROM t',
    })
    expect(result.rows[0]!.n).toBe(big.length)
    expect(Buffer.from(result.rows[0]!.b).equals(Buffer.from(big))).toBe(true)
  })

  it('values/changes', 'changes, lastInsertRowid and RETURNING are reported', async () => {
    const db = guardDriver(await resources().driver())
    await db.execute({ sql: 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)' })
    const insert = await db.execute({
      sql: 'INSERT INTO t (v) VALUES (?), (?), (?)',
      params: ['a', 'b', 'c'],
    })
    expect(insert.changes).toBe(3)
    expect(insert.lastInsertRowid).toBe(3n)
    const update = await db.execute({ sql: "UPDATE t SET v = 'x' WHERE id >= 2" })
    expect(update.changes).toBe(2)
    const returning = await db.execute<{ id: number }>({
      sql: "INSERT INTO t (v) VALUES ('d') RETURNING id",
    })
    expect(returning.rows).toEqual([{ id: 4 }])
    const select = await db.execute({ sql: 'SELECT * FROM t' })
    expect(select.changes).toBe(0)
  })

  it('values/invalid-params', 'undefined and other unbindable parameters are refused', async () => {
    const db = guardDriver(await resources().driver())
    for (const bad of [undefined, true, {}, [1]]) {
      const error = await db.execute({ sql: 'SELECT ?', params: [bad as never] }).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(isAgentFsError(error, 'INVALID_ARGUMENT')).toBe(true)
    }
  })
}
