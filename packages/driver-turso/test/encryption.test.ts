import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { guardDriver } from '@agentfs/core'
import { tursodbPath } from '@agentfs/turso-sync-server'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { TURSO_CIPHERS, tursoDriver } from '../src/index.js'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-turso-key-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const MARKER = 'MARKER-9d21-plaintext-never-on-disk'
const KEY = '5f'.repeat(32)
const onDisk = (path: string) => [path, `${path}-wal`, `${path}-shm`].filter((f) => existsSync(f))

async function errorOf(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p
  } catch (error) {
    return error as { code?: string; message: string }
  }
  throw new Error('expected a rejection')
}

describe('tursoDriver({ key, cipher })', () => {
  test('the file and its WAL hold no plaintext; the key reads it back; wrong, missing and misplaced keys are one error each', async () => {
    const path = join(dir, 'secret.db')
    const db = guardDriver(tursoDriver({ path, key: KEY }))
    expect(db.driver.capabilities.encrypted).toBe(true)
    expect(Object.values((await db.execute({ sql: 'PRAGMA temp_store' })).rows[0]!)[0]).toBe(2)
    await db.execute({ sql: 'CREATE TABLE t(x TEXT)' })
    for (let i = 0; i < 30; i++)
      await db.execute({
        sql: 'INSERT INTO t VALUES (?)',
        params: [`${MARKER} ${'z'.repeat(300)}`],
      })
    expect(onDisk(path)).toContain(`${path}-wal`)
    for (const file of onDisk(path)) expect(readFileSync(file).includes(MARKER), file).toBe(false)
    await db.close()
    for (const file of onDisk(path)) expect(readFileSync(file).includes(MARKER), file).toBe(false)

    const again = guardDriver(tursoDriver({ path, key: Buffer.from(KEY, 'hex') }))
    expect((await again.execute({ sql: 'SELECT count(*) AS n FROM t' })).rows).toEqual([{ n: 30 }])
    await again.close()

    const wrong = await errorOf(
      guardDriver(tursoDriver({ path, key: 'ab'.repeat(32) })).execute({ sql: 'SELECT 1' }),
    )
    expect(wrong).toMatchObject({
      code: 'WRONG_KEY',
      message: expect.stringMatching(/does not open with this key/),
    })
    const none = await errorOf(guardDriver(tursoDriver({ path })).execute({ sql: 'SELECT 1' }))
    expect(none).toMatchObject({
      code: 'CORRUPT',
      message: expect.stringMatching(/is encrypted, damaged/),
    })

    const plainPath = join(dir, 'plain.db')
    const plain = guardDriver(tursoDriver({ path: plainPath }))
    await plain.execute({ sql: 'CREATE TABLE t(x)' })
    await plain.close()
    const keyed = await errorOf(
      guardDriver(tursoDriver({ path: plainPath, key: KEY })).execute({ sql: 'SELECT 1' }),
    )
    expect(keyed).toMatchObject({
      code: 'WRONG_KEY',
      message: expect.stringMatching(/is not encrypted/),
    })
  })

  test.each(Object.keys(TURSO_CIPHERS) as (keyof typeof TURSO_CIPHERS)[])(
    'cipher %s round-trips',
    async (cipher) => {
      const path = join(dir, `${cipher}.db`)
      const key = 'c3'.repeat(TURSO_CIPHERS[cipher])
      const db = guardDriver(tursoDriver({ path, key, cipher }))
      await db.execute({ sql: 'CREATE TABLE t(x TEXT)' })
      await db.execute({ sql: 'INSERT INTO t VALUES (?)', params: [MARKER] })
      await db.close()
      for (const file of onDisk(path)) expect(readFileSync(file).includes(MARKER), file).toBe(false)
      const again = guardDriver(tursoDriver({ path, key, cipher }))
      expect((await again.execute({ sql: 'SELECT x FROM t' })).rows).toEqual([{ x: MARKER }])
      await again.close()
    },
  )

  test('a passphrase, a key of the wrong size or an unknown cipher is refused at construction', () => {
    const path = join(dir, 'never.db')
    expect(() => tursoDriver({ path, key: 'my passphrase' })).toThrow(
      /aegis256 takes a raw key of 32 bytes \(64 hex digits, e\.g\. from openssl rand -hex 32\)/,
    )
    expect(() => tursoDriver({ path, key: 'ab'.repeat(16) })).toThrow(/32 bytes/)
    expect(() => tursoDriver({ path, key: KEY, cipher: 'des' as never })).toThrow(
      /unknown cipher "des"/,
    )
    expect(() => tursoDriver({ path, cipher: 'aegis256' })).toThrow(/cipher without key/)
    expect(existsSync(path)).toBe(false)
  })
})

// The Turso project's own agentfs CLI encrypts with this engine (`--key`, `--cipher`); its shell,
// tursodb, writes the same format: a file either side encrypts, the other opens with the key.
describe('files the Turso engine shell encrypts, and the reverse', () => {
  const shell = (path: string, key: string, sql: string) =>
    execFileSync(
      tursodbPath(),
      ['--experimental-encryption', '-m', 'list', `file:${path}?cipher=aegis256&hexkey=${key}`],
      { input: sql, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] },
    )

  test('tursodb encrypts, tursoDriver reads; tursoDriver encrypts, tursodb reads', async () => {
    const theirs = join(dir, 'theirs.db')
    shell(theirs, KEY, `CREATE TABLE t(x TEXT); INSERT INTO t VALUES ('${MARKER}');`)
    expect(readFileSync(theirs).includes(MARKER)).toBe(false)
    const db = guardDriver(tursoDriver({ path: theirs, key: KEY }))
    expect((await db.execute({ sql: 'SELECT x FROM t' })).rows).toEqual([{ x: MARKER }])
    await db.close()

    const ours = join(dir, 'ours.db')
    const mine = guardDriver(tursoDriver({ path: ours, key: KEY }))
    await mine.execute({ sql: 'CREATE TABLE t(x TEXT)' })
    await mine.execute({ sql: 'INSERT INTO t VALUES (?)', params: [MARKER] })
    await mine.close()
    expect(shell(ours, KEY, 'SELECT x FROM t;')).toContain(MARKER)
    expect(() => shell(ours, 'ab'.repeat(32), 'SELECT x FROM t;')).toThrow()
  })
})
