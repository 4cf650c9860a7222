// Lints every published package as the registry will see it: publint --strict (package.json
// fields, exports, files) and attw --profile esm-only (types resolve for ESM consumers); the
// README must have no relative links (they break on the registry page) and a LICENSE must ship.
// Runs after `pnpm build`; exits non-zero when any package has a problem.
import { execFile } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const root = new URL('..', import.meta.url).pathname
const dirs = [
  ...readdirSync(join(root, 'packages')).map((d) => join('packages', d)),
  'apps/cli',
  'conformance',
].filter((d) => existsSync(join(root, d, 'package.json')))
const bin = (name) => join(root, 'node_modules', '.bin', name)
const exec = promisify(execFile)

/** The problems of one package, or an empty list. */
async function check(dir) {
  const pkg = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'))
  const run = async (cmd, args) => {
    try {
      await exec(cmd, args, { cwd: join(root, dir), encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 })
      return undefined
    } catch (error) {
      return `${error.stdout ?? ''}${error.stderr ?? ''}`.trim() || String(error.message)
    }
  }
  const readme = readFileSync(join(root, dir, 'README.md'), 'utf8')
  const relative = [...readme.matchAll(/\]\((?!https?:|mailto:|#)([^)]+)\)/g)].map((m) => m[1])
  const problems = [
    relative.length > 0
      ? `README.md has relative links, which break on the registry page: ${relative.join(', ')}`
      : undefined,
    existsSync(join(root, dir, 'LICENSE')) ? undefined : 'no LICENSE file',
    await run(bin('publint'), ['--strict']),
    // A CLI has no types to resolve; libraries must resolve for ESM consumers.
    pkg.bin ? undefined : await run(bin('attw'), ['--pack', '--profile', 'esm-only', '.']),
  ].filter((p) => p !== undefined)
  return { name: pkg.name, problems }
}

// The packages are checked a few at a time (each check packs its package and reads it back), and
// reported in their listed order.
const published = dirs.filter(
  (d) => !JSON.parse(readFileSync(join(root, d, 'package.json'), 'utf8')).private,
)
const results = new Array(published.length)
let next = 0
await Promise.all(
  Array.from({ length: Math.max(1, Math.min(4, availableParallelism())) }, async () => {
    while (next < published.length) {
      const index = next++
      results[index] = await check(published[index])
    }
  }),
)
let failed = 0
for (const { name, problems } of results) {
  if (problems.length > 0) {
    failed++
    console.error(`✗ ${name}\n${problems.join('\n')}`)
  } else console.log(`✓ ${name}`)
}
if (failed > 0) {
  console.error(`${failed} package(s) would publish with problems`)
  process.exit(1)
}
