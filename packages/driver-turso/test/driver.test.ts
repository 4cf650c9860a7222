import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fullTextSearch, guardDriver, isAgentFsError, recursiveQueries } from '@agentfs/core'
import { connect } from '@tursodatabase/database'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { tursoAsyncDriver, tursoDriver } from '../src/index.js'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-turso-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('tursoDriver', () => {
  test('a local file: WAL, no blocking busy wait, and no WITH RECURSIVE or FTS5 in its capabilities', async () => {
    const db = guardDriver(tursoDriver({ path: join(dir, 'a.db') }))
    const pragma = async (name: string) =>
      Object.values((await db.execute({ sql: `PRAGMA ${name}` })).rows[0]!)[0]
    expect(await pragma('journal_mode')).toBe('wal')
    expect(await pragma('synchronous')).toBe(1)
    expect(db.capabilities).toEqual({
      concurrentTransactions: false,
      inMemory: false,
      remote: false,
      recursiveQueries: false,
      fullTextSearch: false,
      snapshotTokens: false,
      // The kit builds array rows from the engine's objects.
      arrayRows: true,
      pluckRows: true,
    })
    expect(recursiveQueries(db)).toBe(false)
    expect(fullTextSearch(db)).toBe(false)
    await db.close()
  })

  test('engine errors get their SQLite meaning and one line without the engine prefixes', async () => {
    const db = guardDriver(tursoDriver({ path: ':memory:' }))
    await db.execute({ sql: 'CREATE TABLE u (k TEXT PRIMARY KEY NOT NULL, CHECK (length(k) < 5))' })
    await db.execute({ sql: "INSERT INTO u VALUES ('x')" })
    const failure = (sql: string) =>
      db.execute({ sql }).then(
        () => new Error('no error'),
        (e: unknown) => e as Error,
      )
    const unique = await failure("INSERT INTO u VALUES ('x')")
    expect(isAgentFsError(unique, 'CONSTRAINT_UNIQUE')).toBe(true)
    expect(unique.message).toMatch(/^UNIQUE constraint failed: u\.k \[sql: /)
    expect(
      isAgentFsError(await failure('INSERT INTO u VALUES (NULL)'), 'CONSTRAINT_NOT_NULL'),
    ).toBe(true)
    expect(isAgentFsError(await failure("INSERT INTO u VALUES ('toolong')"), 'CONSTRAINT')).toBe(
      true,
    )
    const syntax = await failure('SELEC 1')
    expect(isAgentFsError(syntax, 'SQL')).toBe(true)
    expect(syntax.message).not.toMatch(/\n/)
    expect(isAgentFsError(await failure('SELECT * FROM nope'), 'SQL')).toBe(true)
    await db.close()
  })

  test('a table-valued pragma function, run again and again, does not leave the next schema change to abort the process', async () => {
    // With the statement kept prepared, the engine (0.7.2) panics on the next CREATE TABLE and
    // the whole process aborts; the driver prepares and closes such statements per run.
    const db = guardDriver(tursoDriver({ path: join(dir, 'b.db') }))
    await db.execute({ sql: 'CREATE TABLE t (a, b)' })
    for (let i = 0; i < 3; i++) {
      const { rows } = await db.execute({ sql: "SELECT name FROM pragma_table_info('t')" })
      expect(rows).toEqual([{ name: 'a' }, { name: 'b' }])
      await db.execute({ sql: `CREATE TABLE x${i} (a)` })
    }
    await db.transaction(async (tx) => {
      await tx.execute({ sql: "SELECT name FROM pragma_table_info('t') WHERE name = 'b'" })
      await tx.execute({ sql: 'CREATE TABLE y (a)' })
    })
    await db.close()
  })

  test('a table-valued pragma function outside a transaction does not leave later writes undoable', async () => {
    // Run bare, such a statement leaves the engine (0.7.2) in a state where the next
    // autocommitted INSERT is undone by a later ROLLBACK; the driver runs it in a transaction.
    const db = guardDriver(tursoDriver({ path: join(dir, 'p.db') }))
    await db.execute({ sql: 'CREATE TABLE kv (k TEXT PRIMARY KEY)' })
    await db.execute({ sql: "SELECT name FROM pragma_table_info('kv') WHERE name = 'absent'" })
    await db.execute({ sql: "INSERT INTO kv VALUES ('kept')" })
    await db
      .transaction(async (tx) => {
        await tx.execute({ sql: "UPDATE kv SET k = 'x' WHERE k = 'none'" })
        throw new Error('roll back this transaction only')
      })
      .catch(() => undefined)
    expect((await db.execute({ sql: 'SELECT k FROM kv' })).rows).toEqual([{ k: 'kept' }])
    await db.close()
  })

  test('integers beyond 2^53 and blobs round-trip; a second connection waits for the write lock', async () => {
    const path = join(dir, 'c.db')
    const a = guardDriver(tursoDriver({ path, busyTimeoutMs: 2000 }))
    const b = guardDriver(tursoDriver({ path, busyTimeoutMs: 2000 }))
    await a.execute({ sql: 'CREATE TABLE t (n INTEGER, d BLOB)' })
    await a.execute({
      sql: 'INSERT INTO t VALUES (?, ?)',
      params: [2n ** 60n, new Uint8Array([0, 255])],
    })
    const { rows } = await b.execute({ sql: 'SELECT n, d FROM t' })
    expect(rows[0]!.n).toBe(2n ** 60n)
    expect([...(rows[0]!.d as Uint8Array)]).toEqual([0, 255])
    let release!: () => void
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const first = a.transaction(async (tx) => {
      await tx.execute({ sql: 'INSERT INTO t VALUES (1, NULL)' })
      await held
    })
    const second = b.execute({ sql: 'INSERT INTO t VALUES (2, NULL)' })
    setTimeout(release, 100)
    await first
    await second
    expect((await a.execute({ sql: 'SELECT count(*) AS c FROM t' })).rows[0]!.c).toBe(3)
    await a.close()
    await b.close()
  })

  test('long BLOBs (bound as hex) and short ones round-trip byte for byte, mixed in one statement', async () => {
    const db = guardDriver(tursoDriver({ path: ':memory:' }))
    await db.execute({ sql: 'CREATE TABLE b (k INTEGER PRIMARY KEY, label TEXT, d BLOB)' })
    const long = new Uint8Array(4096).map((_, i) => (i * 7) & 255)
    const view = new Uint8Array(long.buffer, 100, 1000) // a view into a larger buffer
    await db.execute({
      sql: "INSERT INTO b VALUES (?, '?', ?), (?, ?, ?), (?, ?, ?)",
      params: [1, long, 2, 'two', new Uint8Array([1, 2]), 3, '3', view],
    })
    await db.execute({
      sql: 'INSERT INTO b VALUES (?, ?, ?)',
      params: [4, 'empty', new Uint8Array(0)],
    })
    const { rows } = await db.execute({
      sql: 'SELECT k, label, typeof(d) AS t, d FROM b ORDER BY k',
    })
    expect(rows.map((r) => [r.k, r.label, r.t])).toEqual([
      [1, '?', 'blob'],
      [2, 'two', 'blob'],
      [3, '3', 'blob'],
      [4, 'empty', 'blob'],
    ])
    expect(Buffer.from(rows[0]!.d as Uint8Array).equals(Buffer.from(long))).toBe(true)
    expect([...(rows[1]!.d as Uint8Array)]).toEqual([1, 2])
    expect(Buffer.from(rows[2]!.d as Uint8Array).equals(Buffer.from(view))).toBe(true)
    expect((rows[3]!.d as Uint8Array).byteLength).toBe(0)
    await db.close()
  })

  test('a file another process holds is refused at once with CANT_OPEN, saying why', async () => {
    const path = join(dir, 'held.db')
    const holder = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { Database } from '@tursodatabase/database/compat'
const db = new Database(${JSON.stringify(path)}); db.exec('CREATE TABLE t (a)')
console.log('ready'); setTimeout(() => db.close(), 10000)`,
      ],
      { cwd: fileURLToPath(new URL('..', import.meta.url)), stdio: ['ignore', 'pipe', 'inherit'] },
    )
    try {
      await new Promise<void>((resolve, reject) => {
        holder.once('exit', (code) => reject(new Error(`the holder exited (${code})`)))
        holder.stdout!.once('data', () => resolve())
      })
      const db = guardDriver(tursoDriver({ path, busyTimeoutMs: 5000 }))
      const started = Date.now()
      const error = await db.execute({ sql: 'SELECT 1' }).then(
        () => new Error('opened'),
        (e: unknown) => e as Error,
      )
      expect(isAgentFsError(error, 'CANT_OPEN')).toBe(true)
      expect(error.message).toMatch(/is open in another process.*one process per file/)
      expect(Date.now() - started).toBeLessThan(2000)
      await db.close()
    } finally {
      holder.kill()
    }
  })

  test('needs exactly one of path and database', () => {
    expect(() => tursoDriver({})).toThrow(/exactly one of `path` and `database`/)
  })
})

describe('parameter counts (the engine would bind a missing one as NULL, silently)', () => {
  test.each([
    ['tursoDriver', () => tursoDriver({ path: ':memory:' })],
    [
      'tursoAsyncDriver',
      async () => tursoAsyncDriver({ database: await connect(join(dir, 'async.db')) }),
    ],
  ])(
    '%s refuses a count that does not match the placeholders, before it runs',
    async (_n, make) => {
      const db = guardDriver(await make())
      await db.executeScript('CREATE TABLE t (a NOT NULL, b)')
      for (const params of [[1], [1, 2, 3]])
        await expect(
          db.execute({ sql: 'INSERT INTO t (a, b) VALUES (?, ?)', params }),
        ).rejects.toMatchObject({ code: 'MISUSE' })
      await db.execute({ sql: "INSERT INTO t (a, b) VALUES (?, 'it''s ?')", params: [1] })
      await db.execute({ sql: 'INSERT INTO t (a, b) VALUES (?1, ?1)', params: [2] })
      expect((await db.execute({ sql: 'SELECT count(*) AS n FROM t' })).rows).toEqual([{ n: 2 }])
      await db.close()
    },
  )
})
