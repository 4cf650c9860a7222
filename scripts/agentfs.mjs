// `pnpm agentfs …`: the agentfs command from a clone of the repository, built first when its
// sources changed (turbo replays the build from its cache otherwise; its output shows only on a
// failure), then run with the arguments as given, in the directory pnpm was started from.
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { buildQuietly } from './build-quietly.mjs'

const root = new URL('..', import.meta.url).pathname
await buildQuietly('@agentfs/cli...', 'the CLI')
const args = [join(root, 'apps', 'cli', 'bin', 'agentfs'), ...process.argv.slice(2)]
const run = spawnSync(process.execPath, args, {
  // biome-ignore lint/suspicious/noUndeclaredEnvVars: pnpm sets it; this script is no turbo task
  cwd: process.env.INIT_CWD ?? process.cwd(),
  stdio: 'inherit',
})
process.exit(run.status ?? 1)
