// pnpm bench [--scale small|full] [--impl a,b] [--workloads W1,W2] [--runs N] [--out FILE]
// Runs every implementation in its own process on the same workloads and prints throughput,
// latency, memory and disk, with ratios to plain spec SQL (the target's denominator) and to the
// reference agentfs-sdk, then each performance target met or missed. With --runs N (default 3
// at full scale, 1 at small) the implementations run N times interleaved and every number is
// the median of the N runs. Writes the full report as JSON.
import { spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { fuseReadiness, GROUPED_DELAY_MS, runFuseWorkload } from './fuse-workload.js'
import { IMPLEMENTATIONS } from './impls.js'
import {
  fmt,
  type ImplReport,
  printAgentWorkloads,
  printGuaranteeCosts,
  printTable,
  roundThreeTargets,
} from './report.js'
import type { Scale, WorkloadResult } from './workloads.js'

const { values } = parseArgs({
  options: {
    scale: { type: 'string', default: 'full' },
    impl: { type: 'string' },
    workloads: { type: 'string' },
    out: { type: 'string' },
    runs: { type: 'string' },
  },
})
const scale = values.scale as Scale
if (scale !== 'small' && scale !== 'full') throw new Error('--scale must be small or full')
const impls = values.impl ? values.impl.split(',') : [...IMPLEMENTATIONS]
const here = dirname(fileURLToPath(import.meta.url))

function runChild(impl: string): Promise<ImplReport> {
  return new Promise((resolve, reject) => {
    const args = [
      join(here, 'child.js'),
      impl,
      scale,
      ...(values.workloads ? [values.workloads] : []),
    ]
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
    })
    child.on('close', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split('\n').at(-1)!) as ImplReport)
        : reject(new Error(`${impl} failed with exit code ${code}`)),
    )
  })
}

const runCount = Number(values.runs ?? (scale === 'full' ? 3 : 1))
if (!Number.isInteger(runCount) || runCount < 1 || runCount > 20)
  throw new Error('--runs must be an integer from 1 to 20')
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}
/** One report of several runs of an implementation: each number the median of the runs. */
function medianReport(runs: ImplReport[]): ImplReport {
  const first = runs[0]!
  if (runs.length === 1) return first
  const of = (id: string) =>
    runs.flatMap((r) => r.results.filter((x) => x.workload === id)) as WorkloadResult[]
  const results = first.results.map((r) => {
    const all = of(r.workload)
    const m = (pick: (x: WorkloadResult) => number | undefined) => {
      const xs = all.map(pick).filter((x): x is number => x !== undefined)
      return xs.length === 0 ? undefined : median(xs)
    }
    const parts = r.parts
      ? Object.fromEntries(Object.keys(r.parts).map((k) => [k, m((x) => x.parts?.[k])!]))
      : undefined
    const out: Record<string, unknown> = {
      ...r,
      seconds: m((x) => x.seconds)!,
      opsPerSec: m((x) => x.opsPerSec)!,
      p50us: m((x) => x.p50us)!,
      p99us: m((x) => x.p99us)!,
    }
    for (const key of [
      'mibPerSec',
      'diskBytes',
      'rssAfterMiB',
      'peakAfterMiB',
      'roundTripsPerOp',
    ] as const) {
      const v = m((x) => x[key])
      if (v !== undefined) out[key] = v
    }
    if (parts) out.parts = parts
    return out as unknown as WorkloadResult
  })
  return { ...first, peakRssMiB: median(runs.map((r) => r.peakRssMiB)), results }
}
const runsOf = new Map<string, ImplReport[]>(impls.map((i) => [i, []]))
for (let round = 1; round <= runCount; round++)
  for (const impl of impls) {
    process.stderr.write(
      `bench: ${impl} (${scale}${runCount > 1 ? `, run ${round} of ${runCount}` : ''})…\n`,
    )
    runsOf.get(impl)!.push(await runChild(impl))
  }
