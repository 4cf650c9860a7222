import { runConformance } from '@agentfs/conformance'
import { libsqlDriver } from '@agentfs/driver-libsql'

runConformance({
  createDriver: ({ tempDir, slot }) =>
    libsqlDriver({ url: `file:${tempDir}/db-${slot}.sqlite`, busyTimeoutMs: 100 }),
})
