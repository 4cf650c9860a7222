// pnpm bench:ab --old DIR [--new DIR] [--rounds N] [--batch N] [--only W1,W8]
// Two builds of this repository side by side in one process (each a checkout with its packages
// built: `--old` e.g. a `git worktree` of an earlier commit; `--new` default this checkout), so
// the noise of a shared machine hits both alike: batches of operations alternated between them
// (the order flipped every round), and the medians of per-batch throughput compared. Shapes:
// W1 (1 KiB creates in 100 directories), W2/W3 (readFile/stat of 1 KiB files), W4 (readdir),
// W6 (open + 4 KiB pread + close), W7 (kv set, get), W8 (tool-call records), W9 (renames
// across directories), W11 (an agent step: read_file / edit_file through the agent tools,
// audited and not).
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'

const { values } = parseArgs({
  options: {
    old: { type: 'string' },
    new: { type: 'string', default: fileURLToPath(new URL('../../..', import.meta.url)) },
    rounds: { type: 'string', default: '30' },
    batch: { type: 'string', default: '500' },
    only: { type: 'string' },
  },
})
if (values.old === undefined) throw new Error('--old DIR: a checkout of the build to compare with')
const rounds = Number(values.rounds)
const batch = Number(values.batch)
if (!Number.isSafeInteger(rounds) || rounds < 2) throw new Error('--rounds must be at least 2')
if (!Number.isSafeInteger(batch) || batch < 10) throw new Error('--batch must be at least 10')

interface Fs {
  mkdir(path: string): Promise<unknown>
  writeFile(path: string, data: string | Buffer): Promise<unknown>
  rename(from: string, to: string): Promise<unknown>
  readFile(path: string): Promise<unknown>
  stat(path: string): Promise<unknown>
  readdir(path: string): Promise<unknown>
  open(
    path: string,
    flags: string,
  ): Promise<{
    read(b: Buffer, at: number, n: number, pos: number): Promise<unknown>
    close(): Promise<void>
  }>
}
interface Agent {
  fs: Fs
  kv: { set(key: string, value: unknown): Promise<unknown>; get(key: string): Promise<unknown> }
  tools: { record(input: Record<string, unknown>): Promise<unknown> }
  close(): Promise<void>
}
type Tools = Map<string, { execute(input: unknown): Promise<unknown> }>
interface Side {
  agent: Agent
  audited: Tools
  plain: Tools
}

const READ_FILES = 2000
const BIG = 4 * 1024 * 1024
const kib = `${'x'.repeat(1023)}\n`
const dir = mkdtempSync(join(tmpdir(), 'agentfs-ab-'))
const sides: Record<'old' | 'new', Side> = {} as never
for (const side of ['old', 'new'] as const) {
  const root = resolve(values[side] as string, 'packages')
  const entry = (pkg: string) => join(root, pkg, 'dist', 'index.js')
  if (!existsSync(entry('sdk')) || !existsSync(entry('agent-tools')))
    throw new Error(`--${side} ${values[side]}: build it first (pnpm install && pnpm build)`)
  const { AgentFS } = (await import(pathToFileURL(entry('sdk')).href)) as {
    AgentFS: { open(options: { path: string }): Promise<Agent> }
  }
  const { createAgentTools } = (await import(pathToFileURL(entry('agent-tools')).href)) as {
    createAgentTools(options: { fs: Fs; audit?: unknown }): Tools
  }
  const agent = await AgentFS.open({ path: join(dir, `${side}.db`) })
  for (let d = 0; d < 100; d++) await agent.fs.mkdir(`/d${d}`)
  for (const d of ['/r0', '/r1']) await agent.fs.mkdir(d)
  await agent.fs.writeFile('/edit.txt', 'alpha\nbeta\n')
  // What the read shapes read: files written in the 100 directories, keys, a 4 MiB file.
  for (let i = 0; i < READ_FILES; i++) await agent.fs.writeFile(`/d${i % 100}/s${i}`, kib)
  for (let i = 0; i < READ_FILES; i++) await agent.kv.set(`key:${i}`, { i, name: `value ${i}` })
  await agent.fs.writeFile('/big.bin', Buffer.alloc(BIG, 7))
  sides[side] = {
    agent,
    audited: createAgentTools({ fs: agent.fs, audit: agent.tools }),
    plain: createAgentTools({ fs: agent.fs }),
  }
}

