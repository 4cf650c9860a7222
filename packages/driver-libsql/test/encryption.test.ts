import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { guardDriver } from '@agentfs/core'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { libsqlDriver } from '../src/index.js'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-libsql-key-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const MARKER = 'MARKER-51c0-plaintext-never-on-disk'
const onDisk = (path: string) =>
  [path, `${path}-wal`, `${path}-shm`, `${path}-journal`].filter((f) => existsSync(f))

async function errorOf(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p
  } catch (error) {
    return error as { code?: string; message: string }
  }
  throw new Error('expected a rejection')
}

describe('libsqlDriver({ encryptionKey })', () => {
  test('the file and its WAL hold no plaintext; the key reads it back; a wrong or missing key is one error', async () => {
    const path = join(dir, 'secret.db')
    const db = guardDriver(libsqlDriver({ url: `file:${path}`, encryptionKey: 'libsql pass' }))
    expect(db.driver.capabilities.encrypted).toBe(true)
    expect(Object.values((await db.execute({ sql: 'PRAGMA temp_store' })).rows[0]!)[0]).toBe(2)
    await db.execute({ sql: 'CREATE TABLE t(x TEXT)' })
    for (let i = 0; i < 40; i++)
      await db.execute({
        sql: 'INSERT INTO t VALUES (?)',
        params: [`${MARKER} ${'y'.repeat(400)}`],
      })
    expect(onDisk(path)).toContain(`${path}-wal`)
    for (const file of onDisk(path)) expect(readFileSync(file).includes(MARKER), file).toBe(false)
    await db.close()
    for (const file of onDisk(path)) expect(readFileSync(file).includes(MARKER), file).toBe(false)

    const again = guardDriver(libsqlDriver({ url: `file:${path}`, encryptionKey: 'libsql pass' }))
    expect((await again.execute({ sql: 'SELECT count(*) AS n FROM t' })).rows).toEqual([{ n: 40 }])
    await again.close()

    const wrong = await errorOf(
      guardDriver(libsqlDriver({ url: `file:${path}`, encryptionKey: 'nope' })).execute({
        sql: 'SELECT 1',
      }),
    )
    expect(wrong).toMatchObject({
      code: 'WRONG_KEY',
      message: expect.stringMatching(/does not open with this key/),
    })
    const none = await errorOf(
      guardDriver(libsqlDriver({ url: `file:${path}` })).execute({ sql: 'SELECT 1' }),
    )
    expect(none).toMatchObject({
      code: 'CORRUPT',
      message: expect.stringMatching(/is encrypted, damaged/),
    })
  })

  test('a key for a remote URL, or not a string, is refused at construction', () => {
    expect(() => libsqlDriver({ url: 'http://127.0.0.1:1', encryptionKey: 'k' })).toThrow(
      /encryptionKey is for local files/,
    )
    expect(() =>
      libsqlDriver({ url: 'file:x.db', encryptionKey: new Uint8Array([1]) as never }),
    ).toThrow(/encryptionKey must be a string/)
    expect(() => libsqlDriver({ url: 'file:x.db', encryptionKey: '' })).toThrow(/the key is empty/)
  })
})