const reports: ImplReport[] = impls.map((i) => medianReport(runsOf.get(i)!))

const summary = printTable(reports)
printGuaranteeCosts(reports)
const targets = roundThreeTargets(reports)
printAgentWorkloads(reports)

// W12: the FUSE mount against a plain directory (not per implementation).
let fuse: Awaited<ReturnType<typeof runFuseWorkload>> | { skipped: string } | undefined
if (!values.workloads || values.workloads.split(',').includes('W12')) {
  const ready = fuseReadiness()
  if ('skip' in ready) {
    fuse = { skipped: ready.skip }
    console.log(`\nW12 skipped: ${ready.skip}`)
  } else {
    process.stderr.write('bench: W12 FUSE mount vs plain directory…\n')
    // The small scale checks the harness: one round, no sync between commands (it waits for
    // every dirty page on the machine, which under a parallel test run takes seconds).
    const rows = await runFuseWorkload(
      ready.cli,
      scale === 'full' ? 2000 : 300,
      scale === 'full' ? { rounds: 3, settle: true } : { rounds: 1, settle: false },
    )
    fuse = rows
    console.log(
      `\nW12 shell tools on \`agentfs mount\` vs a plain directory (median seconds of ${scale === 'full' ? 3 : 1} round(s))`,
    )
    for (const r of rows)
      console.log(
        `  ${r.command.padEnd(14)} plain ${fmt(r.plainSeconds, 3)}  mount ${fmt(r.fuseSeconds, 3)}  ×${fmt(r.ratio)}  --commit-delay ${GROUPED_DELAY_MS}: ${fmt(r.groupedSeconds, 3)} ×${fmt(r.groupedRatio)}${r.tmpfsSeconds === undefined ? '' : `   (in memory ${fmt(r.tmpfsSeconds, 3)}: ×${fmt(r.tmpfsRatio ?? 0)}, grouped ×${fmt(r.groupedTmpfsRatio ?? 0)})`}${r.floorSeconds === undefined ? '' : `   floor ${fmt(r.floorSeconds, 3)}${r.floorTmpfsRatio === undefined ? '' : ` ×${fmt(r.floorTmpfsRatio)} in memory`}, grouped ÷ floor ×${fmt(r.groupedFloorRatio ?? 0)}`}`,
      )
    if (rows.some((r) => r.floorSeconds !== undefined)) {
      console.log(
        '  (floor: an in-memory FUSE filesystem in C with handlers that cost next to nothing, native/floor-fs.c: the least any FUSE filesystem can take here)',
      )
      console.log('targets (round 3): each command on the mount within 2× of the floor')
      for (const r of rows) {
        if (r.floorSeconds === undefined) continue
        const over = r.fuseSeconds / r.floorSeconds
        targets.push({
          target: `W12 ${r.command} floor ÷ mount`,
          value: 1 / over,
          bound: 0.5,
          met: over <= 2,
        })
        console.log(
          `  ${r.command.padEnd(14)} mount ÷ floor ×${fmt(over)}  ${over <= 2 ? 'met' : 'MISSED'}  (--commit-delay ${GROUPED_DELAY_MS} ÷ floor ×${fmt(r.groupedFloorRatio)})`,
        )
      }
    }
  }
}

const out =
  values.out ??
  join(
    here,
    '..',
    'results',
    `${scale}-${new Date().toISOString().slice(0, 19).replace(/:/g, '')}.json`,
  )
mkdirSync(dirname(out), { recursive: true })
writeFileSync(
  out,
  `${JSON.stringify({ date: new Date().toISOString(), scale, runs: runCount, machine: { cpus: cpus().length, cpu: cpus()[0]?.model, memoryGiB: totalmem() / 2 ** 30, node: process.version }, summary, targets, reports, ...(runCount > 1 ? { runReports: Object.fromEntries(runsOf) } : {}), ...(fuse ? { w12: fuse } : {}) }, null, 2)}\n`,
)
console.log(`\nreport: ${out}`)
