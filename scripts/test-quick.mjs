// `pnpm test:quick`: every test package, with the randomized suites at a few runs each and
// without the two slowest end-to-end checks (the benchmark's smoke run and installing the packed
// packages with npm), for the inner loop. `pnpm check` runs everything at CI size.
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const env = {
  ...process.env,
  AGENTFS_FUZZ_RUNS: process.env.AGENTFS_FUZZ_RUNS ?? '3',
  AGENTFS_HISTORY_FUZZ_RUNS: process.env.AGENTFS_HISTORY_FUZZ_RUNS ?? '3',
  AGENTFS_CRASH_KILLS: process.env.AGENTFS_CRASH_KILLS ?? '3',
}
const result = spawnSync(
  process.execPath,
  [
    join(root, 'scripts', 'turbo.mjs'),
    'run',
    'test',
    '--filter=!@agentfs/bench',
    '--filter=!@agentfs/packed-install',
    ...process.argv.slice(2),
  ],
  { stdio: 'inherit', env },
)
if (result.error) throw result.error
process.exit(result.status ?? 1)
