import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { guardDriver } from '@agentfs/core'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { BETTER_SQLITE3_CIPHERS, betterSqlite3Driver } from '../src/index.js'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-bs3-key-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const MARKER = 'MARKER-7f3a-plaintext-never-on-disk'

async function errorOf(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p
  } catch (error) {
    return error as { code?: string; message: string }
  }
  throw new Error('expected a rejection')
}

/** Every file SQLite keeps for `path` (the database, its WAL, its shared memory, a journal). */
const onDisk = (path: string) =>
  [path, `${path}-wal`, `${path}-shm`, `${path}-journal`].filter((f) => existsSync(f))

const holdsMarker = (file: string) => readFileSync(file).includes(MARKER)

describe('betterSqlite3Driver({ key })', () => {
  test('the file and its WAL hold no plaintext while open; the same key reads it back', async () => {
    const path = join(dir, 'secret.db')
    const db = guardDriver(betterSqlite3Driver({ path, key: 'correct horse battery staple' }))
    expect(db.driver.capabilities.encrypted).toBe(true)
    await db.execute({ sql: 'CREATE TABLE t(x TEXT)' })
    // Enough rows that pages reach the WAL and, after a checkpoint, the file.
    for (let i = 0; i < 50; i++)
      await db.execute({
        sql: 'INSERT INTO t VALUES (?)',
        params: [`${MARKER} ${i} ${'x'.repeat(500)}`],
      })
    // A sort too big for the page cache would spill to a temp file: kept in memory instead.
    expect(Object.values((await db.execute({ sql: 'PRAGMA temp_store' })).rows[0]!)[0]).toBe(2)
    expect(onDisk(path)).toContain(`${path}-wal`)
    for (const file of onDisk(path)) expect(holdsMarker(file), file).toBe(false)
    await db.execute({ sql: 'PRAGMA wal_checkpoint(TRUNCATE)' })
    for (const file of onDisk(path)) expect(holdsMarker(file), file).toBe(false)
    await db.close()
    for (const file of onDisk(path)) expect(holdsMarker(file), file).toBe(false)

    const again = guardDriver(betterSqlite3Driver({ path, key: 'correct horse battery staple' }))
    const rows = (
      await again.execute({
        sql: 'SELECT count(*) AS n FROM t WHERE x LIKE ?',
        params: [`${MARKER}%`],
      })
    ).rows
    expect(rows).toEqual([{ n: 50 }])
    await again.close()
  })

  test('the plain sqlite3 shell cannot read the file', async () => {
    const path = join(dir, 'secret.db')
    const db = guardDriver(betterSqlite3Driver({ path, key: 'k1' }))
    await db.execute({ sql: 'CREATE TABLE t(x TEXT)' })
    await db.execute({ sql: 'INSERT INTO t VALUES (?)', params: [MARKER] })
    await db.close()
    let out = ''
    try {
      out = execFileSync('sqlite3', [path, 'SELECT x FROM t'], { encoding: 'utf8', stdio: 'pipe' })
    } catch (error) {
      out = String((error as { stderr?: unknown }).stderr)
    }
    expect(out).toMatch(/file is not a database/)
    expect(out).not.toContain(MARKER)
  })

  test('a wrong key, a wrong cipher, no key and a key for a plain file are each one clear error', async () => {
    const path = join(dir, 'secret.db')
    const db = guardDriver(betterSqlite3Driver({ path, key: 'right' }))
    await db.execute({ sql: 'CREATE TABLE t(x)' })
    await db.close()

    const wrong = await errorOf(
      guardDriver(betterSqlite3Driver({ path, key: 'wrong' })).execute({ sql: 'SELECT 1' }),
    )
    expect(wrong.code).toBe('WRONG_KEY')
    expect(wrong.message).toMatch(/does not open with this key/)
    const cipher = await errorOf(
      guardDriver(betterSqlite3Driver({ path, key: 'right', cipher: 'chacha20' })).execute({
        sql: 'SELECT 1',
      }),
    )
    expect(cipher.code).toBe('WRONG_KEY')
    const none = await errorOf(
      guardDriver(betterSqlite3Driver({ path })).execute({ sql: 'SELECT 1' }),
    )
    expect(none.code).toBe('CORRUPT')
    expect(none.message).toMatch(
      /is encrypted, damaged, or not a SQLite database: if it is encrypted, open it with its key/,
    )

    const plainPath = join(dir, 'plain.db')
    const plain = guardDriver(betterSqlite3Driver({ path: plainPath }))
    await plain.execute({ sql: 'CREATE TABLE t(x)' })
    await plain.close()
    const keyed = await errorOf(
      guardDriver(betterSqlite3Driver({ path: plainPath, key: 'k' })).execute({ sql: 'SELECT 1' }),
    )
    expect(keyed.code).toBe('WRONG_KEY')
    expect(keyed.message).toMatch(/is not encrypted, and a key was given/)
    for (const message of [wrong.message, cipher.message, none.message, keyed.message])
      expect(message.split('\n')).toHaveLength(1)
  })

  test.each(BETTER_SQLITE3_CIPHERS)(
    'cipher %s: written, closed, read back; no plaintext',
    async (name) => {
      const path = join(dir, `${name}.db`)
      const db = guardDriver(
        betterSqlite3Driver({ path, key: new Uint8Array([1, 2, 3, 250]), cipher: name }),
      )
      await db.execute({ sql: 'CREATE TABLE t(x TEXT)' })
      await db.execute({ sql: 'INSERT INTO t VALUES (?)', params: [MARKER] })
      await db.close()
      for (const file of onDisk(path)) expect(holdsMarker(file), file).toBe(false)
      const again = guardDriver(
        betterSqlite3Driver({ path, key: new Uint8Array([1, 2, 3, 250]), cipher: name }),
      )
      expect((await again.execute({ sql: 'SELECT x FROM t' })).rows).toEqual([{ x: MARKER }])
      await again.close()
    },
  )

  test('sqlcipher authenticates every page: a flipped byte is refused, not read as data', async () => {
    const path = join(dir, 'tamper.db')
    const db = guardDriver(betterSqlite3Driver({ path, key: 'k' }))
    await db.execute({ sql: 'CREATE TABLE t(x TEXT)' })
    for (let i = 0; i < 200; i++)
      await db.execute({ sql: 'INSERT INTO t VALUES (?)', params: [`${MARKER} ${i}`] })
    await db.execute({ sql: 'PRAGMA wal_checkpoint(TRUNCATE)' })
    await db.close()
    const bytes = readFileSync(path)
    // A byte in the middle of page 2 (pages are 4096 bytes).
    bytes[4096 + 2000] = bytes[4096 + 2000]! ^ 0x01
    writeFileSync(path, bytes)
    const again = guardDriver(betterSqlite3Driver({ path, key: 'k' }))
    const error = await errorOf(again.execute({ sql: 'SELECT count(*) FROM t' }))
    expect(['CORRUPT', 'WRONG_KEY']).toContain(error.code)
    await again.close()
  })

  test('bad options are refused before anything opens', () => {
    const path = join(dir, 'never.db')
    expect(() => betterSqlite3Driver({ path, key: '' })).toThrow(/the key is empty/)
    expect(() => betterSqlite3Driver({ path, key: 'x'.repeat(5000) })).toThrow(/at most 4096/)
    expect(() => betterSqlite3Driver({ path, key: 'k', cipher: 'rot13' as never })).toThrow(
      /unknown cipher "rot13"; one of sqlcipher, chacha20/,
    )
    expect(() => betterSqlite3Driver({ path, cipher: 'chacha20' })).toThrow(/cipher without key/)
    expect(() => betterSqlite3Driver({ path, key: 7 as never })).toThrow(
      /key must be a string or a Uint8Array/,
    )
    expect(existsSync(path)).toBe(false)
  })

  test(':memory: with a key works (nothing on disk to encrypt)', async () => {
    const db = guardDriver(betterSqlite3Driver({ path: ':memory:', key: 'k' }))
    expect((await db.execute({ sql: 'SELECT 1 AS one' })).rows).toEqual([{ one: 1 }])
    expect(db.driver.capabilities.encrypted).toBeUndefined()
    await db.close()
  })
})
