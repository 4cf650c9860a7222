import { runConformance } from '@agentfs/conformance'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { type HranaServer, startHranaServer } from '@agentfs/hrana-server'
import { afterEach } from 'vitest'

// The libSQL driver in remote mode, over HTTP to a libSQL protocol server on loopback (one per
// database file, started here and stopped after each test).
const servers = new Map<string, Promise<HranaServer>>()
afterEach(async () => {
  const running = [...servers.values()]
  servers.clear()
  for (const server of running) await (await server).close()
})

runConformance({
  name: 'libsql remote (Hrana over HTTP)',
  createDriver: async ({ tempDir, slot }) => {
    const path = `${tempDir}/db-${slot}.sqlite`
    let server = servers.get(path)
    if (!server) {
      server = startHranaServer({ path })
      servers.set(path, server)
    }
    return libsqlDriver({ url: (await server).url, busyTimeoutMs: 2000 })
  },
})
