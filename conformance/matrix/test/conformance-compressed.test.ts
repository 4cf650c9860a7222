import { runConformance } from '@agentfs/conformance'
import { canCompress, type Driver } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { nodeSqliteDriver, nodeSqliteProblem } from '@agentfs/driver-node-sqlite'
import { tursoDriver } from '@agentfs/driver-turso'
import { test } from 'vitest'

// The whole conformance suite on databases that compress file content (zstd), for each engine:
// the same results and the same goldens as plain databases (dumps show chunks decoded).
// Creating one needs Node.js 22.15 or later; reading them is tested on every version in
// @agentfs/fs's compression tests.
const engines: Record<string, (path: string) => Driver> = {
  'better-sqlite3': (path) => betterSqlite3Driver({ path, busyTimeoutMs: 100 }),
  libsql: (path) => libsqlDriver({ url: `file:${path}`, busyTimeoutMs: 100 }),
  turso: (path) => tursoDriver({ path, busyTimeoutMs: 100 }),
  ...(nodeSqliteProblem() === undefined
    ? { 'node:sqlite': (path: string) => nodeSqliteDriver({ path, busyTimeoutMs: 100 }) }
    : {}),
}

if (canCompress())
  for (const [name, driverOf] of Object.entries(engines))
    runConformance({
      name: `compressed (zstd): ${name}`,
      compression: 'zstd',
      createDriver: ({ tempDir, slot }) => driverOf(`${tempDir}/db-${slot}.sqlite`),
    })
else
  test.skip(`compressed conformance — skipped: Node.js ${process.version} cannot compress (22.15 or later)`, () => {})
