// `pnpm pack:all`: every published package as the registry would get it (built, then
// `pnpm pack`, which turns workspace: ranges into versions), in .packs/ (or --dest DIR), and
// for each package the npm install line that installs it from those tarballs in any project:
// an @agentfs package's own @agentfs dependencies are not on the registry yet, so the line
// names their tarballs too; everything else comes from the registry.
//   node scripts/pack-all.mjs [--dest DIR] [--json]
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const arg = (name) => {
  const i = process.argv.indexOf(name)
  return i === -1 ? undefined : process.argv[i + 1]
}
const dest = resolve(arg('--dest') ?? join(root, '.packs'))
const asJson = process.argv.includes('--json')

const dirs = [
  ...readdirSync(join(root, 'packages')).map((d) => join('packages', d)),
  'apps/cli',
  'conformance',
].filter((d) => existsSync(join(root, d, 'package.json')))
const manifests = new Map()
for (const dir of dirs) {
  const pkg = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'))
  if (!pkg.private) manifests.set(pkg.name, { dir, pkg })
}

const step = (what, command, args, cwd = root) => {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8' })
  if (result.status !== 0) {
    process.stderr.write(`${result.stdout}${result.stderr}pack:all: ${what} failed\n`)
    process.exit(1)
  }
}
if (!asJson) process.stderr.write('pack:all: building the packages…\n')
step('the build', process.execPath, [
  join(root, 'scripts', 'turbo.mjs'),
  'run',
  'build',
  ...[...manifests.keys()].map((name) => `--filter=${name}`),
  '--output-logs=errors-only',
])
mkdirSync(dest, { recursive: true })
const tarballs = new Map()
for (const [name, { dir, pkg }] of manifests) {
  step(`packing ${name}`, 'pnpm', ['pack', '--pack-destination', dest], join(root, dir))
  tarballs.set(name, join(dest, `${name.slice(1).replace('/', '-')}-${pkg.version}.tgz`))
}

/** The @agentfs packages `name` needs at run time, itself included. */
function closure(name) {
  const seen = new Set()
  const queue = [name]
  while (queue.length > 0) {
    const next = queue.pop()
    if (seen.has(next) || !manifests.has(next)) continue
    seen.add(next)
    queue.push(...Object.keys(manifests.get(next).pkg.dependencies ?? {}))
  }
  return [...seen].sort()
}

/** What the package's README installs with it that is not AgentFS (a driver's engine, say). */
function companions(dir) {
  const readme = readFileSync(join(root, dir, 'README.md'), 'utf8')
  const line = /^pnpm add ([^#\n]+)/m.exec(readme)
  return line ? line[1].trim().split(/\s+/) : []
}

const lines = {}
for (const [name, { dir }] of manifests) {
  const extra = companions(dir).filter((p) => !p.startsWith('@agentfs/'))
  const withExtra = [
    ...new Set([name, ...companions(dir).filter((p) => p.startsWith('@agentfs/'))]),
  ]
  const files = [...new Set(withExtra.flatMap(closure))].sort().map((n) => tarballs.get(n))
  lines[name] = `npm install ${[...files, ...extra].join(' ')}`
}
if (asJson)
  console.log(JSON.stringify({ dest, tarballs: Object.fromEntries(tarballs), lines }, null, 2))
else {
  console.log(`${tarballs.size} packages packed in ${dest}; to install one in another project:\n`)
  for (const [name, line] of Object.entries(lines)) console.log(`${name}:\n  ${line}\n`)
}
