// `pnpm agentfs …`: the agentfs command from a clone of the repository, built first when its
// sources changed (turbo replays the build from its cache otherwise; its output shows only on a
// failure), then run with the arguments as given, in the directory pnpm was started from.
import { spawn, spawnSync } from 'node:child_process'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const turbo = [join(root, 'scripts', 'turbo.mjs'), 'run', 'build', '--filter=@agentfs/cli...']
const child = spawn(process.execPath, [...turbo, '--output-logs=errors-only'], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'pipe'],
})
let output = ''
child.stdout.on('data', (chunk) => (output += chunk))
child.stderr.on('data', (chunk) => (output += chunk))
// A cached build answers in about a second; say what is going on when it does not.
const slow = setTimeout(
  () =>
    process.stderr.write(
      'agentfs: building the CLI and the packages it uses (about 2 minutes the first time)…\n',
    ),
  3000,
)
const status = await new Promise((resolve) => child.on('close', resolve))
clearTimeout(slow)
if (status !== 0) {
  process.stderr.write(`${output}agentfs: building the CLI failed (above)\n`)
  process.exit(typeof status === 'number' ? status : 1)
}
const args = [join(root, 'apps', 'cli', 'bin', 'agentfs.js'), ...process.argv.slice(2)]
const run = spawnSync(process.execPath, args, {
  // biome-ignore lint/suspicious/noUndeclaredEnvVars: pnpm sets it; this script is no turbo task
  cwd: process.env.INIT_CWD ?? process.cwd(),
  stdio: 'inherit',
})
process.exit(run.status ?? 1)
