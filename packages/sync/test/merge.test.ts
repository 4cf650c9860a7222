import { expect, test } from 'vitest'
import { converge, files, world } from './helpers.js'

const PLAN = '# Plan\n\none\ntwo\nthree\nfour\nfive\n'

/** Two clients that both hold the synced PLAN, each then rewrites it offline. */
async function rewrittenOnBoth(byA: string, byB: string) {
  const w = await world()
  const a = await w.client('a')
  await a.fs.writeFile('/plan.md', PLAN)
  await a.sync.push()
  const b = await w.client('b')
  expect(await b.fs.readFile('/plan.md', 'utf8')).toBe(PLAN)
  await a.fs.writeFile('/plan.md', byA)
  await b.fs.writeFile('/plan.md', byB)
  await a.sync.push()
  return { ...w, a, b }
}

test('two clients rewrite different lines of a synced text file: merged on both, no copy', async () => {
  const { a, b, conflicts } = await rewrittenOnBoth(
    '# Plan\n\nONE (a)\ntwo\nthree\nfour\nfive\n',
    '# Plan\n\none\ntwo\nthree\nfour\nFIVE (b)\n',
  )
  // b pulls: its write lost to a's, then merges with it (the last synced version is the base).
  const report = await b.sync.pull()
  expect(report.conflicts.map((c) => [c.kind, c.path])).toEqual([['merged', '/plan.md']])
  await converge(a, b)
  const merged = '# Plan\n\nONE (a)\ntwo\nthree\nfour\nFIVE (b)\n'
  expect(await files(a)).toEqual({ '/plan.md': merged })
  expect(await files(b)).toEqual({ '/plan.md': merged })
  expect(conflicts.map((c) => c.kind)).toEqual(['merged'])
  // The merge is a change of its own, with a message saying what it merged.
  // (Sequence numbers come from each client's slot, so the feed is not in time order here.)
  const merges = (await a.changes.since(0)).changes.filter((c) => typeof c.message === 'string')
  expect(merges.map((c) => [c.op, c.path])).toEqual([['write', '/plan.md']])
  expect(merges[0]!.message).toMatch(
    /^merge of this client's write of \/plan.md \(version \d+\) with another client's \(version \d+\); the ancestor is the last synced version$/,
  )
})

test('several writes of the file before the push merge against the version synced, not an unsynced one', async () => {
  const { a, b } = await rewrittenOnBoth(
    '# Plan\n\nONE (a)\ntwo\nthree\nfour\nfive\n',
    '# Plan\n\none\ntwo\nthree (b draft)\nfour\nfive\n',
  )
  await b.fs.writeFile('/plan.md', '# Plan\n\none\ntwo\nthree (b)\nfour\nfive\n')
  await b.sync.pull()
  await converge(a, b)
  expect(await files(a)).toEqual({ '/plan.md': '# Plan\n\nONE (a)\ntwo\nthree (b)\nfour\nfive\n' })
})

test('the same lines rewritten on both: a conflict copy whose record names the regions', async () => {
  const { a, b, conflicts } = await rewrittenOnBoth(
    '# Plan\n\none\nTWO (a)\nthree\nfour\nfive\n',
    '# Plan\n\none\nTWO (b)\nthree\nfour\nfive\n',
  )
  await b.sync.pull()
  await converge(a, b)
  const tree = await files(a)
  expect(tree['/plan.md']).toBe('# Plan\n\none\nTWO (a)\nthree\nfour\nfive\n')
  const copies = Object.entries(tree).filter(([path]) => path.includes('(conflict'))
  expect(copies.map(([, text]) => text)).toEqual(['# Plan\n\none\nTWO (b)\nthree\nfour\nfive\n'])
  expect(conflicts).toHaveLength(1)
  expect(conflicts[0]!.kind).toBe('write')
  expect(conflicts[0]!.detail).toMatch(
    /1 region\(s\) changed on both sides \(this client's lines 4\)$/,
  )
})

test('binary files are never merged: the losing write stays a copy', async () => {
  const w = await world()
  const a = await w.client('a')
  await a.fs.writeFile('/blob.bin', Buffer.from([0, 1, 2, 10, 3, 10]))
  await a.sync.push()
  const b = await w.client('b')
  await a.fs.writeFile('/blob.bin', Buffer.from([0, 9, 2, 10, 3, 10]))
  await b.fs.writeFile('/blob.bin', Buffer.from([0, 1, 2, 10, 9, 10]))
  await a.sync.push()
  await b.sync.pull()
  await converge(a, b)
  expect(w.conflicts.map((c) => c.kind)).toEqual(['write'])
  expect(w.conflicts[0]!.detail).toMatch(/not merged: not text/)
  expect(Object.keys(await files(a))).toHaveLength(2)
})
