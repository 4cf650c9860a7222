import { runConformance } from '@agentfs/conformance'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { type HranaServer, startHranaServer } from '@agentfs/hrana-server'
import { afterEach } from 'vitest'

// The libSQL driver in remote mode over a WebSocket (`ws://`: the client's Hrana 3 transport,
// batches through cursors) to the libSQL protocol server on loopback, one per database file.
const servers = new Map<string, Promise<HranaServer>>()
afterEach(async () => {
  const running = [...servers.values()]
  servers.clear()
  for (const server of running) await (await server).close()
})

runConformance({
  name: 'libsql remote (Hrana over WebSocket)',
  createDriver: async ({ tempDir, slot }) => {
    const path = `${tempDir}/db-${slot}.sqlite`
    let server = servers.get(path)
    if (!server) {
      server = startHranaServer({ path })
      servers.set(path, server)
    }
    return libsqlDriver({ url: (await server).wsUrl, busyTimeoutMs: 2000 })
  },
})
