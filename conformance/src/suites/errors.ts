import { type ErrorCode, guardDriver, isAgentFsError } from '@agentfs/core'
import { expect } from 'vitest'
import type { SuiteContext } from './context.js'

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (error === undefined) return undefined
  expect(isAgentFsError(error), `expected an AgentFsError, got ${String(error)}`).toBe(true)
  return (error as { code: ErrorCode }).code
}

/** Native errors map to one code union, whichever engine raised them. */
export function errorsSuite({ resources, it }: SuiteContext): void {
  const open = async () => guardDriver(await resources().driver())

  it('errors/constraints', 'constraint violations map to their codes', async () => {
    const db = await open()
    await db.executeScript(`
      CREATE TABLE parent (id INTEGER PRIMARY KEY);
      CREATE TABLE t (id INTEGER PRIMARY KEY, u TEXT UNIQUE, n TEXT NOT NULL, c INTEGER CHECK (c > 0));
      CREATE TABLE child (pid INTEGER REFERENCES parent(id));
      INSERT INTO t (id, u, n, c) VALUES (1, 'a', 'x', 1);
    `)
    expect(
      await codeOf(db.execute({ sql: "INSERT INTO t (id, u, n, c) VALUES (2, 'a', 'x', 1)" })),
    ).toBe('CONSTRAINT_UNIQUE')
    expect(
      await codeOf(db.execute({ sql: "INSERT INTO t (id, u, n, c) VALUES (1, 'b', 'x', 1)" })),
    ).toBe('CONSTRAINT_UNIQUE')
    expect(
      await codeOf(db.execute({ sql: "INSERT INTO t (id, u, n, c) VALUES (3, 'c', NULL, 1)" })),
    ).toBe('CONSTRAINT_NOT_NULL')
    expect(
      await codeOf(db.execute({ sql: "INSERT INTO t (id, u, n, c) VALUES (4, 'd', 'x', -1)" })),
    ).toBe('CONSTRAINT')
    await db.execute({ sql: 'PRAGMA foreign_keys = ON' })
    expect(await codeOf(db.execute({ sql: 'INSERT INTO child (pid) VALUES (99)' }))).toBe(
      'CONSTRAINT_FOREIGN_KEY',
    )
  })

  it('errors/sql', 'bad SQL maps to SQL and names the statement', async () => {
    const db = await open()
    expect(await codeOf(db.execute({ sql: 'SELEC 1' }))).toBe('SQL')
    const error = await db.execute({ sql: 'SELECT * FROM no_such_table' }).catch((e: unknown) => e)
    expect(isAgentFsError(error, 'SQL')).toBe(true)
    expect((error as Error).message).toContain('no_such_table')
    expect((error as Error).cause).toBeDefined()
  })

  it('errors/full', 'a full database maps to FULL and keeps earlier data', async (skip) => {
    const db = await open()
    if (db.driver.capabilities.connectionPragmas === false)
      skip(
        'the driver runs each call on a connection of its own (a remote server stream), so a pragma set by one call does not reach the next',
      )
    await db.execute({ sql: 'CREATE TABLE t (b BLOB)' })
    await db.execute({ sql: "INSERT INTO t VALUES (x'01')" })
    const { rows } = await db.execute<{ page_count: number }>({ sql: 'PRAGMA page_count' })
    await db.execute({ sql: `PRAGMA max_page_count = ${Number(rows[0]!.page_count) + 2}` })
    const code = await codeOf(
      db.transaction(async (tx) => {
        await tx.execute({ sql: 'INSERT INTO t VALUES (?)', params: [new Uint8Array(1024 * 1024)] })
      }),
    )
    expect(code).toBe('FULL')
    const count = await db.execute<{ n: number }>({ sql: 'SELECT COUNT(*) AS n FROM t' })
    expect(count.rows[0]!.n).toBe(1)
  })

  it('errors/readonly', 'writing to a read-only connection maps to READONLY', async (skip) => {
    const db = await open()
    if (db.driver.capabilities.connectionPragmas === false)
      skip(
        'the driver runs each call on a connection of its own (a remote server stream), so a pragma set by one call does not reach the next',
      )
    await db.execute({ sql: 'CREATE TABLE t (x)' })
    await db.execute({ sql: 'PRAGMA query_only = 1' })
    expect(await codeOf(db.execute({ sql: 'INSERT INTO t VALUES (1)' }))).toBe('READONLY')
  })

  /**
   * Two connections to one file database, `a` inside a write transaction (one row inserted) until
   * `release()`; undefined for in-memory drivers (one connection per database).
   */
  async function heldLock() {
    const first = await open()
    if (first.driver.capabilities.inMemory) return undefined
    const dir = await resources().tempDir()
    const a = guardDriver(await resources().driver({ tempDir: dir, slot: 0 }))
    const b = guardDriver(await resources().driver({ tempDir: dir, slot: 0 }))
    await a.execute({ sql: 'CREATE TABLE t (x)' })
    await b.execute({ sql: 'SELECT * FROM t' })
    let release!: () => void
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const holding = a.transaction(async (tx) => {
      await tx.execute({ sql: 'INSERT INTO t VALUES (1)' })
      await held
    })
    await new Promise((resolve) => setTimeout(resolve, 20))
    return { a, b, release, holding }
  }

  it(
    'errors/busy',
    'a write lock held by another connection maps to BUSY after the timeout',
    async () => {
      const lock = await heldLock()
      if (!lock) return // one connection per database: nothing to contend
      const { b, release, holding } = lock
      const code = await codeOf(
        b.transaction(async (tx) => tx.execute({ sql: 'INSERT INTO t VALUES (2)' })),
      )
      release()
      await holding
      expect(code).toBe('BUSY')
    },
    20_000,
  )

  it(
    'errors/busy-wait',
    "waiting for another connection's write lock does not block the event loop: a lock released meanwhile lets the write through",
    async () => {
      const lock = await heldLock()
      if (!lock) return
      const { a, b, release, holding } = lock
      // The lock is released on the event loop's next turn after the write starts. A driver
      // that waits inside SQLite (a blocking busy_timeout) holds the loop until its timeout,
      // so the release comes too late and the write fails with BUSY.
      const writing = b.transaction(async (tx) => tx.execute({ sql: 'INSERT INTO t VALUES (2)' }))
      setImmediate(release)
      const code = await codeOf(writing)
      await holding
      expect(code, 'the write waited by blocking the event loop').toBeUndefined()
      const { rows } = await a.execute<{ n: number }>({ sql: 'SELECT COUNT(*) AS n FROM t' })
      expect(rows[0]!.n).toBe(2)
    },
    20_000,
  )
}
