import { referenceSdkScript } from '@agentfs/conformance'
import { guardDriver, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { createToolCalls } from '@agentfs/tool-calls'
import { describe, expect, test } from 'vitest'

const DRIVERS = {
  'better-sqlite3': () => betterSqlite3Driver({ path: ':memory:' }),
  libsql: () => libsqlDriver({ url: ':memory:' }),
}

for (const [name, driver] of Object.entries(DRIVERS)) {
  describe(`a database written by agentfs-sdk 0.6.4 (${name})`, () => {
    test('reads its calls, pending ones included, and fills its status column when writing', async () => {
      const guarded = guardDriver(driver())
      await guarded.executeScript(referenceSdkScript())
      const db = await openDatabase({ driver: guarded })
      const tools = createToolCalls(db)
      const calls = await tools.query({ order: 'oldest' })
      expect(calls.map((c) => [c.name, c.status])).toEqual([
        ['web_search', 'success'],
        ['fetch', 'error'],
        ['read_file', 'pending'],
        ['list_dir', 'success'],
      ])
      expect(calls[2]).toMatchObject({
        completedAt: null,
        durationMs: null,
        result: null,
        error: null,
      })
      expect(calls[0]).toMatchObject({
        parameters: { q: 'agentfs' },
        result: { hits: 3 },
        durationMs: 2000,
      })
      const stats = await tools.stats()
      expect(stats.find((s) => s.name === 'read_file')).toMatchObject({
        totalCalls: 1,
        pending: 1,
        successful: 0,
        failed: 0,
      })
      const id = await tools.record({ name: 'ours', error: 'nope', startedAt: 0, completedAt: 1 })
      const row = await db.execute<{ status: string }>({
        sql: 'SELECT status FROM tool_calls WHERE id = ?',
        params: [id],
      })
      expect(row.rows[0]!.status).toBe('error')
      await db.close()
    })
  })
}
