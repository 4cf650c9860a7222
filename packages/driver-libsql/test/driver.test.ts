import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { guardDriver, isAgentFsError } from '@agentfs/core'
import { createClient } from '@libsql/client'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { libsqlDriver } from '../src/index.js'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-libsql-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const pragma = async (db: ReturnType<typeof guardDriver>, name: string) =>
  Object.values((await db.execute({ sql: `PRAGMA ${name}` })).rows[0]!)[0]

describe('libsqlDriver', () => {
  test('local files get WAL, synchronous NORMAL and no blocking busy wait', async () => {
    const db = guardDriver(libsqlDriver({ url: `file:${join(dir, 'a.db')}` }))
    expect(await pragma(db, 'journal_mode')).toBe('wal')
    expect(await pragma(db, 'synchronous')).toBe(1)
    expect(await pragma(db, 'busy_timeout')).toBe(0)
    expect(db.driver.capabilities).toEqual({
      concurrentTransactions: false,
      inMemory: false,
      remote: false,
      // One connection of the engine: rows can be stamped for the path cache.
      snapshotTokens: true,
      arrayRows: true,
      pluckRows: true,
    })
    await db.close()
  })

  test(':memory: keeps its data across transactions (the client would otherwise open a new one)', async () => {
    const db = guardDriver(libsqlDriver({ url: ':memory:' }))
    await db.execute({ sql: 'CREATE TABLE t (x)' })
    await db.transaction((tx) => tx.execute({ sql: 'INSERT INTO t VALUES (1)' }))
    await db.transaction((tx) => tx.execute({ sql: 'INSERT INTO t VALUES (2)' }))
    expect((await db.execute({ sql: 'SELECT x FROM t ORDER BY x' })).rows).toEqual([
      { x: 1 },
      { x: 2 },
    ])
    await db.close()
  })

  test('remote URLs are concurrent and remote, and connect lazily', async () => {
    const driver = libsqlDriver({ url: 'http://127.0.0.1:9', authToken: 'token' })
    expect(driver.capabilities).toEqual({
      concurrentTransactions: true,
      inMemory: false,
      remote: true,
      connectionPragmas: false,
    })
    // Nothing listens on the discard port: a clear error, not a hang.
    const error = await driver.execute({ sql: 'SELECT 1' }).catch((e: unknown) => e)
    expect(isAgentFsError(error)).toBe(true)
    expect((error as { code: string }).code).toBe('REMOTE')
    await driver.close()
  })

  test('an open client or a lazy factory can be passed; the driver closes it', async () => {
    const client = createClient({ url: ':memory:', intMode: 'bigint' })
    const driver = libsqlDriver({ client })
    expect((await driver.execute({ sql: 'SELECT 2 AS v' })).rows).toEqual([{ v: 2 }])
    await driver.close()
    expect(client.closed).toBe(true)

    let calls = 0
    const lazy = libsqlDriver({
      client: () => {
        calls++
        return createClient({ url: ':memory:', intMode: 'bigint' })
      },
    })
    expect(calls).toBe(0)
    await lazy.execute({ sql: 'SELECT 1' })
    await lazy.execute({ sql: 'SELECT 1' })
    expect(calls).toBe(1)
    await lazy.close()
    await lazy.close()
  })

  test('needs exactly one of url and client', () => {
    expect(() => libsqlDriver({})).toThrow(/exactly one/)
  })

  test('blobs come back as Uint8Array, not ArrayBuffer', async () => {
    const db = guardDriver(libsqlDriver({ url: ':memory:' }))
    const { rows } = await db.execute<{ b: unknown }>({ sql: "SELECT x'0102' AS b" })
    expect(rows[0]!.b).toBeInstanceOf(Uint8Array)
    await db.close()
  })
})

test('a bare path as url says to write file:', () => {
  expect(() => libsqlDriver({ url: 'agent.db' })).toThrow(/write `file:agent.db`/)
})
