import { fixedClock } from '@agentfs/core'
import { describe, expect, test } from 'vitest'
import type { SyncedAgentFS } from '../src/index.js'
import { converge, files, world } from './helpers.js'

// Two clients edit offline, then sync in each order; afterwards both hold the same state,
// fsck-clean, and nothing either wrote is lost (a loser is a conflict copy, and logged).
const ORDERS = {
  'a push, b push, a pull, b pull': ['a.push', 'b.push', 'a.pull', 'b.pull'],
  'b push, a push, a pull, b pull': ['b.push', 'a.push', 'a.pull', 'b.pull'],
  'a push, b pull, b push, a pull': ['a.push', 'b.pull', 'b.push', 'a.pull'],
  'b pull, a pull (pull pushes first)': ['b.pull', 'a.pull'],
} as const

async function run(a: SyncedAgentFS, b: SyncedAgentFS, order: readonly string[]) {
  const clients = { a, b }
  for (const step of order) {
    const [who, op] = step.split('.') as ['a' | 'b', 'push' | 'pull']
    await clients[who].sync[op]()
  }
  return converge(a, b)
}

/** Two clients on one server, the seed written by `a` and pulled by `b`. */
async function pair(seed?: (a: SyncedAgentFS) => Promise<unknown>) {
  const w = await world()
  const a = await w.client('a', { clock: fixedClock({ start: 1_800_000_000 }) })
  if (seed) await seed(a)
  await a.sync.push()
  // b's clock is later: its kv writes are the later ones.
  const b = await w.client('b', { clock: fixedClock({ start: 1_800_000_100 }) })
  return { ...w, a, b }
}

const contents = (tree: Record<string, string>) => Object.values(tree).sort()