let created = 0
const readFileOf = (i: number) => `/d${i % 100}/s${i % READ_FILES}`
const step = (tools: Tools, i: number) => {
  if (i % 2 === 0) return tools.get('read_file')!.execute({ path: '/edit.txt' })
  const [from, to] = i % 4 === 1 ? ['alpha', 'ALPHA'] : ['ALPHA', 'alpha']
  return tools.get('edit_file')!.execute({ path: '/edit.txt', old_string: from, new_string: to })
}
/** Each shape: an untimed setup for a round, then the timed operation i of the batch. */
const shapes: Record<string, (s: Side, round: number) => Promise<(i: number) => Promise<unknown>>> =
  {
    'W1 create 1 KiB files': async (s) => (i) =>
      s.agent.fs.writeFile(`/d${i % 100}/f${created++}`, kib),
    'W2 readFile 1 KiB': async (s) => (i) => s.agent.fs.readFile(readFileOf(i)),
    'W3 stat': async (s) => (i) => s.agent.fs.stat(readFileOf(i)),
    'W4 readdir': async (s) => (i) => s.agent.fs.readdir(`/d${i % 100}`),
    'W6 open + 4 KiB pread + close': async (s) => async (i) => {
      const handle = await s.agent.fs.open('/big.bin', 'r')
      await handle.read(Buffer.allocUnsafe(4096), 0, 4096, (i * 7919 * 4099) % (BIG - 4096))
      await handle.close()
    },
    'W7 kv set': async (s) => (i) => s.agent.kv.set(`key:${i % READ_FILES}`, { i, name: `v${i}` }),
    'W7 kv get': async (s) => (i) => s.agent.kv.get(`key:${i % READ_FILES}`),
    'W8 tool-call records': async (s) => (i) => {
      const t = Date.now()
      return s.agent.tools.record({
        name: 'web_search',
        parameters: { q: `q${i}` },
        result: { hits: i },
        startedAt: t,
        completedAt: t,
      })
    },
    'W9 renames across directories': async (s, round) => {
      const [from, to] = round % 2 === 0 ? ['/r0', '/r1'] : ['/r1', '/r0']
      for (let i = 0; i < batch; i++) await s.agent.fs.writeFile(`${from}/m${round}-${i}`, 'x')
      return (i) => s.agent.fs.rename(`${from}/m${round}-${i}`, `${to}/m${round}-${i}`)
    },
    'W11 agent step, audited': async (s) => (i) => step(s.audited, i),
    'W11 agent step, not audited': async (s) => (i) => step(s.plain, i),
  }

const only = values.only?.split(',')
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!
for (const [name, shape] of Object.entries(shapes)) {
  if (only && !only.some((o) => name.startsWith(`${o} `))) continue
  const rates: Record<'old' | 'new', number[]> = { old: [], new: [] }
  for (let round = 0; round < rounds; round++) {
    for (const side of round % 2 === 0 ? (['old', 'new'] as const) : (['new', 'old'] as const)) {
      const run = await shape(sides[side], round)
      const start = process.hrtime.bigint()
      for (let i = 0; i < batch; i++) await run(i)
      rates[side].push(batch / (Number(process.hrtime.bigint() - start) / 1e9))
    }
  }
  const [o, n] = [median(rates.old), median(rates.new)]
  console.log(
    `${name.padEnd(32)} old ${o.toFixed(0).padStart(7)} ops/s  new ${n.toFixed(0).padStart(7)} ops/s  new ÷ old ${(n / o).toFixed(3)}`,
  )
}
for (const s of Object.values(sides)) await s.agent.close()
rmSync(dir, { recursive: true, force: true })
