import { fixedClock } from '@agentfs/core'
import type { FileSystem } from '@agentfs/fs'
import { AgentFS } from '@agentfs/sdk'
import { afterEach, describe, expect, test } from 'vitest'
import { createAgentTools } from '../src/index.js'

// Escape attempts through the tools' root / allowedRoots: each one landed outside before.

const agents: AgentFS[] = []
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close()
})

/** The same filesystem without `restrict`: the tools must hold on any FileSystem. */
function plain(fs: FileSystem): FileSystem {
  return new Proxy(fs, {
    get(target, key) {
      if (key === 'restrict') return undefined
      const value = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

async function setup() {
  const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  agents.push(agent)
  await agent.fs.mkdir('/workspace/project', { recursive: true })
  await agent.fs.mkdir('/secret')
  await agent.fs.writeFile('/secret/key', 'sk-123')
  await agent.fs.writeFile('/workspace/project/a.txt', 'inside')
  await agent.fs.symlink('/secret', '/workspace/project/out')
  await agent.fs.symlink('/secret/new-file', '/workspace/project/dangling')
  return agent
}

describe.each([
  ['an AgentFS filesystem', (fs: FileSystem) => fs],
  ['any FileSystem', plain],
])('tools confined to a root, on %s', (_name, wrap) => {
  for (const [label, options] of [
    ['root', { root: '/workspace' }],
    ['allowedRoots', { allowedRoots: ['/workspace'] }],
  ] as const) {
    test(`${label}: new paths through links, dangling links, move, copy and glob stay inside`, async () => {
      const agent = await setup()
      const tools = createAgentTools({ fs: wrap(agent.fs), ...options })
      const base = label === 'root' ? '' : '/workspace'
      const run = (name: string, input: Record<string, unknown>) => tools.get(name)!.execute(input)
      const attempts = [
        run('write_file', { path: `${base}/project/out/planted.txt`, content: 'x' }),
        run('write_file', { path: `${base}/project/dangling`, content: 'x' }),
        run('mkdir', { path: `${base}/project/out/a/b` }),
        run('move', { from: `${base}/project/a.txt`, to: `${base}/project/out/moved` }),
        run('copy', { from: `${base}/project/a.txt`, to: `${base}/project/out/copied` }),
        run('copy', { from: `${base}/project/out/key`, to: `${base}/project/stolen` }),
        run('read_file', { path: `${base}/project/out/key` }),
      ]
      for (const result of await Promise.all(attempts)) {
        expect(result.isError, result.text).toBe(true)
      }
      expect(await agent.fs.readdir('/secret')).toEqual(['key'])
      const listed = await run('glob', { pattern: '**/*', path: `${base}/project/out` })
      expect(listed.text).not.toContain('key')
      const viaLink = await run('glob', { pattern: 'project/out/*', path: base || '/' })
      expect(viaLink.text).not.toContain('key')
      const absolute = await run('glob', { pattern: '/secret/*' })
      expect(absolute.text).not.toContain('key')
      const grep = await run('grep', { pattern: 'sk-', path: base || '/' })
      expect(grep.text).not.toContain('key')
      expect(await agent.fs.readFile('/workspace/project/a.txt', 'utf8')).toBe('inside')
    })
  }
})

describe('large inputs', () => {
  test('the audit log keeps a large write whole; an input over the cap is refused first', async () => {
    const agent = await setup()
    const tools = createAgentTools({ fs: agent.fs, audit: agent.tools, maxInputBytes: 8 << 20 })
    const content = 'x'.repeat(4 << 20)
    const ok = await tools.get('write_file')!.execute({ path: '/big.txt', content })
    expect(ok.isError).toBeFalsy()
    // Whole through the API; the spec row keeps a stub naming it in the payload store.
    const [call] = await agent.tools.byName('write_file')
    expect((call!.parameters as { content: string }).content).toBe(content)
    const { rows } = await agent.db.execute<{ parameters: string }>({
      sql: "SELECT parameters FROM tool_calls WHERE name = 'write_file'",
    })
    expect(JSON.parse(rows[0]!.parameters).$agentfs_payload.sha256).toBe(call!.payloads?.parameters)
    const tooBig = await tools
      .get('write_file')!
      .execute({ path: '/huge.txt', content: 'y'.repeat(9 << 20) })
    expect(tooBig).toMatchObject({ isError: true, code: 'EFBIG' })
    expect(await agent.fs.exists('/huge.txt')).toBe(false)
  })
})

describe('nothing an agent sends drops out of the audit', () => {
  test('a command padded past any preview is kept whole, on every front end that records', async () => {
    const agent = await setup()
    const hidden = `#${' '.repeat(10_000)}\nrm -rf /workspace`
    const tools = createAgentTools({ fs: agent.fs, audit: agent.tools })
    // An unknown field still reaches the audit whole, as the model sent it.
    await tools.get('write_file')!.execute({ path: '/w.txt', content: hidden, note: hidden })
    const [call] = await agent.tools.recent()
    expect(call!.parameters).toEqual({ path: '/w.txt', content: hidden, note: hidden })
    // A refused (invalid) call is recorded whole too.
    await tools.get('read_file')!.execute({ path: 42, padding: hidden })
    const [refused] = await agent.tools.recent()
    expect(refused!.parameters).toEqual({ path: 42, padding: hidden })
  })
})

describe('audit timing', () => {
  test("tool calls are timed with the audit log's own clock (nanoseconds), like track", async () => {
    const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
    agents.push(agent)
    const tools = createAgentTools({ fs: agent.fs, audit: agent.tools })
    await tools.get('write_file')!.execute({ path: '/a.txt', content: 'x' })
    const { rows } = await agent.db.execute<{ started_at_ns: number | bigint; started_at: number }>(
      {
        sql: 'SELECT m.started_at_ns AS started_at_ns, t.started_at AS started_at FROM tool_calls t JOIN agentfs_tool_call_meta m ON m.id = t.id',
      },
    )
    // fixedClock starts on 2024-01-01: a Date.now() timing would say today instead.
    expect(Number(rows[0]!.started_at)).toBeLessThan(1_704_067_300)
    expect(BigInt(rows[0]!.started_at_ns) / 1_000_000_000n).toBe(BigInt(rows[0]!.started_at))
  })
})