for (const [label, order] of Object.entries(ORDERS)) {
  describe(`two clients: ${label}`, () => {
    test('different new files: both kept', async () => {
      const { a, b } = await pair()
      await a.fs.writeFile('/a.txt', 'A')
      await b.fs.writeFile('/b.txt', 'B')
      await run(a, b, order)
      expect(await files(a)).toEqual({ '/a.txt': 'A', '/b.txt': 'B' })
    })

    test('the same new name: one keeps it, the other is a conflict copy, logged', async () => {
      const { a, b, conflicts } = await pair()
      await a.fs.writeFile('/same.txt', 'from a')
      await b.fs.writeFile('/same.txt', 'from b')
      await run(a, b, order)
      const tree = await files(a)
      expect(contents(tree)).toEqual(['from a', 'from b'])
      expect(Object.keys(tree).sort()[0]).toBe('/same.txt')
      expect(Object.keys(tree).sort()[1]).toMatch(/^\/same\.txt \(conflict \d+-\d+\)$/)
      expect(conflicts.map((c) => c.kind)).toEqual(['name'])
      expect(await a.sync.conflicts()).toHaveLength(1)
    })

    test('the same file rewritten on both: no torn file, the loser is a conflict copy', async () => {
      const { a, b, conflicts } = await pair((a) => a.fs.writeFile('/f.txt', 'o'.repeat(9000)))
      await a.fs.writeFile('/f.txt', 'A'.repeat(9000))
      await b.fs.writeFile('/f.txt', 'B'.repeat(5000))
      await run(a, b, order)
      const tree = await files(a)
      expect(contents(tree)).toEqual(['A'.repeat(9000), 'B'.repeat(5000)])
      expect(Object.keys(tree)).toContain('/f.txt')
      expect(conflicts.map((c) => c.kind)).toEqual(['write'])
    })

    test('renames of two files into one name: both kept', async () => {
      const { a, b } = await pair(async (a) => {
        await a.fs.mkdir('/in')
        await a.fs.writeFile('/x', 'x')
        await a.fs.writeFile('/y', 'y')
      })
      await a.fs.rename('/x', '/in/target')
      await b.fs.rename('/y', '/in/target')
      await run(a, b, order)
      const tree = await files(a)
      expect(contents(tree)).toEqual(['x', 'y'])
      expect(Object.keys(tree)).toContain('/in/target')
    })

    test('a delete against a rewrite: the rewrite survives', async () => {
      const { a, b } = await pair((a) => a.fs.writeFile('/doc.md', 'v1'))
      await a.fs.rm('/doc.md')
      await b.fs.writeFile('/doc.md', 'v2 from b')
      await run(a, b, order)
      expect(contents(await files(a))).toEqual(['v2 from b'])
    })

    test('a directory removed while the other client adds to it: the entry moves to /', async () => {
      const { a, b, conflicts } = await pair((a) => a.fs.mkdir('/tmp'))
      await a.fs.rmdir('/tmp')
      await b.fs.writeFile('/tmp/new.txt', 'keep me')
      await run(a, b, order)
      const tree = await files(a)
      expect(contents(tree)).toEqual(['keep me'])
      expect(Object.keys(tree)[0]).toMatch(/^\/new\.txt \(conflict \d+-\d+\)$/)
      expect(conflicts.map((c) => c.kind)).toEqual(['parent-gone'])
    })

    test('kv: the later write wins whatever the push order; the loser is logged', async () => {
      const { a, b, conflicts } = await pair((a) => a.kv.set('k', 'original'))
      await a.kv.set('k', 'from a (earlier)')
      await b.kv.set('k', 'from b (later)')
      await a.kv.set('only-a', 1)
      await b.kv.set('only-b', 2)
      const state = await run(a, b, order)
      expect(await a.kv.get('k')).toBe('from b (later)')
      expect(await a.kv.get('only-a')).toBe(1)
      expect(await a.kv.get('only-b')).toBe(2)
      expect(state.kv_store).toHaveLength(3)
      expect(conflicts.filter((c) => c.kind === 'kv').map((c) => c.path)).toEqual(['k'])
    })

    test('kv within one second: the later write by the microsecond wins, deletes included', async () => {
      const w = await world()
      // Both clocks in the same second; b's half a second later than a's.
      const clock = (offsetNs: number) => {
        let ns = offsetNs
        return {
          now: () => {
            ns += 1000
            return { sec: 1_800_000_000, nsec: ns }
          },
        }
      }
      const a = await w.client('a', { clock: clock(100_000_000) })
      await a.kv.set('k', 'seed')
      await a.kv.set('d', 'seed')
      await a.kv.set('e', 'seed')
      await a.sync.push()
      const b = await w.client('b', { clock: clock(600_000_000) })
      await b.sync.pull()
      await a.kv.set('k', 'a (earlier)')
      await b.kv.set('k', 'b (later)')
      await a.kv.delete('d') // earlier than b's write: the write stays
      await b.kv.set('d', 'b kept')
      await a.kv.set('e', 'a (earlier)')
      await b.kv.delete('e') // later than a's write: the key goes
      await run(a, b, order)
      for (const agent of [a, b]) {
        expect(await agent.kv.get('k')).toBe('b (later)')
        expect(await agent.kv.get('d')).toBe('b kept')
        expect(await agent.kv.get('e')).toBeUndefined()
      }
    })

    test('tool calls: every call of both clients kept, ids stable', async () => {
      const { a, b } = await pair()
      const call = (name: string) => ({
        name,
        parameters: {},
        result: name,
        startedAt: 1,
        completedAt: 2,
      })
      const a1 = await a.tools.record(call('a-read'))
      const a2 = await a.tools.record(call('a-write'))
      const b1 = await b.tools.record(call('b-grep'))
      await run(a, b, order)
      const names = async (agent: SyncedAgentFS) =>
        Promise.all([a1, a2, b1].map(async (id) => (await agent.tools.get(id))?.name))
      expect(await names(a)).toEqual(['a-read', 'a-write', 'b-grep'])
      expect(await names(b)).toEqual(['a-read', 'a-write', 'b-grep'])
    })

    test('hard links made on both: every name kept, nlink counts them all', async () => {
      const { a, b } = await pair((a) => a.fs.writeFile('/orig', 'shared'))
      await a.fs.link('/orig', '/link-a')
      await b.fs.link('/orig', '/link-b')
      await run(a, b, order)
      for (const agent of [a, b]) {
        expect((await agent.fs.stat('/orig')).nlink).toBe(3)
        expect(await agent.fs.readFile('/link-a', 'utf8')).toBe('shared')
        expect(await agent.fs.readFile('/link-b', 'utf8')).toBe('shared')
      }
    })
  })
}

describe('deletes against links', () => {
  for (const [label, order] of Object.entries(ORDERS)) {
    test(`${label}: a link made while the last name is removed elsewhere`, async () => {
      const { a, b } = await pair((a) => a.fs.writeFile('/only', 'data'))
      await a.fs.rm('/only')
      await b.fs.link('/only', '/second')
      const state = await run(a, b, order)
      // Whichever arrived first decides: the file with its new name, or nothing at all; never
      // an entry without its inode or chunks without an inode (converge checks fsck).
      const tree = await files(a)
      if (Object.keys(tree).length > 0) expect(tree).toEqual({ '/second': 'data' })
      expect(state.fs_dentry).toHaveLength(Object.keys(tree).length)
    })
  }
})

describe('directories moved into each other on two clients', () => {
  for (const [label, order] of Object.entries(ORDERS)) {
    test(`${label}: the cycle is broken, every file stays reachable`, async () => {
      const { a, b, conflicts } = await pair(async (a) => {
        await a.fs.mkdir('/x')
        await a.fs.mkdir('/y')
        await a.fs.writeFile('/x/in-x', 'x')
        await a.fs.writeFile('/y/in-y', 'y')
      })
      await a.fs.rename('/x', '/y/x')
      await b.fs.rename('/y', '/x/y')
      await run(a, b, order)
      expect(Object.values(await files(a)).sort()).toEqual(['x', 'y'])
      expect(conflicts.some((c) => c.kind === 'cycle')).toBe(true)
    })
  }
})
