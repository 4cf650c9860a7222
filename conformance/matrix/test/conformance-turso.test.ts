import { runConformance } from '@agentfs/conformance'
import { tursoDriver } from '@agentfs/driver-turso'

// The Turso engine (`@tursodatabase/database`) on local files.
runConformance({
  name: 'turso',
  createDriver: ({ tempDir, slot }) =>
    tursoDriver({ path: `${tempDir}/db-${slot}.sqlite`, busyTimeoutMs: 100 }),
})

runConformance({
  name: 'turso :memory:',
  createDriver: () => tursoDriver({ path: ':memory:' }),
})
