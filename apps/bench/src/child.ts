// One implementation in a fresh process: runs the workloads in order and prints one JSON line.
// Usage: node dist/child.js IMPL SCALE [W1,W2,…]
import { statSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AGENT_WORKLOADS } from './agent-workloads.js'
import { IMPLEMENTATIONS, type ImplName, openImpl } from './impls.js'
import { type Scale, STREAM, WORKLOADS, type WorkloadResult } from './workloads.js'

const [name, scale, only] = process.argv.slice(2) as [ImplName, Scale, string | undefined]
if (!IMPLEMENTATIONS.includes(name)) throw new Error(`unknown implementation ${name}`)
const wanted = only ? new Set(only.split(',')) : undefined

const dir = await mkdtemp(join(tmpdir(), `agentfs-bench-${name}-`))
const impl = await openImpl(name, dir)
const diskBytes = () =>
  impl.files.reduce((sum, f) => {
    try {
      return sum + statSync(f).size
    } catch {
      return sum
    }
  }, 0)
const results: WorkloadResult[] = []
try {
  for (const w of [...WORKLOADS, STREAM, ...AGENT_WORKLOADS]) {
    // Later workloads build on earlier ones (W2 reads W1's files), so all run; only the
    // selected ones are reported.
    if (w.needs && !w.needs(impl)) continue
    const tripsBefore = await impl.roundTrips?.()
    const r = await w.run(impl, scale)
    const tripsAfter = await impl.roundTrips?.()
    if (wanted && !wanted.has(w.id)) continue
    results.push({
      workload: w.id,
      title: w.title,
      ...r,
      ...(tripsBefore === undefined || tripsAfter === undefined
        ? {}
        : { roundTripsPerOp: (tripsAfter - tripsBefore) / r.ops }),
      ...(w.id === 'W5' && impl.files.length > 0 ? { diskBytes: diskBytes() } : {}),
      rssAfterMiB: process.memoryUsage().rss / 2 ** 20,
      peakAfterMiB: process.resourceUsage().maxRSS / 1024,
    })
  }
} finally {
  await impl.close()
  await rm(dir, { recursive: true, force: true })
}
process.stdout.write(
  `${JSON.stringify({
    impl: impl.name,
    durability: impl.durability,
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
    results,
  })}\n`,
)
