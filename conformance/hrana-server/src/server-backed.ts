import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Driver } from '@agentfs/core'
import { type HranaServer, startHranaServer } from './server.js'

/**
 * A driver on a fresh database behind a test server of its own: `make(url)` builds the remote
 * driver once the server runs (on first use); `close()` closes the driver, stops the server and
 * deletes the database. Capabilities are read before first use from a driver made for an unused
 * URL (remote drivers connect lazily, so that one never connects).
 */
export function serverBacked(make: (url: string) => Driver): Driver {
  const probe = make('http://127.0.0.1:9')
  const capabilities = probe.capabilities
  void probe.close()
  let started: Promise<{ driver: Driver; server: HranaServer; dir: string }> | undefined
  const inner = () => {
    started ??= (async () => {
      const dir = await mkdtemp(join(tmpdir(), 'agentfs-remote-'))
      const server = await startHranaServer({ path: join(dir, 'db.sqlite') })
      return { driver: make(server.url), server, dir }
    })()
    return started
  }
  return {
    name: probe.name,
    capabilities,
    execute: async (statement) => (await inner()).driver.execute(statement),
    transaction: async (fn) => (await inner()).driver.transaction(fn),
    executeScript: async (sql) => (await inner()).driver.executeScript(sql),
    async close() {
      if (!started) return
      const { driver, server, dir } = await started
      await driver.close()
      await server.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
}
