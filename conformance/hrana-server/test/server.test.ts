import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { type HranaServer, parameterNames, startHranaServer } from '../src/index.js'

let dir: string
let server: HranaServer
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hrana-'))
  server = await startHranaServer({ path: join(dir, 'db.sqlite'), streamIdleMs: 500 })
})
afterEach(async () => {
  await server.close()
  await rm(dir, { recursive: true, force: true })
})

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: 'POST', body: JSON.stringify(body) })
/** A pipeline response body, loosely typed for assertions. */
// biome-ignore lint/suspicious/noExplicitAny: protocol JSON inspected field by field
type Body = any
const json = async (response: Promise<Response>): Promise<Body> => (await response).json()

describe('Hrana over WebSocket', () => {
  test('@libsql/client on a ws:// URL: statements, batches, transactions, stored SQL', async () => {
    const client = createClient({ url: server.wsUrl, intMode: 'bigint' })
    await client.execute('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE, data BLOB)')
    const inserted = await client.execute({
      sql: 'INSERT INTO t (name, data) VALUES (?, ?)',
      args: ['a', new Uint8Array([0, 255])],
    })
    expect(inserted.lastInsertRowid).toBe(1n)
    const rows = await client.execute('SELECT id, name, data FROM t')
    expect(rows.rows[0]!.id).toBe(1n)
    expect([...new Uint8Array(rows.rows[0]!.data as ArrayBuffer)]).toEqual([0, 255])
    // A batch runs through a cursor on Hrana 3.
    const results = await client.batch(
      ["INSERT INTO t (name) VALUES ('b')", 'SELECT name FROM t ORDER BY id'],
      'write',
    )
    expect(results[1]!.rows.map((r) => r.name)).toEqual(['a', 'b'])
    const tx = await client.transaction('write')
    await tx.execute("INSERT INTO t (name) VALUES ('c')")
    await tx.rollback()
    const committed = await client.transaction('write')
    await committed.batch([
      "INSERT INTO t (name) VALUES ('d')",
      "INSERT INTO t (name) VALUES ('e')",
    ])
    await committed.commit()
    expect((await client.execute('SELECT count(*) AS n FROM t')).rows[0]!.n).toBe(4n)
    const error = await client.execute("INSERT INTO t (name) VALUES ('a')").catch((e) => e)
    expect((error as { code?: string }).code).toBe('SQLITE_CONSTRAINT_UNIQUE')
    expect(server.wsRequests).toBeGreaterThan(5)
    expect(server.pipelines).toBe(0)
    client.close()
  })

  test('closing the socket rolls back its open transaction', async () => {
    const setup = createClient({ url: server.url })
    await setup.execute('CREATE TABLE w (x)')
    const client = createClient({ url: server.wsUrl })
    const tx = await client.transaction('write')
    await tx.execute('INSERT INTO w VALUES (1)')
    client.close()
    // The write lock is released: another writer gets in (bounded wait for the close to land).
    let done = false
    for (let i = 0; i < 100 && !done; i++) {
      done = await setup.execute('INSERT INTO w VALUES (2)').then(
        () => true,
        () => false,
      )
      if (!done) await new Promise((resolve) => setTimeout(resolve, 10))
    }
    expect(done).toBe(true)
    expect((await setup.execute('SELECT x FROM w')).rows.map((r) => r.x)).toEqual([2])
    setup.close()
  })
})

