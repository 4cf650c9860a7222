import { fixedClock } from '@agentfs/core'
import type { FileSystem } from '@agentfs/fs'
import { AgentFS } from '@agentfs/sdk'
import { bagOfWordsEmbedder } from '@agentfs/test-kit'
import { describe, expect, test } from 'vitest'
import { createAgentTools } from '../src/index.js'
import { openTools } from './open-tools.js'

describe('the search tool', () => {
  test('ranks files for a topic, with line numbers, and is audited', async () => {
    const { agent, run } = await openTools()
    await agent.fs.mkdir('/src')
    await agent.fs.writeFile(
      '/src/retry.ts',
      'export const MAX_RETRIES = 3\n// retry with backoff\nfunction backoff() {}\n',
    )
    await agent.fs.writeFile(
      '/src/auth.ts',
      'export function login() {}\n// no retry here, a backoff elsewhere\n',
    )
    await agent.fs.writeFile('/README.md', 'Nothing to see.\n')
    const out = await run('search', { query: 'retry backoff' })
    expect(out.isError).toBeFalsy()
    const lines = out.text.split('\n')
    expect(lines[0]).toBe('2 files below / for retry backoff (best first):')
    expect(lines[1]).toMatch(/^\/src\/retry\.ts {2}\(score [\d.e+-]+\)$/)
    expect(lines.slice(2, 4)).toEqual(['  2: // retry with backoff', '  3: function backoff() {}'])
    expect(lines[4]).toMatch(/^\/src\/auth\.ts {2}\(score/)
    expect((await run('search', { query: 'login', path: '/src', lines: 0 })).text).toBe(
      '1 file below /src for login (best first):\n/src/auth.ts  (score 0.467)',
    )
    const none = await run('search', { query: 'kubernetes' })
    expect(none.text).toMatch(/^No file below \/ has all of: kubernetes\. /)
    const bad = await run('search', { query: '"open' })
    expect(bad.isError).toBe(true)
    expect(bad.text).toMatch(/unclosed quote/)
    const calls = await agent.tools.query({ name: 'search' })
    expect(calls.map((c) => c.parameters)).toContainEqual({ query: 'retry backoff' })
  })

  test("searches by meaning with the database's embedding model (mode), and says when there is none", async () => {
    const embed = bagOfWordsEmbedder({ synonyms: [['car', 'automobile', 'vehicle']] })
    const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock(), embed })
    try {
      await agent.fs.writeFile('/garage.md', 'Where the automobile is parked.\n')
      await agent.fs.writeFile('/kitchen.md', 'Where the pans are kept.\n')
      await agent.updateEmbeddings()
      const tools = createAgentTools({ fs: agent.fs })
      const run = (input: unknown) => tools.get('search')!.execute(input)
      // The words alone find nothing; by meaning, the garage.
      expect((await run({ query: 'car', mode: 'text' })).text).toMatch(
        /^No file below \/ has all of: car\./,
      )
      const meaning = await run({ query: 'car', mode: 'semantic', limit: 1 })
      expect(meaning.text).toMatch(
        /^1 file below \/ for car \(best first\):\n\/garage\.md {2}\(score/,
      )
      expect(meaning.text).toContain('1: Where the automobile is parked.')
      // The default with a model is hybrid: the garage first.
      expect((await run({ query: 'car' })).text.split('\n')[1]).toMatch(/^\/garage\.md/)
      expect((await run({ query: 'car', mode: 'fuzzy' })).isError).toBe(true)
    } finally {
      await agent.close()
    }
    const { run } = await openTools()
    const none = await run('search', { query: 'car', mode: 'semantic' })
    expect(none.isError).toBe(true)
    expect(none.text).toMatch(/embed/)
  })

  test('a confined root searches inside it only and shows its paths', async () => {
    const { agent } = await openTools()
    await agent.fs.mkdir('/workspace/docs', { recursive: true })
    await agent.fs.writeFile('/workspace/docs/a.md', 'deploy steps')
    await agent.fs.writeFile('/secret.md', 'deploy keys deploy deploy')
    const tools = createAgentTools({ fs: agent.fs, root: '/workspace' })
    const out = await tools.get('search')!.execute({ query: 'deploy' })
    expect(out.text).toBe(
      '1 file below / for deploy (best first):\n/docs/a.md  (score 0.00000116)\n  1: deploy steps',
    )
    const limited = createAgentTools({ fs: agent.fs, allowedRoots: ['/workspace'] })
    expect(
      (await limited.get('search')!.execute({ query: 'keys', path: '/workspace' })).text,
    ).toMatch(/^No file below \/workspace has all of: keys/)
    expect((await limited.get('search')!.execute({ query: 'keys' })).code).toBe('EACCES')
  })

  test('is offered only where the filesystem can search', async () => {
    const { agent } = await openTools()
    // A filesystem without search (an overlay, a host directory): no search tool to fail.
    const plain = new Proxy(agent.fs, {
      get: (target, key) => (key === 'search' ? undefined : Reflect.get(target, key)),
    }) as FileSystem
    expect(createAgentTools({ fs: plain }).has('search')).toBe(false)
    expect(createAgentTools({ fs: agent.fs }).has('search')).toBe(true)
  })
})
