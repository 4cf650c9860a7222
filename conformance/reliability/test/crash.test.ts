import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fsck } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { applyToModel, type CrashModel, type CrashOp, opContent } from './fixtures/crash-ops.js'
import { bundleChild, runAndKill } from './helpers.js'

/**
 * Crash safety: a writer is killed with SIGKILL at a random moment, again and again, on one
 * database. After every kill the database opens, fsck is clean, and every operation the writer
 * logged as committed is there (the one in flight is either wholly there or wholly absent; a
 * streamed file, which commits batch by batch, may hold any prefix).
 * CI: 12 kills. Long: AGENTFS_LONG=1 (300 kills; AGENTFS_CRASH_KILLS overrides).
 */
const LONG = process.env.AGENTFS_LONG === '1'
const KILLS = Number(process.env.AGENTFS_CRASH_KILLS ?? (LONG ? 300 : 12))
const BASE_SEED = Number(process.env.AGENTFS_FUZZ_SEED ?? Date.now() % 100_000)

let child: string
let disposeChild: () => Promise<void>
let dir: string

beforeAll(async () => {
  ;({ script: child, dispose: disposeChild } = await bundleChild('crash-child'))
  dir = await mkdtemp(join(tmpdir(), 'agentfs-crash-'))
}, 60_000)

afterAll(async () => {
  await disposeChild()
  await rm(dir, { recursive: true, force: true })
})

function readLog(path: string): { done: CrashOp[]; inFlight: CrashOp | undefined } {
  const done: CrashOp[] = []
  let pending: CrashOp | undefined
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line.startsWith('intent ')) pending = JSON.parse(line.slice(7)) as CrashOp
    else if (line.startsWith('done ')) {
      if (!pending || pending.i !== Number(line.slice(5)))
        throw new Error(`log out of order: ${line}`)
      done.push(pending)
      pending = undefined
    }
  }
  return { done, inFlight: pending }
}

async function stateOf(agent: AgentFS, prefix: string) {
  const files = new Map<string, Buffer>()
  if (await agent.fs.exists(`/${prefix}`)) {
    for (const rel of await agent.fs.readdir(`/${prefix}`, { recursive: true })) {
      const path = `/${prefix}/${rel}`
      if ((await agent.fs.lstat(path)).isFile()) files.set(path, await agent.fs.readFile(path))
    }
  }
  const kv = new Map<string, number>()
  for await (const entry of agent.kv.entries({ prefix: `${prefix}:` }))
    kv.set(entry.key, (entry.value as { i: number }).i)
  const tools = (await agent.tools.byName(`${prefix}-tool`, { limit: 10_000 })).length
  return { files, kv, tools }
}

function sameState(actual: CrashModel, expected: CrashModel, free?: string): string | undefined {
  const paths = new Set([...actual.files.keys(), ...expected.files.keys()])
  for (const path of paths) {
    if (path === free) continue
    const a = actual.files.get(path)
    const e = expected.files.get(path)
    if (a === undefined || e === undefined || !a.equals(e))
      return `${path}: ${a?.byteLength ?? 'missing'} bytes, expected ${e?.byteLength ?? 'missing'}`
  }
  const keys = new Set([...actual.kv.keys(), ...expected.kv.keys()])
  for (const key of keys)
    if (actual.kv.get(key) !== expected.kv.get(key))
      return `kv ${key}: ${actual.kv.get(key)}, expected ${expected.kv.get(key)}`
  if (actual.tools !== expected.tools)
    return `tool calls: ${actual.tools}, expected ${expected.tools}`
  return undefined
}

test(`crash safety: ${KILLS} SIGKILLs at random moments lose no committed operation`, async () => {
  const path = join(dir, 'crash.db')
  await (await AgentFS.open({ path })).close()
  let committed = 0
  let inFlight = 0
  const verified = new Map<string, CrashModel>()
  for (let round = 0; round < KILLS; round++) {
    const seed = BASE_SEED + round
    const prefix = `r${round}`
    const logPath = join(dir, `${prefix}.log`)
    const delay = 30 + ((seed * 7919) % 500)
    await runAndKill(child, [path, logPath, String(seed), prefix], delay)

    const log = readLog(logPath)
    const before: CrashModel = { files: new Map(), kv: new Map(), tools: 0 }
    for (const op of log.done) applyToModel(before, op)
    const after: CrashModel = {
      files: new Map(before.files),
      kv: new Map(before.kv),
      tools: before.tools,
    }
    if (log.inFlight) applyToModel(after, log.inFlight)

    const agent = await AgentFS.open({ path })
    try {
      const report = await fsck(agent.db)
      expect(report.findings, `seed ${seed}`).toEqual([])
      const actual = await stateOf(agent, prefix)
      const free = log.inFlight?.kind === 'stream' ? log.inFlight.path : undefined
      const mismatch = sameState(actual, before, free) && sameState(actual, after, free)
      expect(
        mismatch,
        `seed ${seed} (replay: AGENTFS_FUZZ_SEED=${seed} AGENTFS_CRASH_KILLS=1)`,
      ).toBe(undefined)
      // The streamed file in flight commits batch by batch: it holds what it held before, or a
      // prefix of the new content — never bytes from anywhere else.
      if (free !== undefined && log.inFlight?.kind === 'stream') {
        const got = actual.files.get(free)
        const previous = before.files.get(free)
        const next = opContent(log.inFlight)
        const valid =
          (got === undefined && previous === undefined) ||
          (got !== undefined && previous !== undefined && got.equals(previous)) ||
          (got !== undefined &&
            got.byteLength <= next.byteLength &&
            got.equals(next.subarray(0, got.byteLength)))
        expect(
          valid,
          `seed ${seed}: in-flight stream ${free} holds ${got?.byteLength} bytes that are not a prefix`,
        ).toBe(true)
      }
      // Every earlier round's data is still exactly what was verified after its own kill.
      for (const [earlier, state] of verified) {
        expect(
          sameState(await stateOf(agent, earlier), state),
          `round ${earlier} changed after a later kill (seed ${seed})`,
        ).toBe(undefined)
      }
      verified.set(prefix, actual)
    } finally {
      await agent.close()
    }
    committed += log.done.length
    if (log.inFlight) inFlight++
  }
  console.log(
    `crash safety: ${KILLS} kills survived, ${committed} committed operations verified, ${inFlight} kills landed mid-operation (base seed ${BASE_SEED})`,
  )
  expect(committed).toBeGreaterThan(KILLS)
}, 3_600_000)
