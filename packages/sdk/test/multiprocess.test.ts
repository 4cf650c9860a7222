import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { expect, test } from 'vitest'
import { AgentFS } from '../src/index.js'

const here = fileURLToPath(new URL('.', import.meta.url))
const CHILDREN = 4
const WRITES = 150

/** Bundles the child from TypeScript source next to this package's node_modules. */
async function bundleChild(): Promise<string> {
  const outDir = join(here, '..', '.tmp')
  await mkdir(outDir, { recursive: true })
  const outfile = join(outDir, `writer-child-${process.pid}.mjs`)
  await build({
    entryPoints: [join(here, 'fixtures', 'writer-child.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    conditions: ['@agentfs/source'],
    external: ['better-sqlite3', '@libsql/client'],
    logLevel: 'silent',
  })
  return outfile
}

function run(script: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d) => {
      output += d
    })
    child.stderr.on('data', (d) => {
      output += d
    })
    child.on('close', (code) => resolve({ code, output }))
  })
}

test(`${CHILDREN} processes write and seal one database at once: every write lands, no BUSY reaches them, the audit verifies`, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-mp-'))
  const path = join(dir, 'shared.db')
  const script = await bundleChild()
  try {
    // Created up front so the children race on writes, not on creation (that race is tested too, in core).
    await (await AgentFS.open({ path })).close()
    const startAt = String(Date.now() + 2000)
    const results = await Promise.all(
      Array.from({ length: CHILDREN }, (_, i) =>
        run(script, [path, String(i), String(WRITES), startAt]),
      ),
    )
    for (const result of results) expect(result, result.output).toMatchObject({ code: 0 })
    const agent = await AgentFS.open({ path })
    for (let i = 0; i < CHILDREN; i++) {
      expect(await agent.kv.keys({ prefix: `child-${i}:`, limit: 1000 })).toHaveLength(WRITES)
      expect(await agent.tools.bySession(`child-${i}`, { limit: 1000 })).toHaveLength(WRITES)
      expect(await agent.fs.readdir(`/child-${i}`)).toHaveLength(WRITES / 10)
    }
    // The processes really ran at the same time: their calls interleave in the log.
    const order = (await agent.tools.query({ order: 'oldest', limit: 10_000 })).map(
      (c) => c.sessionId,
    )
    const switches = order.filter((session, i) => i > 0 && session !== order[i - 1]).length
    expect(switches).toBeGreaterThan(CHILDREN)
    // Sealing from four processes at once made one chain, no fork, nothing left out.
    const audit = await agent.verify()
    expect(audit.issues).toEqual([])
    expect(audit.unsealed).toEqual({ call: 0, change: 0 })
    expect(audit.verified.call).toBe(CHILDREN * WRITES)
    await agent.close()
  } finally {
    await rm(script, { force: true })
    await rm(dir, { recursive: true, force: true })
  }
}, 120_000)
