import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { fsck } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { afterAll, describe, expect, test } from 'vitest'

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const ROUNDS = 12

/**
 * One agent in its own process, on the shared database, through the tools: it creates its own
 * file and a scratch file, increments a shared counter ROUNDS times by read_file then
 * write_file with the version it read (retrying after a stale-write refusal), deletes its scratch
 * file, waits until every agent is done, and prints what it sees.
 */
function agentScript(db: string, index: number, agents: number): string {
  const dist = pathToFileURL(join(import.meta.dirname, '..', 'dist', 'index.js')).href
  return `import { createHash } from 'node:crypto'
import { AgentFS } from '@agentfs/sdk'
import { createAgentTools } from ${JSON.stringify(dist)}
const agent = await AgentFS.open({ path: ${JSON.stringify(db)} })
const tools = createAgentTools({ fs: agent.fs, audit: agent.tools, sessionId: 'agent-${index}' })
const run = async (name, input) => {
  const out = await tools.get(name).execute(input)
  return out
}
const must = async (name, input) => {
  const out = await run(name, input)
  if (out.isError) throw new Error(name + ': ' + out.text)
  return out
}
await must('create_file', { path: '/agents/${index}.md', content: 'agent ${index}\\n' })
await must('create_file', { path: '/scratch/${index}.tmp', content: 'scratch' })
let stale = 0
for (let k = 0; k < ${ROUNDS}; k++) {
  for (;;) {
    const read = await must('read_file', { path: '/shared/counter.txt' })
    const n = Number(/\\t(\\d+)/.exec(read.text)[1])
    const write = await run('write_file', {
      path: '/shared/counter.txt',
      content: String(n + 1) + '\\n',
      expected_version: read.data.version,
    })
    if (!write.isError) break
    if (write.code !== 'STALE') throw new Error('write_file: ' + write.text)
    stale++
  }
}
await must('delete_file', { path: '/scratch/${index}.tmp' })
for (let waited = 0; ; waited++) {
  const count = Number(await agent.fs.readFile('/shared/counter.txt', 'utf8'))
  const scratch = await agent.fs.readdir('/scratch')
  if (count === ${agents * ROUNDS} && scratch.length === 0) break
  if (waited > 3000) throw new Error('the others never finished: ' + count)
  await new Promise((r) => setTimeout(r, 10))
}
const view = {}
for (const dir of ['/agents', '/scratch', '/shared'])
  for (const name of (await agent.fs.readdir(dir)).sort())
    view[dir + '/' + name] = createHash('sha256').update(await agent.fs.readFile(dir + '/' + name)).digest('hex')
console.log(JSON.stringify({ stale, view }))
await agent.close()
`
}

function runAgent(dir: string, script: string): Promise<{ stale: number; view: object }> {
  const path = join(dir, `agent-${Math.random().toString(36).slice(2)}.mjs`)
  writeFileSync(path, script)
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [path], {
      cwd: join(import.meta.dirname, '..'),
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    p.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8')
    })
    p.on('error', reject)
    p.on('exit', (code) => {
      if (code !== 0) reject(new Error(`agent exited with ${code}: ${out}`))
      else resolve(JSON.parse(out.trim().split('\n').at(-1)!))
    })
  })
}

describe('many agents at once, each in its own process, on one database', () => {
  test.each([2, 3, 5, 10])(
    '%i agents: no write lost to a stale one, every loser told, deletes seen, every view equal and fsck-clean',
    async (agents) => {
      // Inside the package, so the scripts resolve @agentfs/sdk as the tests do (and this
      // package from its build: its test task builds it first).
      const cache = join(import.meta.dirname, '..', 'node_modules', '.cache')
      mkdirSync(cache, { recursive: true })
      const scripts = mkdtempSync(join(cache, 'many-agents-'))
      const dir = mkdtempSync(join(tmpdir(), 'agentfs-many-'))
      dirs.push(scripts, dir)
      const db = join(dir, 'shared.db')
      const setup = await AgentFS.open({ path: db })
      for (const d of ['/agents', '/scratch', '/shared']) await setup.fs.mkdir(d)
      await setup.fs.writeFile('/shared/counter.txt', '0\n')
      await setup.close()
      const results = await Promise.all(
        Array.from({ length: agents }, (_, i) => runAgent(scripts, agentScript(db, i, agents))),
      )
      const agent = await AgentFS.open({ path: db })
      try {
        // Every increment is there: a write made from a stale read was refused, never applied.
        expect(await agent.fs.readFile('/shared/counter.txt', 'utf8')).toBe(`${agents * ROUNDS}\n`)
        // Every agent, at the end, sees the same files: all agents' files, no scratch left.
        for (const r of results.slice(1)) expect(r.view).toEqual(results[0]!.view)
        expect(Object.keys(results[0]!.view).sort()).toEqual(
          [
            ...Array.from({ length: agents }, (_, i) => `/agents/${i}.md`),
            '/shared/counter.txt',
          ].sort(),
        )
        // Each refusal reached its agent as a tool error, and the audit has every one of them.
        const stale = results.reduce((n, r) => n + r.stale, 0)
        let refused = 0
        for (let i = 0; i < agents; i++)
          refused += (await agent.tools.bySession(`agent-${i}`)).filter(
            (c) => c.name === 'write_file' && c.status === 'error',
          ).length
        expect(refused).toBe(stale)
        const report = await fsck(agent.db)
        expect(report.findings).toEqual([])
      } finally {
        await agent.close()
      }
    },
    120_000,
  )
})
