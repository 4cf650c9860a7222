// pnpm bench:history [--files N] [--out FILE]
// Snapshots are proportional to what changed: a tree of N files (default 10,000) is
// snapshotted, one file changes, and a second snapshot is taken. Reports the time and the bytes
// each snapshot added to the database file (pages used × page size), and the second as a share of
// the first (target: under 1% for both). Then restore and diff of that change, for scale.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { AgentFS } from '@agentfs/sdk'

const { values } = parseArgs({
  options: { files: { type: 'string', default: '10000' }, out: { type: 'string' } },
})
const files = Number(values.files)
if (!Number.isSafeInteger(files) || files < 10) throw new Error('--files must be at least 10')

const dir = mkdtempSync(join(tmpdir(), 'agentfs-history-bench-'))
const agent = await AgentFS.open({ path: join(dir, 'agent.db') })
const used = async () => {
  const page = await agent.db.execute<{ n: number }>({ sql: 'PRAGMA page_size' })
  const count = await agent.db.execute<{ n: number }>({ sql: 'PRAGMA page_count' })
  const free = await agent.db.execute<{ n: number }>({ sql: 'PRAGMA freelist_count' })
  const value = (r: { rows: Record<string, unknown>[] }) => Number(Object.values(r.rows[0]!)[0])
  return (value(count) - value(free)) * value(page)
}
const timed = async <T>(fn: () => Promise<T>) => {
  const start = process.hrtime.bigint()
  const value = await fn()
  return { value, ms: Number(process.hrtime.bigint() - start) / 1e6 }
}

try {
  const body = (i: number) => `file ${i}\n${'x'.repeat(900 + (i % 200))}\n`
  for (let d = 0; d < Math.ceil(files / 100); d++)
    await agent.fs.mkdir(`/tree/d${d}`, { recursive: true })
  for (let i = 0; i < files; i++)
    await agent.fs.writeFile(`/tree/d${Math.floor(i / 100)}/f${i}.txt`, body(i))
  const b0 = await used()
  const first = await timed(() => agent.snapshot('first'))
  const b1 = await used()
  await agent.fs.writeFile('/tree/d0/f0.txt', 'changed\n')
  const second = await timed(() => agent.snapshot('second'))
  const b2 = await used()
  const diff = await timed(() => agent.history.diff('first', 'second'))
  const restore = await timed(() => agent.restore('first'))
  const rows = {
    files,
    first: { ms: first.ms, bytes: b1 - b0 },
    second: { ms: second.ms, bytes: b2 - b1 },
    timeShare: second.ms / first.ms,
    bytesShare: (b2 - b1) / (b1 - b0),
    diffMs: diff.ms,
    diffEntries: diff.value.length,
    restoreMs: restore.ms,
  }
  const pct = (x: number) => `${(x * 100).toFixed(3)}%`
  console.log(
    `snapshot of ${files} files: ${rows.first.ms.toFixed(0)} ms, ${(rows.first.bytes / 2 ** 20).toFixed(2)} MiB`,
  )
  console.log(`after changing 1 file:  ${rows.second.ms.toFixed(2)} ms, ${rows.second.bytes} bytes`)
  console.log(
    `second ÷ first: time ${pct(rows.timeShare)}, bytes ${pct(rows.bytesShare)} (target < 1% each)`,
  )
  console.log(
    `diff first→second: ${rows.diffMs.toFixed(0)} ms (${rows.diffEntries} change); restore first: ${rows.restoreMs.toFixed(1)} ms`,
  )
  if (values.out) writeFileSync(values.out, `${JSON.stringify(rows, null, 2)}\n`)
} finally {
  await agent.close()
  rmSync(dir, { recursive: true, force: true })
}
