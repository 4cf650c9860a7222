// Runs ZenFS's published fs test suite (@zenfs/core's tests/fs/*.test.ts, from node_modules)
// on AgentFS through `agent.nodeFs()`: `tsx --test` with SETUP naming our setup (ZenFS's own
// CLI needs Node 22's globSync). Every failure must be a known divergence with its reason.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { KNOWN, MIN_PASSING } from './known.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const zenfs = dirname(dirname(fileURLToPath(import.meta.resolve('@zenfs/core'))))
const suite = join(zenfs, 'tests', 'fs')
const files = readdirSync(suite)
  .filter((f) => f.endsWith('.test.ts'))
  .sort()
  .map((f) => join(suite, f))
const tsx = join(here, '..', 'node_modules', '.bin', 'tsx')
const run = spawnSync(tsx, ['--test', '--test-reporter=tap', ...files], {
  env: { ...process.env, SETUP: join(here, 'setup.ts') },
  encoding: 'utf8',
  maxBuffer: 64 << 20,
  timeout: 10 * 60_000,
})
if (run.error) throw run.error
const tap = run.stdout

const summary = (key) => Number(new RegExp(`^# ${key} (\\d+)$`, 'm').exec(tap)?.[1] ?? Number.NaN)
const total = summary('tests')
const passed = summary('pass')
const failedNames = []
const skippedNames = []
for (const line of tap.split('\n')) {
  const m = /^(\s+)(not ok|ok) \d+ - (.*?)(?: # (SKIP|TODO)\b.*)?$/.exec(line)
  if (!m) continue
  const name = m[3].replaceAll('\\#', '#')
  if (m[2] === 'not ok') failedNames.push(name)
  else if (m[4]) skippedNames.push(name)
}

const major = Number(process.versions.node.split('.')[0])
const known = new Map(KNOWN.map((k) => [k.name, k]))
const problems = []
for (const name of failedNames) {
  const k = known.get(name)
  if (k?.kind !== 'fail') problems.push(`unexpected failure: ${name}`)
}
for (const name of skippedNames)
  if (known.get(name)?.kind !== 'skip') problems.push(`unexpected skip: ${name}`)
for (const k of KNOWN) {
  const applies = k.nodeBelow === undefined || major < k.nodeBelow
  if (k.kind === 'fail' && applies && !failedNames.includes(k.name))
    problems.push(`listed as failing but passed (remove it from known.mjs): ${k.name}`)
}
if (!(passed >= MIN_PASSING)) problems.push(`${passed} passed, fewer than ${MIN_PASSING}`)

console.log(
  `ZenFS fs suite on AgentFS (Node ${process.versions.node}): ${passed} of ${total} passed`,
)
for (const name of [...new Set([...failedNames, ...skippedNames])]) {
  const k = known.get(name)
  console.log(
    `  ${failedNames.includes(name) ? 'fails' : 'skipped'}: ${name} — ${k?.reason ?? 'NOT EXPLAINED'}`,
  )
}
if (problems.length > 0) {
  console.error(`\n${problems.join('\n')}`)
  if (problems.some((p) => p.startsWith('unexpected')))
    console.error(`\nFull TAP output:\n${tap.slice(-20_000)}\n${run.stderr.slice(-5_000)}`)
  process.exit(1)
}
