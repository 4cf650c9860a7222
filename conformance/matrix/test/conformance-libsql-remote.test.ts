import { runConformance } from '@agentfs/conformance'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { type HranaServer, startHranaServer } from '@agentfs/hrana-server'
import { afterEach } from 'vitest'

// The libSQL driver in remote mode against a libSQL protocol server on loopback (one per
// database file, started here and stopped after each test), over each transport the client
// speaks: HTTP, and a WebSocket (`ws://`: Hrana 3, batches through cursors).
const servers = new Map<string, Promise<HranaServer>>()
afterEach(async () => {
  const running = [...servers.values()]
  servers.clear()
  for (const server of running) await (await server).close()
})

for (const [transport, urlOf] of [
  ['HTTP', (server: HranaServer) => server.url],
  ['WebSocket', (server: HranaServer) => server.wsUrl],
] as const)
  runConformance({
    name: `libsql remote (Hrana over ${transport})`,
    createDriver: async ({ tempDir, slot }) => {
      const path = `${tempDir}/db-${transport}-${slot}.sqlite`
      let server = servers.get(path)
      if (!server) {
        server = startHranaServer({ path })
        servers.set(path, server)
      }
      return libsqlDriver({ url: urlOf(await server), busyTimeoutMs: 2000 })
    },
  })
