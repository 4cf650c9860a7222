import { runConformance } from '@agentfs/conformance'
import { libsqlDriver } from '../src/index.js'

runConformance({
  createDriver: ({ tempDir, slot }) =>
    libsqlDriver({ url: `file:${tempDir}/db-${slot}.sqlite`, busyTimeoutMs: 100 }),
})
