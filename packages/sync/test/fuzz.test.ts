import fc from 'fast-check'
import { expect, test } from 'vitest'
import type { SyncedAgentFS } from '../src/index.js'
import { converge, files, world } from './helpers.js'

// Random offline work on three clients, synced in random orders round after round: after
// convergence every copy is identical and fsck-clean (`converge`), every tool call of every
// client is there, and the pushes never failed (a failed push is a rule that let a server
// constraint fire). AGENTFS_SYNC_FUZZ_RUNS raises the number of runs.

// Few names and places, so that clients often touch the same ones.
const NAMES = ['a.txt', 'b.txt']
const DIRS = ['/', '/d1', '/d1/sub']
const path = (dir: string, name: string) => (dir === '/' ? `/${name}` : `${dir}/${name}`)

const opArb = fc.oneof(
  fc.record({
    kind: fc.constant('write'),
    dir: fc.constantFrom(...DIRS),
    name: fc.constantFrom(...NAMES),
  }),
  fc.record({
    kind: fc.constant('append'),
    dir: fc.constantFrom(...DIRS),
    name: fc.constantFrom(...NAMES),
  }),
  fc.record({
    kind: fc.constant('rm'),
    dir: fc.constantFrom(...DIRS),
    name: fc.constantFrom(...NAMES),
  }),
  fc.record({
    kind: fc.constant('rename'),
    dir: fc.constantFrom(...DIRS),
    name: fc.constantFrom(...NAMES),
    to: fc.constantFrom(...DIRS),
    toName: fc.constantFrom(...NAMES),
  }),
  fc.record({
    kind: fc.constant('link'),
    dir: fc.constantFrom(...DIRS),
    name: fc.constantFrom(...NAMES),
    toName: fc.constantFrom('l1', 'l2'),
  }),
  fc.record({ kind: fc.constant('mkdir'), dir: fc.constantFrom(...DIRS) }),
  fc.record({ kind: fc.constant('rmdir'), dir: fc.constantFrom('/d1/sub', '/d2') }),
  fc.record({
    kind: fc.constant('movedir'),
    dir: fc.constantFrom('/d1', '/d2'),
    to: fc.constantFrom('/d1', '/d2'),
  }),
  fc.record({ kind: fc.constant('kv'), key: fc.constantFrom('k1', 'k2'), del: fc.boolean() }),
  fc.record({ kind: fc.constant('tool') }),
)
type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never

let counter = 0
async function apply(agent: SyncedAgentFS, who: string, op: Op): Promise<void> {
  const token = `${who}-${counter++}`
  try {
    switch (op.kind) {
      case 'write':
        return await agent.fs.writeFile(path(op.dir, op.name), token)
      case 'append':
        return await agent.fs.appendFile(path(op.dir, op.name), `+${token}`)
      case 'rm':
        return await agent.fs.rm(path(op.dir, op.name))
      case 'rename':
        return await agent.fs.rename(path(op.dir, op.name), path(op.to, op.toName))
      case 'link':
        return await agent.fs.link(path(op.dir, op.name), path(op.dir, op.toName))
      case 'mkdir':
        return void (await agent.fs.mkdir(op.dir, { recursive: true }))
      case 'rmdir':
        return await agent.fs.rmdir(op.dir)
      case 'movedir':
        return await agent.fs.rename(op.dir, `${op.to}/moved-${token}`)
      case 'kv':
        return void (op.del ? await agent.kv.delete(op.key) : await agent.kv.set(op.key, token))
      case 'tool':
        return void (await agent.tools.record({ name: token, startedAt: 1, completedAt: 2 }))
    }
  } catch (error) {
    // The filesystem refusing an operation (ENOENT, EEXIST, ENOTEMPTY, EINVAL …) is expected.
    if (!(error as { syscall?: string }).syscall) throw error
  }
}

const roundArb = fc.record({
  ops: fc.tuple(...[0, 1, 2].map(() => fc.array(opArb, { maxLength: 8 }))),
  order: fc.shuffledSubarray(['a.push', 'a.pull', 'b.push', 'b.pull', 'c.push', 'c.pull'], {
    minLength: 2,
  }),
})

test('three clients, random offline work, random sync orders: converged, fsck-clean, nothing logged lost', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(roundArb, { minLength: 1, maxLength: 4 }), async (rounds) => {
      const { client } = await world()
      const a = await client('a')
      for (const dir of ['/d1/sub', '/d2']) await a.fs.mkdir(dir, { recursive: true })
      await a.sync.push()
      const b = await client('b')
      const c = await client('c')
      const clients = { a, b, c }
      const tools = new Set<string>()
      for (const round of rounds) {
        for (const [i, who] of (['a', 'b', 'c'] as const).entries())
          for (const op of round.ops[i]!) {
            const before = counter
            await apply(clients[who], who, op)
            if (op.kind === 'tool') tools.add(`${who}-${before}`)
          }
        for (const step of round.order) {
          const [who, what] = step.split('.') as ['a' | 'b' | 'c', 'push' | 'pull']
          await clients[who].sync[what]()
        }
      }
      await converge(a, b, c)
      const names = new Set(
        (await a.db.execute<{ name: string }>({ sql: 'SELECT name FROM tool_calls' })).rows.map(
          (r) => r.name,
        ),
      )
      for (const name of tools) expect(names.has(name), name).toBe(true)
      // Every file is readable on every copy.
      for (const agent of [a, b, c]) await files(agent)
      for (const agent of [a, b, c]) await agent.close()
    }),
    { numRuns: Number(process.env.AGENTFS_SYNC_FUZZ_RUNS ?? 6), endOnFailure: true },
  )
}, 600_000)
