// Builds a part of the workspace through turbo, quietly: turbo's own output shows only when the
// build fails, and a line says what is going on when it takes longer than a cached build does.
//   node scripts/build-quietly.mjs FILTER "WHAT"   (e.g. @agentfs/demo... "the demo")
import { spawn } from 'node:child_process'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname

/** Resolves when the build succeeded; exits the process with turbo's output when it failed. */
export async function buildQuietly(filter, what) {
  const args = [join(root, 'scripts', 'turbo.mjs'), 'run', 'build', `--filter=${filter}`]
  const child = spawn(process.execPath, [...args, '--output-logs=errors-only'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  // A cached build answers in about a second.
  const slow = setTimeout(
    () =>
      process.stderr.write(
        `building ${what} and the packages it uses (about 2 to 5 minutes the first time)…\n`,
      ),
    3000,
  )
  const status = await new Promise((resolve) => child.on('close', resolve))
  clearTimeout(slow)
  if (status !== 0) {
    process.stderr.write(`${output}building ${what} failed (above)\n`)
    process.exit(typeof status === 'number' ? status : 1)
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [filter, what] = process.argv.slice(2)
  if (!filter || !what) {
    console.error('usage: node scripts/build-quietly.mjs FILTER WHAT')
    process.exit(2)
  }
  await buildQuietly(filter, what)
}
