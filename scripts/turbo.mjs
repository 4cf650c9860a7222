// Runs turbo with the Node.js version in the environment it hashes (turbo.json `globalEnv`), so a
// run on another Node.js (the CI's Node 24 leg, a developer switching versions) never replays
// results cached under a different one: native modules and engine behaviour differ per version.
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'

const turbo = join(new URL('..', import.meta.url).pathname, 'node_modules', '.bin', 'turbo')
const result = spawnSync(turbo, process.argv.slice(2), {
  stdio: 'inherit',
  env: { ...process.env, AGENTFS_NODE_VERSION: process.version },
})
if (result.error) throw result.error
process.exit(result.status ?? 1)
