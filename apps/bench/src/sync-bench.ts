// `pnpm bench:sync`: push and pull times of @agentfs/sync against a local `tursodb --sync-server`
// (127.0.0.1, started and stopped here), for 1k and 10k changes. Medians of three runs, each on
// a fresh server; the bytes are what the engine reports sent and received.
//
// Usage: node dist/sync-bench.js [--runs N] [--json FILE]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { openSynced, type SyncedAgentFS } from '@agentfs/sync'
import { startSyncServer } from '@agentfs/turso-sync-server'

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '3' }, json: { type: 'string' } },
})
const RUNS = Number(values.runs)

interface Case {
  readonly label: string
  readonly changes: number
  write(agent: SyncedAgentFS, n: number): Promise<void>
}

const KIB = 'x'.repeat(1024)
const CASES: Case[] = [1_000, 10_000].flatMap((changes) => [
  {
    label: `${changes.toLocaleString('en')} kv sets, one transaction`,
    changes,
    write: (agent: SyncedAgentFS, n: number) =>
      agent.transaction(async (tx) => {
        for (let i = 0; i < n; i++) await tx.kv.set(`key-${i}`, { i })
      }),
  },
  {
    label: `${changes.toLocaleString('en')} new 1 KiB files, one transaction`,
    changes,
    write: (agent: SyncedAgentFS, n: number) =>
      agent.transaction(async (tx) => {
        await tx.fs.mkdir('/files')
        for (let i = 0; i < n; i++) await tx.fs.writeFile(`/files/f${i}`, KIB)
      }),
  },
])

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

async function once(c: Case) {
  const server = await startSyncServer({ maxSeconds: 600 })
  const dir = mkdtempSync(join(tmpdir(), 'agentfs-sync-bench-'))
  try {
    const a = await openSynced({ path: join(dir, 'a.db'), sync: { url: server.url } })
    const b = await openSynced({ path: join(dir, 'b.db'), sync: { url: server.url } })
    await a.sync.push()
    await b.sync.pull()
    await c.write(a, c.changes)
    const sentBefore = (await a.sync.status()).networkSentBytes
    let started = performance.now()
    await a.sync.push()
    const push = performance.now() - started
    const sent = (await a.sync.status()).networkSentBytes - sentBefore
    const receivedBefore = (await b.sync.status()).networkReceivedBytes
    started = performance.now()
    await b.sync.pull()
    const pull = performance.now() - started
    const received = (await b.sync.status()).networkReceivedBytes - receivedBefore
    await a.close()
    await b.close()
    return { push, pull, sent, received }
  } finally {
    rmSync(dir, { recursive: true, force: true })
    await server.stop()
  }
}

const rows: Array<Record<string, string | number>> = []
console.log(`@agentfs/sync against tursodb --sync-server on 127.0.0.1, median of ${RUNS}\n`)
console.log(
  '| changes | push (ms) | pull on another client (ms) | push bytes sent | pull bytes received |',
)
console.log('| --- | ---: | ---: | ---: | ---: |')
for (const c of CASES) {
  const results = []
  for (let run = 0; run < RUNS; run++) results.push(await once(c))
  const row = {
    case: c.label,
    pushMs: Math.round(median(results.map((r) => r.push))),
    pullMs: Math.round(median(results.map((r) => r.pull))),
    sentBytes: median(results.map((r) => r.sent)),
    receivedBytes: median(results.map((r) => r.received)),
  }
  rows.push(row)
  const n = (x: number) => x.toLocaleString('en')
  console.log(
    `| ${row.case} | ${n(row.pushMs)} | ${n(row.pullMs)} | ${n(row.sentBytes)} | ${n(row.receivedBytes)} |`,
  )
}
if (values.json)
  writeFileSync(
    values.json,
    `${JSON.stringify({ date: new Date().toISOString(), node: process.version, runs: RUNS, rows }, null, 2)}\n`,
  )
