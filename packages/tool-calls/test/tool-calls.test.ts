import {
  type AgentDatabase,
  fixedClock,
  guardDriver,
  isAgentFsError,
  openDatabase,
} from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { tursoDriver } from '@agentfs/driver-turso'
import { serverBacked } from '@agentfs/hrana-server'
import { withSlotIds } from '@agentfs/test-kit'
import { afterEach, describe, expect, test } from 'vitest'
import { createToolCalls } from '../src/index.js'

const DRIVERS = {
  'better-sqlite3': () => betterSqlite3Driver({ path: ':memory:' }),
  libsql: () => libsqlDriver({ url: ':memory:' }),
  'libsql remote': () => serverBacked((url) => libsqlDriver({ url, busyTimeoutMs: 2000 })),
  turso: () => tursoDriver({ path: ':memory:' }),
  'better-sqlite3, slot ids': () => withSlotIds(betterSqlite3Driver({ path: ':memory:' })),
}
const open: AgentDatabase[] = []
afterEach(async () => {
  for (const db of open.splice(0)) await db.close()
})

for (const [name, driver] of Object.entries(DRIVERS)) {
  describe(`tool calls (${name})`, () => {
    const fresh = async (setupScript?: string) => {
      const guarded = guardDriver(driver())
      if (setupScript) await guarded.executeScript(setupScript)
      const db = await openDatabase({ driver: guarded, clock: fixedClock({ stepNs: 1_500_000 }) })
      open.push(db)
      return { tools: createToolCalls(db), db }
    }

    test('record writes one spec row (rule 3 duration) plus precise timing', async () => {
      const { tools, db } = await fresh()
      const id = await tools.record({
        name: 'web_search',
        parameters: { q: 'agentfs' },
        result: { hits: 3 },
        startedAt: 1_700_000_000_250,
        completedAt: 1_700_000_001_750.5,
        sessionId: 's1',
        metadata: { tokens: 12 },
      })
      const row = await db.execute({ sql: 'SELECT * FROM tool_calls WHERE id = ?', params: [id] })
      expect(row.rows[0]).toEqual({
        id,
        name: 'web_search',
        parameters: '{"q":"agentfs"}',
        result: '{"hits":3}',
        error: null,
        started_at: 1_700_000_000,
        completed_at: 1_700_000_001,
        duration_ms: 1000,
      })
      const call = await tools.get(id)
      expect(call).toMatchObject({
        status: 'success',
        durationMs: 1500.5,
        sessionId: 's1',
        metadata: { tokens: 12 },
      })
      expect(call?.startedAt).toBe(1_700_000_000_250)
    })

    test('a tracked call is pending while it runs; reconcile records calls abandoned by another process', async () => {
      const { tools, db } = await fresh()
      let during: Awaited<ReturnType<typeof tools.pending>> = []
      const id = await tools.track('search', { q: 'x' }, async () => {
        during = await tools.pending()
        return 'hits'
      })
      expect(during).toHaveLength(1)
      expect(during[0]).toMatchObject({ name: 'search', parameters: { q: 'x' }, ours: true })
      expect(await tools.pending()).toEqual([])
      expect((await tools.query())[0]).toMatchObject({ name: 'search', status: 'success' })
      expect(id).toBe('hits')

      // A call another process started and never finished (it died), and one of ours.
      const token = await tools.start({ name: 'write', parameters: { path: '/a' } })
      await db.execute({
        sql: "UPDATE agentfs_tool_call_pending SET owner = 'gone-host:1' WHERE token = ?",
        params: [token],
      })
      const own = await tools.start({ name: 'mine', sessionId: 's1' })
      expect(own).toBeTypeOf('string')
      const listed = await tools.pending()
      expect(listed.map((p) => [p.name, p.ours, p.owner])).toEqual([
        ['write', false, 'gone-host:1'],
        ['mine', true, expect.stringContaining(':')],
      ])
      expect(listed[1]!.ageMs).toBeGreaterThanOrEqual(0)
      // Not old enough yet by the database's clock (1.5 ms a reading): nothing is reconciled.
      expect(await tools.reconcile({ olderThan: 60_000 })).toEqual([])
      const ids = await tools.reconcile({ olderThan: 0 })
      expect(ids).toHaveLength(1)
      const abandoned = await tools.get(ids[0]!)
      expect(abandoned).toMatchObject({
        name: 'write',
        status: 'error',
        parameters: { path: '/a' },
        metadata: { abandoned: true, owner: 'gone-host:1' },
      })
      expect(abandoned!.error).toMatch(/^abandoned: started by gone-host:1 and never completed/)
      const meta = await db.execute<{ call_token: string }>({
        sql: 'SELECT call_token FROM agentfs_tool_call_meta WHERE id = ?',
        params: [ids[0]!],
      })
      expect(meta.rows[0]!.call_token).toBe(token)
      expect((await tools.pending()).map((p) => p.name)).toEqual(['mine'])
      expect(await tools.reconcile({ olderThan: 0, includeOwn: true })).toHaveLength(1)
      expect(await tools.pending()).toEqual([])
      // Completing a started call with `record` takes it out of the pending table.
      const third = await tools.start({ name: 'fetch' })
      await tools.record({
        name: 'fetch',
        result: 1,
        startedAt: 0,
        completedAt: 1,
        callToken: third,
      })
      expect(await tools.pending()).toEqual([])
      for (const bad of [{ olderThan: -1 }, { olderThan: Number.NaN }, { olderThan: 0, limit: 0 }])
        await expect(tools.reconcile(bad)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
      await expect(tools.start({ name: '' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    })

    test('exactly one of result and error; bad input is refused and nothing is written', async () => {
      const { tools, db } = await fresh()
      const id = await tools.record({
        name: 'fetch',
        error: new Error('timeout'),
        result: 'ignored',
        startedAt: 0,
        completedAt: 5,
      })
      expect(await tools.get(id)).toMatchObject({ status: 'error', error: 'timeout', result: null })
      const circular: Record<string, unknown> = {}
      circular.self = circular
      for (const bad of [
        { name: '', startedAt: 0, completedAt: 0 },
        { name: 'x', startedAt: 5, completedAt: 1 },
        { name: 'x', parameters: circular, startedAt: 0, completedAt: 0 },
        { name: 'x', startedAt: Number.NaN, completedAt: 0 },
      ]) {
        const error = await tools.record(bad as never).catch((e: unknown) => e)
        expect(isAgentFsError(error, 'INVALID_ARGUMENT')).toBe(true)
      }
      const count = await db.execute<{ n: number }>({ sql: 'SELECT COUNT(*) AS n FROM tool_calls' })
      expect(count.rows[0]!.n).toBe(1)
    })

    test('track records success and failure exactly once and rethrows', async () => {
      const { tools } = await fresh()
      expect(await tools.track('add', { a: 1, b: 2 }, () => 3)).toBe(3)
      const boom = new Error('boom')
      await expect(tools.track('fail', {}, async () => Promise.reject(boom))).rejects.toBe(boom)
      await expect(
        tools.track('sync-throw', null, () => {
          throw boom
        }),
      ).rejects.toBe(boom)
      const circular: Record<string, unknown> = {}
      circular.self = circular
      expect(await tools.track('odd', circular, () => undefined)).toBeUndefined()
      const calls = await tools.query({ order: 'oldest' })
      expect(calls.map((c) => [c.name, c.status])).toEqual([
        ['add', 'success'],
        ['fail', 'error'],
        ['sync-throw', 'error'],
        ['odd', 'success'],
      ])
      expect(calls[0]).toMatchObject({ parameters: { a: 1, b: 2 }, result: 3, durationMs: 1.5 })
      expect((calls[3]!.parameters as Record<string, unknown>).$unserializable).toMatch(/circular/i)
      expect(calls[3]!.result).toBeNull()
    })

    test('wrap, sessions and nested calls', async () => {
      const { tools } = await fresh()
      const session = tools.withSession('chat-1')
      const outer = await session.record({
        name: 'plan',
        result: 'ok',
        startedAt: 1000,
        completedAt: 2000,
      })
      const read = session.wrap('read', async (path: string) => `contents of ${path}`, {
        parentId: outer,
      })
      expect(await read('/a')).toBe('contents of /a')
      const sum = tools.wrap('sum', (a: number, b: number) => a + b)
      expect(await sum(2, 3)).toBe(5)
      const timeline = await tools.bySession('chat-1')
      expect(timeline.map((c) => c.name)).toEqual(['plan', 'read'])
      expect(timeline[1]).toMatchObject({ parentId: outer, parameters: '/a' })
      expect((await tools.byName('sum'))[0]).toMatchObject({
        parameters: [2, 3],
        result: 5,
        sessionId: null,
      })
      expect(await tools.query({ parentId: outer })).toHaveLength(1)
    })

    test('filters apply before the limit; since, until, errors, recent', async () => {
      const { tools } = await fresh()
      for (let i = 0; i < 30; i++) {
        await tools.record({
          name: i % 3 === 0 ? 'rare' : 'common',
          ...(i % 5 === 0 ? { error: 'bad' } : { result: i }),
          startedAt: 1_700_000_000_000 + i * 100,
          completedAt: 1_700_000_000_000 + i * 100 + i,
        })
      }
      // The newest 5 calls are all 'common' except i=27; a filter after the limit would miss rare ones.
      expect((await tools.byName('rare', { limit: 5 })).map((c) => c.result ?? c.error)).toEqual([
        27,
        24,
        21,
        18,
        'bad',
      ])
      expect((await tools.since(1_700_000_002_550)).map((c) => c.result)).toEqual([29, 28, 27, 26])
      expect(await tools.query({ until: 1_700_000_000_200 })).toHaveLength(2)
      expect((await tools.query({ errorsOnly: true })).map((c) => c.error)).toEqual(
        Array(6).fill('bad'),
      )
      expect((await tools.recent(2)).map((c) => c.result)).toEqual([29, 28])
      await expect(tools.query({ limit: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    })

    test('stats: spec totals plus average and p50/p95', async () => {
      const { tools } = await fresh()
      for (let i = 1; i <= 20; i++)
        await tools.record({ name: 'a', result: i, startedAt: 0, completedAt: i * 10 })
      await tools.record({ name: 'b', error: 'x', startedAt: 0, completedAt: 7 })
      const stats = await tools.stats()
      expect(stats).toEqual([
        {
          name: 'a',
          totalCalls: 20,
          successful: 20,
          failed: 0,
          pending: 0,
          avgDurationMs: 105,
          p50DurationMs: 100,
          p95DurationMs: 190,
        },
        {
          name: 'b',
          totalCalls: 1,
          successful: 0,
          failed: 1,
          pending: 0,
          avgDurationMs: 7,
          p50DurationMs: 7,
          p95DurationMs: 7,
        },
      ])
    })
  })
}
