// Lints every published package as the registry will see it: publint --strict (package.json
// fields, exports, files) and attw --profile esm-only (types resolve for ESM consumers); the
// README must have no relative links (they break on the registry page) and a LICENSE must ship.
// Runs after `pnpm build`; exits non-zero when any package has a problem.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const dirs = [
  ...readdirSync(join(root, 'packages')).map((d) => join('packages', d)),
  'apps/cli',
  'conformance',
].filter((d) => existsSync(join(root, d, 'package.json')))

let failed = 0
for (const dir of dirs) {
  const pkg = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'))
  if (pkg.private) continue
  const run = (cmd, args) => {
    try {
      execFileSync(cmd, args, { cwd: join(root, dir), stdio: 'pipe', encoding: 'utf8' })
      return undefined
    } catch (error) {
      return `${error.stdout ?? ''}${error.stderr ?? ''}`.trim()
    }
  }
  const bin = (name) => join(root, 'node_modules', '.bin', name)
  const readme = readFileSync(join(root, dir, 'README.md'), 'utf8')
  const relative = [...readme.matchAll(/\]\((?!https?:|mailto:|#)([^)]+)\)/g)].map((m) => m[1])
  const problems = [
    relative.length > 0
      ? `README.md has relative links, which break on the registry page: ${relative.join(', ')}`
      : undefined,
    existsSync(join(root, dir, 'LICENSE')) ? undefined : 'no LICENSE file',
    run(bin('publint'), ['--strict']),
    // A CLI has no types to resolve; libraries must resolve for ESM consumers.
    pkg.bin ? undefined : run(bin('attw'), ['--pack', '--profile', 'esm-only', '.']),
  ].filter((p) => p !== undefined)
  if (problems.length > 0) {
    failed++
    console.error(`✗ ${pkg.name}\n${problems.join('\n')}`)
  } else console.log(`✓ ${pkg.name}`)
}
if (failed > 0) {
  console.error(`${failed} package(s) would publish with problems`)
  process.exit(1)
}
