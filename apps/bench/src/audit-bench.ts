// pnpm bench:audit [--files N] [--calls N] [--out FILE]
// What the audit chain costs. Writing pays nothing for it (sealing runs after the rows are
// written), so the question is what a seal and a verify cost next to the work that made the rows:
// N files created (W1's shape: 1 KiB in directories of 100), N kv sets (W7) and N tool-call
// records (W8), each timed, then one seal of all their rows (plain and keyed) and one verify.
// Reports µs per row and the seal's time as a share of the writes'.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { AgentFS } from '@agentfs/sdk'

const { values } = parseArgs({
  options: {
    files: { type: 'string', default: '10000' },
    calls: { type: 'string', default: '10000' },
    out: { type: 'string' },
  },
})
const files = Number(values.files)
const calls = Number(values.calls)
if (!Number.isSafeInteger(files) || files < 100) throw new Error('--files must be at least 100')
if (!Number.isSafeInteger(calls) || calls < 100) throw new Error('--calls must be at least 100')

const timed = async <T>(fn: () => Promise<T>) => {
  const start = process.hrtime.bigint()
  const value = await fn()
  return { value, ms: Number(process.hrtime.bigint() - start) / 1e6 }
}

async function run(keyed: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'agentfs-audit-bench-'))
  const key = { key: randomBytes(32) }
  const agent = await AgentFS.open({
    path: join(dir, 'agent.db'),
    audit: { sealOnClose: false, ...(keyed ? { key } : {}) },
  })
  try {
    const body = 'x'.repeat(1024)
    const write = await timed(async () => {
      for (let d = 0; d < Math.ceil(files / 100); d++) await agent.fs.mkdir(`/d${d}`)
      for (let i = 0; i < files; i++)
        await agent.fs.writeFile(`/d${Math.floor(i / 100)}/f${i}.txt`, body)
      for (let i = 0; i < files; i++) await agent.kv.set(`key-${i}`, { i })
      for (let i = 0; i < calls; i++)
        await agent.tools.record({
          name: 'tool',
          parameters: { i },
          result: { ok: true },
          startedAt: 1,
          completedAt: 2,
        })
    })
    const seal = await timed(() => agent.seal())
    const rows = seal.value.sealed.call + seal.value.sealed.change
    const verify = await timed(() => agent.verify())
    if (!verify.value.ok) throw new Error('the bench database did not verify')
    return {
      keyed,
      rows,
      writeMs: write.ms,
      sealMs: seal.ms,
      verifyMs: verify.ms,
      sealUsPerRow: (seal.ms * 1000) / rows,
      verifyUsPerRow: (verify.ms * 1000) / rows,
      sealShare: seal.ms / write.ms,
    }
  } finally {
    await agent.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const results = [await run(false), await run(true)]
for (const r of results)
  console.log(
    `${r.keyed ? 'HMAC-SHA256' : 'SHA-256    '}: ${r.rows} rows written in ${r.writeMs.toFixed(0)} ms; seal ${r.sealMs.toFixed(0)} ms (${r.sealUsPerRow.toFixed(1)} µs/row, ${(r.sealShare * 100).toFixed(1)}% of the writes), verify ${r.verifyMs.toFixed(0)} ms (${r.verifyUsPerRow.toFixed(1)} µs/row)`,
  )
if (values.out) writeFileSync(values.out, `${JSON.stringify(results, null, 2)}\n`)
