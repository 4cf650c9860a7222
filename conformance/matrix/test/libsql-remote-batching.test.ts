import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Executor, guardDriver, isAgentFsError } from '@agentfs/core'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { type HranaServer, startHranaServer } from '@agentfs/hrana-server'
import { AgentFS } from '@agentfs/sdk'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'

// A remote transaction queues the statements whose results the caller does not need
// (`Executor.defer`) and sends them with its next statement or with COMMIT.

let dir: string
let server: HranaServer
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-remote-batch-'))
  server = await startHranaServer({ path: join(dir, 'db.sqlite') })
})
afterEach(async () => {
  await server.close()
  await rm(dir, { recursive: true, force: true })
})

/** Waits (bounded) until the server has no stream open: every close has arrived. */
async function settled(): Promise<void> {
  for (let i = 0; i < 200 && server.openStreams > 0; i++)
    await new Promise((resolve) => setTimeout(resolve, 5))
  expect(server.openStreams).toBe(0)
}

/** HTTP requests one call makes, the stream's final close included. */
async function requests(fn: () => Promise<unknown>): Promise<number> {
  await settled()
  const before = server.pipelines
  await fn()
  await settled()
  return server.pipelines - before
}

describe('remote transactions send queued statements together', () => {
  test('file create, overwrite, rename, kv set and a tool call take few requests', async () => {
    const agent = await AgentFS.open({ driver: libsqlDriver({ url: server.url }) })
    await agent.fs.mkdir('/a')
    await agent.fs.mkdir('/b')
    // Statement by statement these were 6, 5, 7, 3 and 3 requests (plus the close).
    expect(await requests(() => agent.fs.writeFile('/a/f', 'x'.repeat(1024)))).toBe(4)
    expect(await requests(() => agent.fs.writeFile('/a/f', 'y'.repeat(1024)))).toBe(3)
    expect(await requests(() => agent.fs.rename('/a/f', '/b/f'))).toBe(4)
    expect(await requests(() => agent.kv.set('k', { v: 1 }))).toBe(2)
    expect(
      await requests(() =>
        agent.tools.record({ name: 't', parameters: {}, startedAt: 1, completedAt: 2 }),
      ),
    ).toBe(3)
    expect(await agent.fs.readFile('/b/f', 'utf8')).toBe('y'.repeat(1024))
    expect(await agent.fs.readdir('/a')).toEqual([])
    expect(await agent.kv.get('k')).toEqual({ v: 1 })
    await agent.close()
  })

  test('a large write is not held back: one request never carries a whole big file', async () => {
    const agent = await AgentFS.open({ driver: libsqlDriver({ url: server.url }) })
    const big = new Uint8Array(1024 * 1024).fill(7)
    expect(await requests(() => agent.fs.writeFile('/big', big))).toBeGreaterThan(6)
    expect((await agent.fs.readFile('/big')).equals(Buffer.from(big))).toBe(true)
    await agent.close()
  })
})

describe.each([
  ['HTTP', () => server.url],
  ['WebSocket', () => server.wsUrl],
])('queued statements over %s', (_transport, url) => {
  test('a queued statement that fails fails the transaction, even if the callback catches', async () => {
    const db = guardDriver(libsqlDriver({ url: url() }))
    await db.execute({ sql: 'CREATE TABLE t (x INTEGER PRIMARY KEY)' })
    await db.execute({ sql: 'INSERT INTO t VALUES (1)' })
    let caught: unknown
    const error = await db
      .transaction(async (tx: Executor) => {
        expect(tx.defer).toBeTypeOf('function')
        tx.defer?.({ sql: 'INSERT INTO t VALUES (2)' })
        tx.defer?.({ sql: 'INSERT INTO t VALUES (1)' }) // UNIQUE
        try {
          await tx.execute({ sql: 'INSERT INTO t VALUES (3)' })
        } catch (e) {
          caught = e
        }
        // Later calls fail too: the queued statement's effect is missing.
        await tx.execute({ sql: 'INSERT INTO t VALUES (4)' }).catch(() => undefined)
        return 'done'
      })
      .catch((e: unknown) => e)
    expect(isAgentFsError(caught, 'CONSTRAINT_UNIQUE')).toBe(true)
    expect(isAgentFsError(error, 'CONSTRAINT_UNIQUE')).toBe(true)
    expect(String((error as Error).message)).toMatch(/UNIQUE/)
    const { rows } = await db.execute({ sql: 'SELECT x FROM t ORDER BY x' })
    expect(rows).toEqual([{ x: 1 }])
    await db.close()
  })

  test('queued statements run in order before the next statement reads', async () => {
    const db = guardDriver(libsqlDriver({ url: url() }))
    await db.execute({ sql: 'CREATE TABLE t (x INTEGER)' })
    const seen = await db.transaction(async (tx) => {
      tx.defer?.({ sql: 'INSERT INTO t VALUES (1)' })
      tx.defer?.({ sql: 'UPDATE t SET x = x * 10' })
      tx.defer?.({ sql: 'INSERT INTO t VALUES (2)' })
      return (await tx.execute({ sql: 'SELECT x FROM t ORDER BY rowid' })).rows
    })
    expect(seen).toEqual([{ x: 10 }, { x: 2 }])
    await db.close()
  })

  test('a transaction made only of queued statements waits for another writer, then commits', async () => {
    const a = guardDriver(libsqlDriver({ url: url(), busyTimeoutMs: 5000 }))
    const b = guardDriver(libsqlDriver({ url: url(), busyTimeoutMs: 5000 }))
    await a.execute({ sql: 'CREATE TABLE t (x INTEGER)' })
    let release!: () => void
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    let locked!: () => void
    const hasLock = new Promise<void>((resolve) => {
      locked = resolve
    })
    const first = a.transaction(async (tx) => {
      await tx.execute({ sql: 'INSERT INTO t VALUES (1)' })
      locked()
      await held
    })
    await hasLock
    // b's BEGIN goes with its COMMIT request and is refused while a writes: retried, not lost.
    const second = b.transaction(async (tx) => {
      tx.defer?.({ sql: 'INSERT INTO t VALUES (2)' })
      tx.defer?.({ sql: 'INSERT INTO t VALUES (3)' })
    })
    await new Promise((resolve) => setTimeout(resolve, 150))
    release()
    await first
    await second
    const { rows } = await a.execute({ sql: 'SELECT x FROM t ORDER BY x' })
    expect(rows).toEqual([{ x: 1 }, { x: 2 }, { x: 3 }])
    await a.close()
    await b.close()
  })
})
