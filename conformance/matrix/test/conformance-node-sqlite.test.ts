import { runConformance } from '@agentfs/conformance'
import { nodeSqliteDriver, nodeSqliteProblem } from '@agentfs/driver-node-sqlite'
import { test } from 'vitest'

// node:sqlite exists from Node 22.5 and this driver needs 22.16: on older Node.js the suite is
// skipped with the reason printed (.ci/run's Node 24 leg runs it).
const problem = nodeSqliteProblem()
if (problem !== undefined) {
  console.log(`node:sqlite conformance skipped: ${problem}`)
  test.skip(`node:sqlite conformance — ${problem}`, () => {})
} else {
  runConformance({
    createDriver: ({ tempDir, slot }) =>
      nodeSqliteDriver({ path: `${tempDir}/db-${slot}.sqlite`, busyTimeoutMs: 100 }),
  })
  runConformance({
    name: 'node:sqlite :memory:',
    createDriver: () => nodeSqliteDriver({ path: ':memory:' }),
  })
}
