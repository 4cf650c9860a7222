import { runConformance } from '@agentfs/conformance'
import type { Driver } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { nodeSqliteDriver, nodeSqliteProblem } from '@agentfs/driver-node-sqlite'
import { tursoDriver } from '@agentfs/driver-turso'

// The whole conformance suite on databases that compress file content (zstd), for each engine:
// the same results and the same goldens as plain databases (dumps show chunks decoded).
// Node.js 22.15+ compresses with its own zstd, older versions with its WebAssembly build.
const engines: Record<string, (path: string) => Driver> = {
  'better-sqlite3': (path) => betterSqlite3Driver({ path, busyTimeoutMs: 100 }),
  libsql: (path) => libsqlDriver({ url: `file:${path}`, busyTimeoutMs: 100 }),
  turso: (path) => tursoDriver({ path, busyTimeoutMs: 100 }),
  ...(nodeSqliteProblem() === undefined
    ? { 'node:sqlite': (path: string) => nodeSqliteDriver({ path, busyTimeoutMs: 100 }) }
    : {}),
}

for (const [name, driverOf] of Object.entries(engines))
  runConformance({
    name: `compressed (zstd): ${name}`,
    compression: 'zstd',
    createDriver: ({ tempDir, slot }) => driverOf(`${tempDir}/db-${slot}.sqlite`),
  })
