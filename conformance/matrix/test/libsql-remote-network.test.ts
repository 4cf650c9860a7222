import { mkdtemp, rm } from 'node:fs/promises'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isAgentFsError } from '@agentfs/core'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { type HranaServer, startHranaServer } from '@agentfs/hrana-server'
import { afterEach, beforeEach, expect, test } from 'vitest'

// Transport failures between the driver and the server, made by a TCP proxy on loopback that
// resets the connections it is told to.

let dir: string
let server: HranaServer
let proxy: Server
let proxyUrl: string
/** Connections to reset before forwarding resumes. */
let resets = 0
/** Connections the proxy accepted. */
let accepted = 0
const open = new Set<Socket>()

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-remote-net-'))
  server = await startHranaServer({ path: join(dir, 'db.sqlite') })
  const port = Number(new URL(server.url).port)
  resets = 0
  accepted = 0
  proxy = createServer((client) => {
    accepted++
    if (resets > 0) {
      resets--
      client.resetAndDestroy()
      return
    }
    const upstream = connect(port, '127.0.0.1')
    open.add(client)
    client.on('close', () => open.delete(client))
    client.pipe(upstream).pipe(client)
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', () => resolve()))
  proxyUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`
})
afterEach(async () => {
  for (const socket of open) socket.destroy()
  await new Promise<void>((resolve) => proxy.close(() => resolve()))
  await server.close()
  await rm(dir, { recursive: true, force: true })
})

/** The next `n` connections are reset, and the open ones are cut (no keep-alive reuse). */
function failNext(n: number): void {
  resets = n
  for (const socket of open) socket.destroy()
}

test('a read that fails in transport is tried again and succeeds', async () => {
  const driver = libsqlDriver({ url: proxyUrl })
  await driver.execute({ sql: 'CREATE TABLE t (x)' })
  await driver.execute({ sql: 'INSERT INTO t VALUES (1)' })
  failNext(2)
  const before = accepted
  const { rows } = await driver.execute({ sql: 'SELECT x FROM t' })
  expect(rows).toEqual([{ x: 1 }])
  expect(accepted - before).toBeGreaterThanOrEqual(3)
  await driver.close()
})

test('a write that fails in transport is not sent again: a typed REMOTE error, run at most once', async () => {
  const driver = libsqlDriver({ url: proxyUrl })
  await driver.execute({ sql: 'CREATE TABLE t (x)' })
  failNext(1)
  const before = accepted
  const error = await driver.execute({ sql: 'INSERT INTO t VALUES (1)' }).catch((e: unknown) => e)
  expect(isAgentFsError(error, 'REMOTE')).toBe(true)
  expect(String((error as Error).message)).toMatch(/Check the URL, the auth token and the network/)
  expect(accepted - before).toBe(1)
  const { rows } = await driver.execute({ sql: 'SELECT count(*) AS n FROM t' })
  expect(rows).toEqual([{ n: 0 }])
  await driver.close()
})

test('a server that stays unreachable fails a read after a bounded number of tries', async () => {
  const driver = libsqlDriver({ url: proxyUrl })
  await driver.execute({ sql: 'SELECT 1' })
  failNext(100)
  const before = accepted
  const started = Date.now()
  const error = await driver.execute({ sql: 'SELECT 1' }).catch((e: unknown) => e)
  expect(isAgentFsError(error, 'REMOTE')).toBe(true)
  expect(accepted - before).toBeLessThanOrEqual(4 * 3) // 4 tries, the client's own reconnects
  expect(Date.now() - started).toBeLessThan(5000)
  await driver.close()
})
