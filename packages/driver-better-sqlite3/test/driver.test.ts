import { statSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { guardDriver, isAgentFsError } from '@agentfs/core'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { betterSqlite3Driver, checkEngineVersion } from '../src/index.js'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-bs3-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const pragma = async (db: ReturnType<typeof guardDriver>, name: string) =>
  Object.values((await db.execute({ sql: `PRAGMA ${name}` })).rows[0]!)[0]

describe('betterSqlite3Driver', () => {
  test('file databases get WAL, synchronous NORMAL, a WAL size limit and no blocking busy wait', async () => {
    const db = guardDriver(betterSqlite3Driver({ path: join(dir, 'a.db') }))
    expect(await pragma(db, 'journal_mode')).toBe('wal')
    expect(await pragma(db, 'synchronous')).toBe(1)
    expect(await pragma(db, 'journal_size_limit')).toBe(4 * 1024 * 1024)
    expect(await pragma(db, 'busy_timeout')).toBe(0)
    expect(db.driver.capabilities).toEqual({
      concurrentTransactions: false,
      inMemory: false,
      remote: false,
      snapshotTokens: true,
      arrayRows: true,
      pluckRows: true,
    })
    await db.close()
  })

  test('a large transaction does not leave a WAL of its size behind; small ones keep the WAL', async () => {
    const path = join(dir, 'wal.db')
    const walSize = () => {
      try {
        return statSync(`${path}-wal`).size
      } catch {
        return 0
      }
    }
    const db = guardDriver(betterSqlite3Driver({ path }))
    await db.execute({ sql: 'CREATE TABLE t (b BLOB)' })
    const blob = new Uint8Array(1024 * 1024).fill(7)
    await db.transaction(async (tx) => {
      for (let i = 0; i < 24; i++)
        await tx.execute({ sql: 'INSERT INTO t VALUES (?)', params: [blob] })
    })
    expect(walSize()).toBe(0)
    await db.transaction(async (tx) => {
      await tx.execute({ sql: 'INSERT INTO t VALUES (?)', params: [new Uint8Array(10)] })
    })
    expect(walSize()).toBeGreaterThan(0)
    expect((await db.execute({ sql: 'SELECT COUNT(*) AS n FROM t' })).rows[0]).toEqual({ n: 25 })
    await db.close()

    const off = guardDriver(
      betterSqlite3Driver({ path, truncateWalAfterBytes: Number.POSITIVE_INFINITY }),
    )
    await off.transaction(async (tx) => {
      for (let i = 0; i < 24; i++)
        await tx.execute({ sql: 'INSERT INTO t VALUES (?)', params: [blob] })
    })
    expect(walSize()).toBeGreaterThan(20 * 1024 * 1024)
    await off.close()
  })

  test('synchronous FULL on request', async () => {
    const db = guardDriver(betterSqlite3Driver({ path: join(dir, 'a.db'), synchronous: 'FULL' }))
    expect(await pragma(db, 'synchronous')).toBe(2)
    await db.close()
  })

  test(':memory: databases report it and skip WAL', async () => {
    const db = guardDriver(betterSqlite3Driver({ path: ':memory:' }))
    expect(db.driver.capabilities.inMemory).toBe(true)
    expect(await pragma(db, 'journal_mode')).toBe('memory')
    await db.close()
  })

  test('read-only files can be read but not written', async () => {
    const path = join(dir, 'ro.db')
    const setup = new Database(path)
    setup.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)')
    setup.close()
    const db = guardDriver(betterSqlite3Driver({ path, readonly: true }))
    expect((await db.execute({ sql: 'SELECT x FROM t' })).rows).toEqual([{ x: 1 }])
    const error = await db.execute({ sql: 'INSERT INTO t VALUES (2)' }).catch((e: unknown) => e)
    expect(isAgentFsError(error, 'READONLY')).toBe(true)
    await db.close()
  })

  test('a path in a missing directory fails with CANT_OPEN on first use, not at construction', async () => {
    const driver = betterSqlite3Driver({ path: join(dir, 'missing', 'x.db') })
    const error = await driver.execute({ sql: 'SELECT 1' }).catch((e: unknown) => e)
    expect(isAgentFsError(error, 'CANT_OPEN')).toBe(true)
  })

  test('a file that is not a database fails with CORRUPT', async () => {
    const path = join(dir, 'junk.db')
    await writeFile(path, 'this is not a sqlite database, just text '.repeat(200))
    const error = await betterSqlite3Driver({ path })
      .execute({ sql: 'SELECT * FROM sqlite_schema' })
      .catch((e: unknown) => e)
    expect(isAgentFsError(error, 'CORRUPT')).toBe(true)
  })

  test('an open database or a lazy factory can be passed; the driver closes it', async () => {
    const instance = new Database(':memory:')
    const driver = betterSqlite3Driver({ database: instance })
    expect((await driver.execute({ sql: 'SELECT 2 AS v' })).rows).toEqual([{ v: 2 }])
    await driver.close()
    expect(instance.open).toBe(false)

    let calls = 0
    const lazy = betterSqlite3Driver({
      database: () => {
        calls++
        return new Database(':memory:')
      },
    })
    expect(calls).toBe(0)
    await lazy.execute({ sql: 'SELECT 1' })
    await lazy.execute({ sql: 'SELECT 1' })
    expect(calls).toBe(1)
    await lazy.close()
    await lazy.close()
  })

  test('needs exactly one of path and database', () => {
    expect(() => betterSqlite3Driver({})).toThrow(/exactly one/)
    expect(() =>
      betterSqlite3Driver({ path: ':memory:', database: new Database(':memory:') }),
    ).toThrow(/exactly one/)
  })

  test('a bounded statement cache keeps working past its size', async () => {
    const db = guardDriver(betterSqlite3Driver({ path: ':memory:', statementCacheSize: 2 }))
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 10; i++) {
        expect((await db.execute({ sql: `SELECT ${i} AS v` })).rows).toEqual([{ v: i }])
      }
    }
    await db.close()
  })

  test('two connections in one process to one file wait for each other instead of deadlocking', async () => {
    const path = join(dir, 'shared.db')
    const a = guardDriver(betterSqlite3Driver({ path }))
    const b = guardDriver(betterSqlite3Driver({ path }))
    await a.execute({ sql: 'CREATE TABLE t (v INTEGER)' })
    const slow = a.transaction(async (tx) => {
      await tx.execute({ sql: 'INSERT INTO t VALUES (1)' })
      await new Promise((resolve) => setTimeout(resolve, 50))
      await tx.execute({ sql: 'INSERT INTO t VALUES (2)' })
    })
    const other = b.transaction((tx) => tx.execute({ sql: 'INSERT INTO t VALUES (3)' }))
    await Promise.all([slow, other])
    expect((await b.execute({ sql: 'SELECT v FROM t ORDER BY rowid' })).rows).toEqual([
      { v: 1 },
      { v: 2 },
      { v: 3 },
    ])
    await a.close()
    await b.close()
  })
})

describe('engine and Node.js versions', () => {
  test('a better-sqlite3 that would crash this Node.js is refused with the version to install', () => {
    expect(() => checkEngineVersion('20.20.2', '13.2.0')).toThrow(
      /needs Node.js 22.*better-sqlite3@12/,
    )
    expect(() => checkEngineVersion('24.21.0', '12.6.2')).toThrow(
      /crashes on Node.js 24.*better-sqlite3@13/,
    )
    expect(() => checkEngineVersion('20.20.2', '12.6.2')).not.toThrow()
    expect(() => checkEngineVersion('22.12.0', '13.2.0')).not.toThrow()
    expect(() => checkEngineVersion('24.21.0', '13.2.0')).not.toThrow()
    // The engine this workspace runs on is accepted.
    expect(() => checkEngineVersion()).not.toThrow()
  })
})
