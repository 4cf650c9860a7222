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
import type { Scale, WorkloadResult } from './workloads.js'

interface ImplReport {
  impl: string
  durability: string
  peakRssMiB: number
  results: WorkloadResult[]
}

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

const TARGETED = new Set(Array.from({ length: 10 }, (_, i) => `W${i + 1}`))
const by = (name: string) => reports.find((r) => r.impl === name)
const rate = (r: WorkloadResult) => r.mibPerSec ?? r.opsPerSec
const geomean = (xs: number[]) =>
  xs.length === 0 ? undefined : Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length)
/** Each phase's ratio, for workloads that report phases. */
const partRatios = (a: WorkloadResult, b: WorkloadResult) =>
  Object.entries(a.parts ?? {}).flatMap(([k, v]) => {
    const base = b.parts?.[k]
    return base === undefined ? [] : [[k, v / base] as const]
  })
/** A workload's ratio: of its rates, or the geometric mean of its phases' ratios. */
const ratio = (a: WorkloadResult | undefined, b: WorkloadResult | undefined) => {
  if (!a || !b) return undefined
  const parts = partRatios(a, b)
  return parts.length > 0 ? geomean(parts.map(([, r]) => r)) : rate(a) / rate(b)
}
const fmt = (n: number | undefined, digits = 2) => (n === undefined ? '-' : n.toFixed(digits))

