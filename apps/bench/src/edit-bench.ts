// pnpm bench:edits [--per N] [--seed N]
// Edit success before (exact match only) and after (the tolerance ladder) on a corpus made from
// the project's own sources, one drift per case (see edit-corpus.ts). Prints a Markdown table.
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { parseArgs } from 'node:util'
import { DRIFTS, loadSources, makeCases, runCorpus } from './edit-corpus.js'

const { values } = parseArgs({
  options: { per: { type: 'string', default: '200' }, seed: { type: 'string', default: '43' } },
})
const per = Number(values.per)
const seed = Number(values.seed)
let root = process.cwd()
while (!existsSync(join(root, 'pnpm-workspace.yaml')) && dirname(root) !== root)
  root = dirname(root)
const sources = loadSources(root)
const cases = DRIFTS.flatMap((d, i) => makeCases(sources, d, per, seed + i))
const start = performance.now()
const result = await runCorpus(cases)
const ms = performance.now() - start
const pct = (n: number, of: number) => `${((100 * n) / of).toFixed(1)} %`
const lines = [
  `${cases.length} edit requests from ${sources.length} source files (seed ${seed}), ${(ms / cases.length).toFixed(2)} ms per request`,
  '',
  '| drift | cases | exact-only: success | refused | wrong | ladder: success | refused | wrong |',
  '|---|---:|---:|---:|---:|---:|---:|---:|',
]
const total = { cases: 0, bs: 0, as: 0, bw: 0, aw: 0 }
for (const [drift, row] of Object.entries(result.byDrift)) {
  lines.push(
    `| ${drift} | ${row.cases} | ${pct(row.before.success, row.cases)} | ${row.before.refused} | ${row.before.wrong} | ${pct(row.after.success, row.cases)} | ${row.after.refused} | ${row.after.wrong} |`,
  )
  total.cases += row.cases
  total.bs += row.before.success
  total.as += row.after.success
  total.bw += row.before.wrong
  total.aw += row.after.wrong
}
lines.push(
  `| **all** | ${total.cases} | ${pct(total.bs, total.cases)} | | ${total.bw} | ${pct(total.as, total.cases)} | | ${total.aw} |`,
)
console.log(lines.join('\n'))
for (const c of result.wrongAfter.slice(0, 5))
  console.log(`\nWRONG (${c.drift}, ${c.source}):\n${JSON.stringify(c.oldString)}`)
if (result.wrongAfter.length > 0) process.exitCode = 1
