import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { type HranaServer, startHranaServer } from '@agentfs/hrana-server'
import { AgentFS } from '@agentfs/sdk'
import { afterEach, beforeEach, expect, test } from 'vitest'

let dir: string
let server: HranaServer
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-remote-url-'))
  server = await startHranaServer({ path: join(dir, 'db.sqlite') })
})
afterEach(async () => {
  await server.close()
  await rm(dir, { recursive: true, force: true })
})

test('a libsql:// URL (HTTP on Node.js) opens the SDK on a remote server; a second client sees the same files', async () => {
  const port = new URL(server.url).port
  const url = `libsql://127.0.0.1:${port}?tls=0`
  const a = await AgentFS.open({ driver: libsqlDriver({ url, authToken: 'any' }) })
  await a.fs.mkdir('/notes')
  await a.fs.writeFile('/notes/todo.md', '- ship it\n')
  await a.kv.set('k', { v: 1 })
  const b = await AgentFS.open({ driver: libsqlDriver({ url: server.url }) })
  expect(await b.fs.readFile('/notes/todo.md', 'utf8')).toBe('- ship it\n')
  expect(await b.kv.get('k')).toEqual({ v: 1 })
  await a.close()
  await b.close()
  expect(server.pipelines).toBeGreaterThan(0)
})

test('a remote client factory needs `remote: true`, so capabilities are right before first use', async () => {
  const { createClient } = await import('@libsql/client')
  const driver = libsqlDriver({
    remote: true,
    client: () => createClient({ url: server.url, intMode: 'bigint' }),
  })
  expect(driver.capabilities.concurrentTransactions).toBe(true)
  await driver.execute({ sql: 'SELECT 1' })
  await driver.close()
  const wrong = libsqlDriver({ client: () => createClient({ url: server.url, intMode: 'bigint' }) })
  expect(wrong.capabilities.concurrentTransactions).toBe(false)
  const error = await wrong.execute({ sql: 'SELECT 1' }).catch((e: unknown) => e)
  expect(String(error)).toMatch(/set `remote: true`/)
  await wrong.close()
})

test('a ws:// URL runs the SDK over a WebSocket; an HTTP client sees the same files', async () => {
  const a = await AgentFS.open({ driver: libsqlDriver({ url: server.wsUrl, authToken: 'any' }) })
  await a.fs.mkdir('/notes')
  await a.fs.writeFile('/notes/todo.md', '- ship it\n')
  await a.fs.rename('/notes/todo.md', '/notes/done.md')
  await a.kv.set('k', { v: 1 })
  const b = await AgentFS.open({ driver: libsqlDriver({ url: server.url }) })
  expect(await b.fs.readFile('/notes/done.md', 'utf8')).toBe('- ship it\n')
  expect(await b.kv.get('k')).toEqual({ v: 1 })
  await a.close()
  await b.close()
  expect(server.wsRequests).toBeGreaterThan(0)
})
