import { existsSync, readFileSync, statSync } from 'node:fs'
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { guardDriver } from '@agentfs/core'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { betterSqlite3Driver, rekeyDatabase } from '../src/index.js'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-rekey-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const MARKER = 'MARKER-0b7e-rekeyed-content'
type Open = { key?: string; cipher?: 'sqlcipher' | 'chacha20' | 'aes256cbc' }

async function make(path: string, o: Open = {}) {
  const db = guardDriver(betterSqlite3Driver({ path, ...o }))
  await db.execute({ sql: 'CREATE TABLE t(x TEXT)' })
  await db.execute({ sql: 'CREATE VIRTUAL TABLE f USING fts5(body)' })
  for (let i = 0; i < 20; i++) {
    await db.execute({ sql: 'INSERT INTO t VALUES (?)', params: [`${MARKER} ${i}`] })
    await db.execute({ sql: 'INSERT INTO f VALUES (?)', params: [`${MARKER} hello ${i}`] })
  }
  await db.close()
}

async function rows(path: string, o: Open = {}) {
  const db = guardDriver(betterSqlite3Driver({ path, ...o }))
  try {
    const t = (await db.execute({ sql: 'SELECT count(*) AS n FROM t' })).rows[0]
    const f = (await db.execute({ sql: "SELECT count(*) AS n FROM f WHERE f MATCH 'hello'" }))
      .rows[0]
    return { t, f }
  } finally {
    await db.close()
  }
}

const plaintext = (path: string) =>
  [path, `${path}-wal`].filter((f) => existsSync(f)).some((f) => readFileSync(f).includes(MARKER))

async function errorOf(fn: () => unknown): Promise<{ code?: string; message: string }> {
  try {
    await fn()
  } catch (error) {
    return error as { code?: string; message: string }
  }
  throw new Error('expected an error')
}

describe('rekeyDatabase', () => {
  test('encrypt, change key and cipher, decrypt: the content (FTS5 included) stays; the old key stops working', async () => {
    const path = join(dir, 'a.db')
    await make(path)
    expect(plaintext(path)).toBe(true)
    const want = await rows(path)
    expect(want).toEqual({ t: { n: 20 }, f: { n: 20 } })

    rekeyDatabase({ path, to: { key: 'one' } })
    expect(plaintext(path)).toBe(false)
    expect(await rows(path, { key: 'one' })).toEqual(want)
    expect(existsSync(`${path}.agentfs-rekey`)).toBe(false)

    rekeyDatabase({ path, from: { key: 'one' }, to: { key: 'two', cipher: 'chacha20' } })
    expect(plaintext(path)).toBe(false)
    expect(await rows(path, { key: 'two', cipher: 'chacha20' })).toEqual(want)
    expect(await errorOf(() => rows(path, { key: 'one' }))).toMatchObject({ code: 'WRONG_KEY' })

    rekeyDatabase({ path, from: { key: 'two', cipher: 'chacha20' } })
    expect(plaintext(path)).toBe(true)
    expect(await rows(path)).toEqual(want)
  })

  test('refused before any change: a wrong key, an encrypted file given as plain, a database open elsewhere, nothing to do', async () => {
    const path = join(dir, 'a.db')
    await make(path, { key: 'k' })
    const before = readFileSync(path)
    expect(
      await errorOf(() => rekeyDatabase({ path, from: { key: 'nope' }, to: { key: 'x' } })),
    ).toMatchObject({
      code: 'WRONG_KEY',
    })
    expect(await errorOf(() => rekeyDatabase({ path, to: { key: 'x' } }))).toMatchObject({
      code: 'WRONG_KEY',
      message: expect.stringMatching(/already encrypted/),
    })
    expect(await errorOf(() => rekeyDatabase({ path }))).toMatchObject({ code: 'INVALID_ARGUMENT' })

    const open = guardDriver(betterSqlite3Driver({ path, key: 'k' }))
    await open.execute({ sql: 'SELECT count(*) FROM t' })
    const busy = await errorOf(() => rekeyDatabase({ path, from: { key: 'k' }, to: { key: 'x' } }))
    expect(busy).toMatchObject({
      code: 'BUSY',
      message: expect.stringMatching(/is open in another process/),
    })
    expect((await open.execute({ sql: 'SELECT count(*) AS n FROM t' })).rows).toEqual([{ n: 20 }])
    await open.close()
    expect(readFileSync(path).equals(before)).toBe(true)
    expect(existsSync(`${path}.agentfs-rekey`)).toBe(false)
    expect(await rows(path, { key: 'k' })).toEqual({ t: { n: 20 }, f: { n: 20 } })
  })

  test('the file keeps its permissions; a copy left by a killed run is replaced', async () => {
    const path = join(dir, 'a.db')
    await make(path)
    await chmod(path, 0o600)
    await writeFile(`${path}.agentfs-rekey`, 'left by a killed run')
    rekeyDatabase({ path, to: { key: 'k' } })
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(existsSync(`${path}.agentfs-rekey`)).toBe(false)
    expect(await rows(path, { key: 'k' })).toEqual({ t: { n: 20 }, f: { n: 20 } })
  })
})