const rows: string[][] = [
  [
    'impl',
    'workload',
    'ops/s',
    'MiB/s',
    'p50 µs',
    'p99 µs',
    'RSS MiB',
    'requests/op',
    '× raw-sql',
    '× agentfs-sdk',
  ],
]
const summary: Record<string, { vsRaw?: number; vsReference?: number }> = {}
for (const report of reports) {
  const vsRaw: number[] = []
  const vsRef: number[] = []
  for (const r of report.results) {
    const rawResult = by(report.impl.endsWith('-full') ? 'raw-sql-full' : 'raw-sql')?.results.find(
      (x) => x.workload === r.workload,
    )
    const raw = ratio(r, rawResult)
    const ref = ratio(
      r,
      by('agentfs-sdk-0.6.4')?.results.find((x) => x.workload === r.workload),
    )
    // The geometric means are of the ten primitives the targets are stated for (W1–W10).
    if (TARGETED.has(r.workload)) {
      if (raw !== undefined) vsRaw.push(raw)
      if (ref !== undefined) vsRef.push(ref)
    }
    rows.push([
      report.impl,
      `${r.workload} ${r.title}`,
      fmt(r.opsPerSec, 0),
      fmt(r.mibPerSec, 1),
      fmt(r.p50us, 0),
      fmt(r.p99us, 0),
      fmt(r.rssAfterMiB, 0),
      fmt(r.roundTripsPerOp, 1),
      fmt(raw),
      fmt(ref),
    ])
    const parts = rawResult ? new Map(partRatios(r, rawResult)) : new Map<string, number>()
    for (const [part, value] of Object.entries(r.parts ?? {}))
      rows.push([
        report.impl,
        `${r.workload}  · ${part}`,
        r.mibPerSec === undefined ? fmt(value, 0) : '',
        r.mibPerSec === undefined ? '' : fmt(value, 1),
        '',
        '',
        '',
        '',
        fmt(parts.get(part)),
        '',
      ])
  }
  const g = { vsRaw: geomean(vsRaw), vsReference: geomean(vsRef) }
  summary[report.impl] = {
    ...(g.vsRaw === undefined ? {} : { vsRaw: g.vsRaw }),
    ...(g.vsReference === undefined ? {} : { vsReference: g.vsReference }),
  }
}
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
for (const row of rows)
  console.log(row.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '))
console.log('')
for (const report of reports) {
  const w5 = report.results.find((r) => r.workload === 'W5')
  console.log(
    `${report.impl.padEnd(18)} ${report.durability.padEnd(26)} peak RSS ${fmt(report.peakRssMiB, 0)} MiB` +
      `${w5?.diskBytes === undefined ? '' : `, disk after W1+W5 ${fmt(w5.diskBytes / 2 ** 20, 1)} MiB`}` +
      `, geomean × raw-sql ${fmt(summary[report.impl]?.vsRaw)}, × agentfs-sdk ${fmt(summary[report.impl]?.vsReference)}`,
  )
}

// What the change feed costs: the SDK with it (the default) against the SDK without it.
const withFeed = by('agentfs')
const withoutFeed = by('agentfs-nofeed')
if (withFeed && withoutFeed) {
  console.log(
    '\nchange feed cost: agentfs (feed on) ÷ agentfs-nofeed, per workload (target ≥ 0.90 on W1, W9)',
  )
  for (const r of withFeed.results) {
    const other = withoutFeed.results.find((x) => x.workload === r.workload)
    console.log(`  ${`${r.workload} ${r.title}`.padEnd(48)} ×${fmt(ratio(r, other))}`)
  }
}

// What the guarantees cost in SQL alone: the baseline writing the rows they add (the most
// agentfs can reach while keeping them), and agentfs against that (the cost of the rest).
const kept = by('raw-sql-kept')
const plain = by('raw-sql')
if (kept && plain) {
  console.log(
    '\nguarantees in SQL alone: raw-sql-kept ÷ raw-sql (the ceiling for agentfs), agentfs ÷ raw-sql-kept',
  )
  for (const r of kept.results.filter((x) => TARGETED.has(x.workload))) {
    const base = plain.results.find((x) => x.workload === r.workload)
    const ours = withFeed?.results.find((x) => x.workload === r.workload)
    console.log(
      `  ${`${r.workload} ${r.title}`.padEnd(48)} ceiling ×${fmt(ratio(r, base))}  agentfs ÷ kept ×${fmt(ratio(ours, r))}`,
    )
  }
}

// The targets of performance round 3, each met or missed, beside the floor that bounds it.
const reference = by('agentfs-sdk-0.6.4')
const targets: Array<{
  target: string
  value: number
  bound: number
  met: boolean
  floor?: number
}> = []
if (withFeed) {
  const result = (report: ImplReport | undefined, id: string) =>
    report?.results.find((x) => x.workload === id)
  const phase = (report: ImplReport | undefined, id: string, part?: string) => {
    const r = result(report, id)
    if (!r) return undefined
    return part === undefined ? rate(r) : r.parts?.[part]
  }
  const add = (target: string, value: number | undefined, bound: number, floor?: number) => {
    if (value === undefined) return
    targets.push({
      target,
      value,
      bound,
      met: value >= bound,
      ...(floor === undefined ? {} : { floor }),
    })
  }
  const READS: Array<[string, string | undefined]> = [
    ['W2', undefined],
    ['W3', undefined],
    ['W4', undefined],
    ['W5', 'read'],
    ['W6', undefined],
    ['W7', 'get'],
  ]
  const WRITES: Array<[string, string | undefined]> = [
    ['W1', undefined],
    ['W5', 'write'],
    ['W7', 'set'],
    ['W8', undefined],
    ['W9', undefined],
  ]
  const name = (id: string, part?: string) => (part ? `${id} ${part}` : id)
  const over = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined ? undefined : a / b
  const handles = by('raw-sql-handles')
  for (const [id, part] of READS)
    add(
      `read ${name(id, part)} ÷ raw-sql`,
      over(phase(withFeed, id, part), phase(plain, id, part)),
      0.9,
      // W6's floor: plain SQL doing open and read as two calls, as a handle API must.
      id === 'W6' ? over(phase(handles, id), phase(plain, id)) : undefined,
    )
  for (const [id, part] of WRITES)
    add(
      `write ${name(id, part)} ÷ raw-sql-kept`,
      over(phase(withFeed, id, part), phase(kept, id, part)),
      0.9,
    )
  for (let i = 1; i <= 10; i++) {
    const id = `W${i}`
    // The floor: plain SQL itself against the reference (no guarantees, nothing above SQLite).
    add(
      `${id} ÷ agentfs-sdk`,
      ratio(result(withFeed, id), result(reference, id)),
      10,
      ratio(result(plain, id), result(reference, id)),
    )
  }
  // Memory over W1–W10: the peak so far after W10 (later workloads, such as W13's 1 GiB stream,
  // do not count). The floor: raw-sql-kept's peak, which pays for the same content hashes.
  const peak = (report: ImplReport | undefined) => result(report, 'W10')?.peakAfterMiB
  const ours = peak(withFeed)
  const base = peak(plain)
  const keptPeak = peak(kept)
  if (ours !== undefined && base !== undefined)
    add(
      'W1–W10 peak RSS raw-sql ÷ agentfs',
      base / ours,
      1 / 1.1,
      keptPeak === undefined ? undefined : base / keptPeak,
    )
}
if (targets.length > 0) {
  console.log(
    '\ntargets (round 3), met or missed; floor: what plain SQL reaches (× agentfs-sdk: raw-sql ÷ agentfs-sdk; W6: raw-sql-handles ÷ raw-sql; memory: raw-sql ÷ raw-sql-kept)',
  )
  for (const t of targets)
    console.log(
      `  ${t.target.padEnd(32)} ×${fmt(t.value)}  (target ≥ ${fmt(t.bound)})  ${t.met ? 'met' : 'MISSED'}${t.floor === undefined ? '' : `  floor ×${fmt(t.floor)}`}`,
    )
}

// The agent workloads against node:fs and plain SQL, each with its ratio.
const nodeFs = by('node-fs')
const AGENT = ['W11', 'W14', 'W15', 'W16', 'W17']
if (withFeed && (nodeFs || plain) && withFeed.results.some((r) => AGENT.includes(r.workload))) {
  console.log('\nagent workloads: agentfs ÷ node-fs, agentfs ÷ raw-sql (each phase on its own)')
  for (const r of withFeed.results.filter((x) => AGENT.includes(x.workload))) {
    const vs = (other: ImplReport | undefined) => {
      const o = other?.results.find((x) => x.workload === r.workload)
      if (!o) return '-'
      const parts = partRatios(r, o)
      return parts.length > 0
        ? parts.map(([k, v]) => `${k} ×${fmt(v)}`).join(', ')
        : `×${fmt(rate(r) / rate(o))}`
    }
    console.log(
      `  ${`${r.workload} ${r.title}`.padEnd(48)} node-fs ${vs(nodeFs)}   raw-sql ${vs(plain)}`,
    )
  }
}

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
