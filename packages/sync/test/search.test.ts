import { expect, test } from 'vitest'
import { converge, world } from './helpers.js'

const found = async (
  agent: {
    fs: { search(q: string): Promise<{ hits: readonly { path: string }[]; store: string }> }
  },
  query: string,
) => {
  const result = await agent.fs.search(query)
  expect(result.store).toBe('postings')
  return result.hits.map((h) => h.path).sort()
}

test('the search index syncs as rows keyed by file version: no client finds a file by words another client replaced', async () => {
  const w = await world()
  const a = await w.client('a')
  await a.fs.writeFile('/notes.md', 'alpha beta\n')
  await a.fs.writeFile('/other.md', 'beta gamma\n')
  expect(await found(a, 'beta')).toEqual(['/notes.md', '/other.md'])
  await a.sync.push()
  // b receives a's index rows with the files; they are current there too.
  const b = await w.client('b')
  const docs = async () =>
    Number(
      (
        await b.db.execute<{ n: number }>({
          sql: 'SELECT count(*) AS n FROM agentfs_search_doc WHERE words >= 0',
        })
      ).rows[0]!.n,
    )
  expect(await docs()).toBe(2)
  expect(await found(b, 'alpha')).toEqual(['/notes.md'])
  // Both rewrite the files and index them before they sync: rows of two versions meet.
  await b.fs.writeFile('/notes.md', 'delta\n')
  expect(await found(b, 'delta')).toEqual(['/notes.md'])
  await a.fs.writeFile('/other.md', 'epsilon\n')
  expect(await found(a, 'epsilon')).toEqual(['/other.md'])
  await converge(a, b)
  for (const agent of [a, b]) {
    expect(await found(agent, 'alpha')).toEqual([])
    expect(await found(agent, 'gamma')).toEqual([])
    expect(await found(agent, 'delta')).toEqual(['/notes.md'])
    expect(await found(agent, 'epsilon')).toEqual(['/other.md'])
  }
})
