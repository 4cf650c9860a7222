import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bagOfWordsEmbedder } from '@agentfs/test-kit'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { AgentFS } from '../src/index.js'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-sdk-embed-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const SYNONYMS = [['car', 'automobile']]
const until = async (check: () => Promise<boolean>, ms = 10_000) => {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('AgentFS.open({ embed })', () => {
  test('vectors are made in the background as files change; search ranks by meaning', async () => {
    const embed = bagOfWordsEmbedder({ synonyms: SYNONYMS })
    const agent = await AgentFS.open({ path: join(dir, 'a.db'), embed, embedIntervalMs: 20 })
    await agent.fs.writeFile('/garage.md', 'The automobile needs new tyres.\n')
    await agent.fs.writeFile('/market.md', 'Apples and pears.\n')
    // The write returned before any vector was made: the model is never on the write path.
    await until(async () => (await agent.embeddingBacklog()) === 0)
    const found = await agent.fs.search('car', { limit: 1 })
    expect(found.hits.map((h) => h.path)).toEqual(['/garage.md'])
    expect(found.behind).toBe(0)
    await agent.fs.writeFile('/garage.md', 'Now a bakery.\n')
    await until(async () => (await agent.embeddingBacklog()) === 0)
    expect((await agent.fs.search('bakery', { mode: 'semantic', limit: 1 })).hits[0]!.path).toBe(
      '/garage.md',
    )
    await agent.close()
  })

  test('embedIntervalMs: 0 leaves it to updateEmbeddings(); a failing model is reported once, then retried', async () => {
    const embed = bagOfWordsEmbedder()
    const quiet = await AgentFS.open({ path: join(dir, 'b.db'), embed, embedIntervalMs: 0 })
    await quiet.fs.writeFile('/a.md', 'alpha beta\n')
    await new Promise((r) => setTimeout(r, 100))
    expect(await quiet.embeddingBacklog()).toBe(1)
    expect(await quiet.updateEmbeddings()).toMatchObject({ files: 1, backlog: 0 })
    await quiet.close()

    const warnings: string[] = []
    let failing = true
    const flaky = {
      ...embed,
      async embed(texts: readonly string[]) {
        if (failing) throw new Error('model offline')
        return embed.embed(texts)
      },
    }
    const agent = await AgentFS.open({
      path: join(dir, 'c.db'),
      embed: flaky,
      embedIntervalMs: 10,
      onWarning: (m) => warnings.push(m),
    })
    await agent.fs.writeFile('/x.md', 'gamma\n')
    await until(async () => warnings.length > 0)
    await new Promise((r) => setTimeout(r, 200))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(
      /semantic search: making vectors with bag-of-words-64 failed \(model offline\); retrying in \d+ ms/,
    )
    failing = false
    await until(async () => (await agent.embeddingBacklog()) === 0)
    await agent.close()
  })

  test('a model that never answers holds up neither writes nor close', async () => {
    const stuck = { ...bagOfWordsEmbedder(), embed: () => new Promise<never>(() => {}) }
    const agent = await AgentFS.open({ path: join(dir, 's.db'), embed: stuck, embedIntervalMs: 5 })
    for (let i = 0; i < 20; i++) await agent.fs.writeFile(`/f${i}.md`, `file ${i}\n`)
    await new Promise((r) => setTimeout(r, 50))
    const started = Date.now()
    await agent.close()
    expect(Date.now() - started).toBeLessThan(5000)
    const again = await AgentFS.open({ path: join(dir, 's.db') })
    expect(await again.fs.readdir('/')).toHaveLength(20)
    await again.close()
  })

  test('without embed, semantic search and updateEmbeddings say what to pass', async () => {
    const agent = await AgentFS.open({ path: join(dir, 'd.db') })
    await expect(agent.fs.search('x', { mode: 'semantic' })).rejects.toThrow(
      /semantic search needs an embedder/,
    )
    expect(() => agent.updateEmbeddings()).toThrow(/updateEmbeddings needs an embedder/)
    expect(await agent.embeddingBacklog()).toBe(0)
    await agent.close()
    await expect(
      AgentFS.open({
        path: join(dir, 'e.db'),
        embed: { model: 'm', dimensions: 0, embed: async () => [] },
      }),
    ).rejects.toThrow(/embed.dimensions must be a whole number/)
  })

  test('the nodeFs() worker opens the database of an agent with an embedder', async () => {
    const agent = await AgentFS.open({
      path: join(dir, 'w.db'),
      embed: bagOfWordsEmbedder(),
      embedIntervalMs: 0,
    })
    agent.nodeFs().writeFileSync('/w.txt', 'from the worker')
    expect(await agent.fs.readFile('/w.txt', 'utf8')).toBe('from the worker')
    await agent.close()
  })
})
