// Runs turbo with the Node.js version in the environment the test task hashes (turbo.json), so a
// run on another Node.js (the CI's Node 22 and 24 legs, a developer switching versions) never
// replays test results cached under a different one: native modules and engine behaviour differ
// per version. Builds (tsup) and type checks are the same on every Node.js and are shared.
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'

const turbo = join(new URL('..', import.meta.url).pathname, 'node_modules', '.bin', 'turbo')
const result = spawnSync(turbo, process.argv.slice(2), {
  stdio: 'inherit',
  env: { ...process.env, AGENTFS_NODE_VERSION: process.version },
})
if (result.error) throw result.error
process.exit(result.status ?? 1)
