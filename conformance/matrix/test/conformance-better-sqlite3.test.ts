import { runConformance } from '@agentfs/conformance'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'

runConformance({
  reference: true,
  createDriver: ({ tempDir, slot }) =>
    betterSqlite3Driver({ path: `${tempDir}/db-${slot}.sqlite`, busyTimeoutMs: 100 }),
})
