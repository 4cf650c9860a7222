import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fsck } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { digestOf } from './fixtures/history-digest.js'
import { bundleChild, runAndKill } from './helpers.js'

/**
 * Crash safety of history: a writer that snapshots, restores, deletes snapshots and commits
 * branches is killed with SIGKILL at random moments. After every kill the database is fsck
 * clean, the tree is the state before the step in flight or after it (never a mix), and every
 * snapshot that exists holds exactly what it held when it was taken.
 * CI: 10 kills. Long: AGENTFS_LONG=1 (200 kills; AGENTFS_CRASH_KILLS overrides).
 */
const LONG = process.env.AGENTFS_LONG === '1'
const KILLS = Number(process.env.AGENTFS_CRASH_KILLS ?? (LONG ? 200 : 10))
const BASE_SEED = Number(process.env.AGENTFS_FUZZ_SEED ?? Date.now() % 100_000)

let child: string
let dispose: () => Promise<void>
let dir: string
beforeAll(async () => {
  ;({ script: child, dispose } = await bundleChild('history-child'))
  dir = await mkdtemp(join(tmpdir(), 'agentfs-history-crash-'))
}, 60_000)
afterAll(async () => {
  await dispose()
  await rm(dir, { recursive: true, force: true })
})

interface Intent {
  i: number
  kind: string
  name?: string
  holds?: string
  after?: string
}

async function snapshotDigest(agent: AgentFS, name: string): Promise<string> {
  const hash = createHash('sha256')
  const files: string[] = []
  for await (const entry of agent.history.walk(name))
    if (entry.type === 'file' && entry.path.startsWith('/h/')) files.push(entry.path)
  for (const path of files.sort())
    hash
      .update(`${path}\0`)
      .update(await agent.history.readFile(path, { snapshot: name }))
      .update('\0')
  return hash.digest('hex')
}

test(`history crash safety: ${KILLS} SIGKILLs during snapshots, restores and branch commits`, async () => {
  const path = join(dir, 'history.db')
  await (await AgentFS.open({ path })).close()
  const held = new Map<string, string>()
  let midStep = 0
  for (let round = 0; round < KILLS; round++) {
    const seed = BASE_SEED + round
    const logPath = join(dir, `r${round}.log`)
    await runAndKill(child, [path, logPath, String(seed)], 100 + ((seed * 7919) % 1500))
    let state: string | undefined
    let inFlight: Intent | undefined
    for (const line of readFileSync(logPath, 'utf8').split('\n')) {
      if (line.startsWith('start ')) state = line.slice(6)
      else if (line.startsWith('snap ')) {
        const [, name, digest] = line.split(' ')
        held.set(name!, digest!)
      } else if (line.startsWith('intent ')) inFlight = JSON.parse(line.slice(7)) as Intent
      else if (line.startsWith('done ')) {
        const [, i, digest] = line.split(' ')
        expect(inFlight?.i).toBe(Number(i))
        // A restore or commit that finished left exactly the state it promised.
        if (inFlight?.after !== undefined)
          expect(digest, `${inFlight.kind} ${inFlight.name} (seed ${seed})`).toBe(inFlight.after)
        if (inFlight?.kind === 'snapshot') held.set(inFlight.name!, inFlight.holds!)
        state = digest
        inFlight = undefined
      }
    }
    const agent = await AgentFS.open({ path })
    try {
      expect((await fsck(agent.db)).findings, `seed ${seed}`).toEqual([])
      const allowed = new Set([state, inFlight?.after].filter(Boolean))
      const now = await digestOf(agent.fs)
      expect(allowed.has(now), `seed ${seed}: tree after a kill during ${inFlight?.kind}`).toBe(
        true,
      )
      if (inFlight?.kind === 'snapshot') held.set(inFlight.name!, inFlight.holds!)
      for (const s of await agent.history.listSnapshots()) {
        const expected = held.get(s.name)
        if (expected === undefined) continue
        expect(await snapshotDigest(agent, s.name), `seed ${seed}: snapshot ${s.name}`).toBe(
          expected,
        )
      }
      if (inFlight) midStep++
    } finally {
      await agent.close()
    }
  }
  console.log(`history crash safety: ${KILLS} kills, ${midStep} mid-step (base seed ${BASE_SEED})`)
}, 3_600_000)
