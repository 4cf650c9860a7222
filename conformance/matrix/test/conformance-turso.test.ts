import { runConformance } from '@agentfs/conformance'
import { tursoAsyncDriver, tursoDriver } from '@agentfs/driver-turso'
import { connect } from '@tursodatabase/database'

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

// Turso's promise API (`connect` of `@tursodatabase/database`; `@tursodatabase/sync`'s
// `Database` is the same class with push and pull added).
runConformance({
  name: 'turso (promise API)',
  createDriver: async ({ tempDir, slot }) =>
    tursoAsyncDriver({
      database: await connect(`${tempDir}/db-async-${slot}.sqlite`),
      busyTimeoutMs: 100,
    }),
})
