import { type AgentDatabase, fixedClock, isAgentFsError, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { tursoDriver } from '@agentfs/driver-turso'
import { serverBacked } from '@agentfs/hrana-server'
import { afterEach, describe, expect, test } from 'vitest'
import { createKvStore, KvConflictError, prefixUpperBound } from '../src/index.js'

const DRIVERS = {
  'better-sqlite3': () => betterSqlite3Driver({ path: ':memory:' }),
  libsql: () => libsqlDriver({ url: ':memory:' }),
  'libsql remote': () => serverBacked((url) => libsqlDriver({ url, busyTimeoutMs: 2000 })),
  turso: () => tursoDriver({ path: ':memory:' }),
}
const open: AgentDatabase[] = []
afterEach(async () => {
  for (const db of open.splice(0)) await db.close()
})

for (const [name, driver] of Object.entries(DRIVERS)) {
  describe(`kv (${name})`, () => {
    const fresh = async () => {
      const db = await openDatabase({ driver: driver(), clock: fixedClock() })
      open.push(db)
      return { kv: createKvStore(db), db }
    }

    test('set/get/has/delete with JSON values; timestamps per spec', async () => {
      const { kv, db } = await fresh()
      await kv.set('user:prefs', { theme: 'dark', sizes: [1, 2] })
      await kv.set('flag', true)
      await kv.set('nothing', null)
      expect(await kv.get('user:prefs')).toEqual({ theme: 'dark', sizes: [1, 2] })
      expect(await kv.get('flag')).toBe(true)
      expect(await kv.get('nothing')).toBeNull()
      expect(await kv.get('missing')).toBeUndefined()
      expect(await kv.has('nothing')).toBe(true)
      expect(await kv.delete('flag')).toBe(true)
      expect(await kv.delete('flag')).toBe(false)
      const row = await db.execute<{ value: string; created_at: number; updated_at: number }>({
        sql: "SELECT value, created_at, updated_at FROM kv_store WHERE key = 'user:prefs'",
      })
      expect(row.rows[0]!.value).toBe('{"theme":"dark","sizes":[1,2]}')
      expect(row.rows[0]!.created_at).toBe(1_704_067_200)
    })

    test('unserialisable values are refused with a clear error and nothing is written', async () => {
      const { kv } = await fresh()
      const circular: Record<string, unknown> = {}
      circular.self = circular
      for (const bad of [
        undefined,
        () => 1,
        Symbol('s'),
        10n,
        Number.NaN,
        Number.POSITIVE_INFINITY,
        new Map(),
        new Set(),
        circular,
        { nested: [1, () => 2] },
      ]) {
        const error = await kv.set('k', bad).catch((e: unknown) => e)
        expect(isAgentFsError(error, 'INVALID_ARGUMENT'), String(bad)).toBe(true)
      }
      expect(await kv.has('k')).toBe(false)
      await expect(kv.set('', 1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    })

    test('versions increase on every write and never repeat after delete and re-create', async () => {
      const { kv } = await fresh()
      const v1 = await kv.set('a', 1)
      const v2 = await kv.set('a', 2)
      expect(v2).toBeGreaterThan(v1)
      expect((await kv.getEntry('a'))?.version).toBe(v2)
      await kv.delete('a')
      const v3 = await kv.set('a', 3)
      expect(v3).toBeGreaterThan(v2)
      expect(await kv.version('missing')).toBeNull()
    })

    test('compare-and-set: ifVersion, ifVersion null, conflict errors carry versions', async () => {
      const { kv } = await fresh()
      const created = await kv.set('doc', 'first', { ifVersion: null })
      await expect(kv.set('doc', 'again', { ifVersion: null })).rejects.toBeInstanceOf(
        KvConflictError,
      )
      const next = await kv.set('doc', 'second', { ifVersion: created })
      const stale = await kv.set('doc', 'lost', { ifVersion: created }).catch((e: unknown) => e)
      expect(stale).toBeInstanceOf(KvConflictError)
      expect((stale as KvConflictError).code).toBe('CONFLICT')
      expect((stale as KvConflictError).currentVersion).toBe(next)
      expect(await kv.get('doc')).toBe('second')
      await expect(kv.delete('doc', { ifVersion: created })).rejects.toBeInstanceOf(KvConflictError)
      expect(await kv.delete('doc', { ifVersion: next })).toBe(true)
      await expect(kv.set('doc', 1, { ifVersion: -1 })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      })
    })

    test('update is an atomic read-modify-write: concurrent increments lose nothing', async () => {
      const { kv } = await fresh()
      await Promise.all(
        Array.from({ length: 25 }, () => kv.update<number>('counter', (n) => (n ?? 0) + 1)),
      )
      expect(await kv.get('counter')).toBe(25)
    })

    test('prefix listing is a case-sensitive, ordered range scan; _ and % are literal', async () => {
      const { kv } = await fresh()
      for (const key of [
        'a_b',
        'a%b',
        'aXb',
        'a_c',
        'A_b',
        'a_',
        'b',
        'a_\u00e9',
        'a_\u{1F600}',
        'a`',
      ])
        await kv.set(key, key)
      expect(await kv.keys({ prefix: 'a_' })).toEqual([
        'a_',
        'a_b',
        'a_c',
        'a_\u00e9',
        'a_\u{1F600}',
      ])
      expect(await kv.keys({ prefix: 'a%' })).toEqual(['a%b'])
      expect(await kv.keys({ prefix: 'A' })).toEqual(['A_b'])
      expect(await kv.keys()).toEqual([
        'A_b',
        'a%b',
        'aXb',
        'a_',
        'a_b',
        'a_c',
        'a_\u00e9',
        'a_\u{1F600}',
        'a`',
        'b',
      ])
      expect(await kv.keys({ prefix: 'zz' })).toEqual([])
    })

    test('list pages with a cursor; entries() iterates everything; clear(prefix)', async () => {
      const { kv } = await fresh()
      for (let i = 0; i < 250; i++) await kv.set(`item:${String(i).padStart(3, '0')}`, i)
      await kv.set('other', 'x')
      const first = await kv.list({ prefix: 'item:', limit: 100 })
      expect(first.entries).toHaveLength(100)
      expect(first.cursor).toBe('item:099')
      const second = await kv.list({ prefix: 'item:', limit: 100, cursor: first.cursor! })
      expect(second.entries[0]!.key).toBe('item:100')
      const third = await kv.list({ prefix: 'item:', limit: 100, cursor: second.cursor! })
      expect(third.entries).toHaveLength(50)
      expect(third.cursor).toBeUndefined()
      let count = 0
      for await (const entry of kv.entries({ prefix: 'item:', limit: 64 })) {
        expect(entry.value).toBe(count)
        count++
      }
      expect(count).toBe(250)
      expect(await kv.clear('item:')).toBe(250)
      expect(await kv.keys()).toEqual(['other'])
      await expect(kv.list({ limit: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    })

    test('keys written by other tools (plain spec SQL) have version 0 until AgentFS writes them', async () => {
      const { kv, db } = await fresh()
      await db.execute({ sql: "INSERT INTO kv_store (key, value) VALUES ('raw', '\"x\"')" })
      expect(await kv.version('raw')).toBe(0)
      expect(await kv.getEntry('raw')).toMatchObject({ value: 'x', version: 0 })
      await expect(kv.set('raw', 'y', { ifVersion: 1 })).rejects.toBeInstanceOf(KvConflictError)
      expect(await kv.set('raw', 'y', { ifVersion: 0 })).toBe(1)
      // Versions are AgentFS's own bookkeeping: a foreign write does not move them (documented).
      await db.execute({ sql: "UPDATE kv_store SET value = '\"z\"' WHERE key = 'raw'" })
      expect(await kv.version('raw')).toBe(1)
    })
  })
}

test('prefixUpperBound increments the last UTF-8 byte', () => {
  expect(Buffer.from(prefixUpperBound('ab')!).toString()).toBe('ac')
  expect(prefixUpperBound('')).toBeUndefined()
  expect([...prefixUpperBound('é')!]).toEqual([0xc3, 0xaa])
})
