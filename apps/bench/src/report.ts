// The bench's report: the table of every implementation and workload with its ratios, the
// price of the guarantees in SQL, the round-3 targets met or missed beside their floors, and the
// agent workloads against node:fs and raw SQL. Pure functions of the (median) reports.
import type { WorkloadResult } from './workloads.js'

/** What one implementation's child process reports: every workload's result. */
export interface ImplReport {
  impl: string
  durability: string
  peakRssMiB: number
  results: WorkloadResult[]
}

/** A round-3 target: the value reached, the bound, and the floor that bounds it when known. */
export interface Target {
  target: string
  value: number
  bound: number
  met: boolean
  floor?: number
}

/** Each implementation's geometric means over W1–W10. */
export type Summary = Record<string, { vsRaw?: number; vsReference?: number }>

export const TARGETED = new Set(Array.from({ length: 10 }, (_, i) => `W${i + 1}`))
export const rate = (r: WorkloadResult) => r.mibPerSec ?? r.opsPerSec
export const geomean = (xs: number[]) =>
  xs.length === 0 ? undefined : Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length)
/** Each phase's ratio, for workloads that report phases. */
export const partRatios = (a: WorkloadResult, b: WorkloadResult) =>
  Object.entries(a.parts ?? {}).flatMap(([k, v]) => {
    const base = b.parts?.[k]
    return base === undefined ? [] : [[k, v / base] as const]
  })
/** A workload's ratio: of its rates, or the geometric mean of its phases' ratios. */
export const ratio = (a: WorkloadResult | undefined, b: WorkloadResult | undefined) => {
  if (!a || !b) return undefined
  const parts = partRatios(a, b)
  return parts.length > 0 ? geomean(parts.map(([, r]) => r)) : rate(a) / rate(b)
}
export const fmt = (n: number | undefined, digits = 2) =>
  n === undefined ? '-' : n.toFixed(digits)

/** Finds an implementation's report by name. */
const byName = (reports: ImplReport[]) => (name: string) => reports.find((r) => r.impl === name)

/**
 * Prints the table (every implementation and workload, with its phases) and each
 * implementation's line (durability, peak memory, disk, geometric means); returns the means.
 */
export function printTable(reports: ImplReport[]): Summary {
  const by = byName(reports)
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
      const rawResult = by(
        report.impl.endsWith('-full') ? 'raw-sql-full' : 'raw-sql',
      )?.results.find((x) => x.workload === r.workload)
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
    console.log(
      row.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '),
    )
  console.log('')
  for (const report of reports) {
    const w5 = report.results.find((r) => r.workload === 'W5')
    console.log(
      `${report.impl.padEnd(18)} ${report.durability.padEnd(26)} peak RSS ${fmt(report.peakRssMiB, 0)} MiB` +
        `${w5?.diskBytes === undefined ? '' : `, disk after W1+W5 ${fmt(w5.diskBytes / 2 ** 20, 1)} MiB`}` +
        `, geomean × raw-sql ${fmt(summary[report.impl]?.vsRaw)}, × agentfs-sdk ${fmt(summary[report.impl]?.vsReference)}`,
    )
  }
  return summary
}

/**
 * Prints what the guarantees cost: the change feed (agentfs ÷ agentfs-nofeed) and the rows
 * they add in SQL alone (raw-sql-kept ÷ raw-sql, agentfs ÷ raw-sql-kept).
 */
export function printGuaranteeCosts(reports: ImplReport[]): void {
  const by = byName(reports)
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
}

/** The round-3 targets of W1–W10 and memory, each met or missed beside its floor; printed. */
export function roundThreeTargets(reports: ImplReport[]): Target[] {
  const by = byName(reports)
  const withFeed = by('agentfs')
  const plain = by('raw-sql')
  const kept = by('raw-sql-kept')
  // The targets of performance round 3, each met or missed, beside the floor that bounds it.
  const reference = by('agentfs-sdk-0.6.4')
  const targets: Target[] = []
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
  return targets
}

/** The agent workloads (W11, W14–W17) against node:fs and raw SQL, each phase on its own. */
export function printAgentWorkloads(reports: ImplReport[]): void {
  const by = byName(reports)
  const withFeed = by('agentfs')
  const plain = by('raw-sql')
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
}