describe('Hrana over HTTP', () => {
  test('@libsql/client runs statements, batches and transactions against it', async () => {
    const client = createClient({ url: server.url, intMode: 'bigint' })
    await client.execute(
      'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE, data BLOB, r REAL)',
    )
    const inserted = await client.execute({
      sql: 'INSERT INTO t (name, data, r) VALUES (?, ?, ?)',
      args: ['a', new Uint8Array([0, 255]), 1.5],
    })
    expect(inserted.rowsAffected).toBe(1)
    expect(inserted.lastInsertRowid).toBe(1n)
    const rows = await client.execute('SELECT id, name, data, r FROM t')
    expect(rows.columns).toEqual(['id', 'name', 'data', 'r'])
    expect(rows.rows[0]!.id).toBe(1n)
    expect([...new Uint8Array(rows.rows[0]!.data as ArrayBuffer)]).toEqual([0, 255])
    expect(rows.rows[0]!.r).toBe(1.5)
    await client.batch(
      ["INSERT INTO t (name) VALUES ('b')", "INSERT INTO t (name) VALUES ('c')"],
      'write',
    )
    const tx = await client.transaction('write')
    await tx.execute("INSERT INTO t (name) VALUES ('d')")
    await tx.rollback()
    expect((await client.execute('SELECT count(*) AS n FROM t')).rows[0]!.n).toBe(3n)
    await client.executeMultiple(
      "INSERT INTO t (name) VALUES ('e'); INSERT INTO t (name) VALUES ('f');",
    )
    expect((await client.execute('SELECT count(*) AS n FROM t')).rows[0]!.n).toBe(5n)
    client.close()
  })

  test('errors carry the SQLite extended code as sqld sends it', async () => {
    const client = createClient({ url: server.url })
    await client.execute('CREATE TABLE u (k TEXT PRIMARY KEY NOT NULL, CHECK (length(k) < 5))')
    await client.execute("INSERT INTO u VALUES ('x')")
    const code = (sql: string) =>
      client.execute(sql).then(
        () => 'ok',
        (e: { code?: string }) => e.code,
      )
    expect(await code("INSERT INTO u VALUES ('x')")).toBe('SQLITE_CONSTRAINT_PRIMARYKEY')
    expect(await code('INSERT INTO u VALUES (NULL)')).toBe('SQLITE_CONSTRAINT_NOTNULL')
    expect(await code("INSERT INTO u VALUES ('toolong')")).toBe('SQLITE_CONSTRAINT_CHECK')
    expect(await code('SELEC 1')).toBe('SQLITE_ERROR')
    client.close()
  })

  test('connections start with foreign keys on; a pragma holds on its own stream only', async () => {
    const client = createClient({ url: server.url, intMode: 'number' })
    expect((await client.execute('PRAGMA foreign_keys')).rows[0]![0]).toBe(1)
    await client.execute('PRAGMA foreign_keys = OFF')
    expect((await client.execute('PRAGMA foreign_keys')).rows[0]![0]).toBe(1)
    const tx = await client.transaction('write')
    await tx.execute('PRAGMA query_only = ON')
    expect((await tx.execute('PRAGMA query_only')).rows[0]![0]).toBe(1)
    await tx.rollback()
    client.close()
  })

  test('a second writer gets SQLITE_BUSY at once instead of blocking the server', async () => {
    const client = createClient({ url: server.url })
    await client.execute('CREATE TABLE w (x)')
    const holder = await client.transaction('write')
    await holder.execute('INSERT INTO w VALUES (1)')
    const other = await client.execute('INSERT INTO w VALUES (2)').then(
      () => 'ok',
      (e: { code?: string }) => e.code,
    )
    expect(other).toBe('SQLITE_BUSY')
    await holder.commit()
    await client.execute('INSERT INTO w VALUES (2)')
    client.close()
  })

  test('batons: a stream continues with the baton it was given; a stale or unknown one is refused', async () => {
    const first = await json(
      post('/v3/pipeline', {
        requests: [{ type: 'execute', stmt: { sql: 'BEGIN' } }, { type: 'get_autocommit' }],
      }),
    )
    expect(first.results[1].response.is_autocommit).toBe(false)
    const second = await json(
      post('/v3/pipeline', { baton: first.baton, requests: [{ type: 'get_autocommit' }] }),
    )
    expect(second.results[0].response.is_autocommit).toBe(false)
    expect((await post('/v3/pipeline', { baton: first.baton, requests: [] })).status).toBe(400)
    const closed = await json(
      post('/v3/pipeline', { baton: second.baton, requests: [{ type: 'close' }] }),
    )
    expect(closed.baton).toBeNull()
    expect(server.openStreams).toBe(0)
    const v2 = await json(
      post('/v2/pipeline', { requests: [{ type: 'get_autocommit' }, { type: 'close' }] }),
    )
    expect(v2.results[0].type).toBe('error')
  })

  test('stored SQL, sequences, describe and conditional batch steps', async () => {
    const response = await json(
      post('/v3/pipeline', {
        requests: [
          { type: 'store_sql', sql_id: 1, sql: 'SELECT ? + ? AS s' },
          { type: 'sequence', sql: 'CREATE TABLE q (a); INSERT INTO q VALUES (1);' },
          {
            type: 'execute',
            stmt: {
              sql_id: 1,
              args: [
                { type: 'integer', value: '2' },
                { type: 'integer', value: '3' },
              ],
              want_rows: true,
            },
          },
          { type: 'describe', sql: 'SELECT a FROM q WHERE a = :x OR a = ?5' },
          {
            type: 'batch',
            batch: {
              steps: [
                { stmt: { sql: 'SELECT nope' } },
                { condition: { type: 'error', step: 0 }, stmt: { sql: 'SELECT 1' } },
                { condition: { type: 'ok', step: 0 }, stmt: { sql: 'SELECT 2' } },
              ],
            },
          },
          { type: 'close_sql', sql_id: 1 },
          { type: 'execute', stmt: { sql_id: 1 } },
          { type: 'close' },
        ],
      }),
    )
    const [, , sum, described, batch, , missing] = response.results
    expect(sum.response.result.rows).toEqual([[{ type: 'integer', value: '5' }]])
    expect(described.response.result.params.map((p: { name: string | null }) => p.name)).toEqual([
      ':x',
      null,
      null,
      null,
      null,
    ])
    expect(described.response.result.is_readonly).toBe(true)
    expect(batch.response.result.step_errors[0].code).toBe('SQLITE_ERROR')
    expect(batch.response.result.step_results[1]).not.toBeNull()
    expect(batch.response.result.step_results[2]).toBeNull()
    expect(missing.type).toBe('error')
  })

  test('an idle stream is closed and its transaction rolled back', async () => {
    const open = await json(
      post('/v3/pipeline', {
        requests: [
          { type: 'sequence', sql: 'CREATE TABLE i (x); BEGIN; INSERT INTO i VALUES (1);' },
        ],
      }),
    )
    await new Promise((resolve) => setTimeout(resolve, 800))
    expect((await post('/v3/pipeline', { baton: open.baton, requests: [] })).status).toBe(400)
    const client = createClient({ url: server.url, intMode: 'number' })
    expect((await client.execute('SELECT count(*) FROM i')).rows[0]![0]).toBe(0)
    client.close()
  })

  test('parameter names as SQLite numbers them', () => {
    expect(parameterNames("SELECT ?, '?', :a, @b, :a, $c -- ?\n, ?")).toEqual([
      null,
      ':a',
      '@b',
      '$c',
      null,
    ])
  })
})
