import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { type Clock, canonicalJson } from '@agentfs/core'
import { createFileSystem } from '@agentfs/fs'
import { AgentFS } from '@agentfs/sdk'
import { afterEach, describe, expect, test } from 'vitest'
import { z } from 'zod'
import { type AgentToolDefinition, type AgentToolsOptions, createAgentTools } from '../src/index.js'

const agents: AgentFS[] = []
const dirs: string[] = []
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close()
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

/** A tool whose second application shows: it appends a line. */
const appendLine: AgentToolDefinition<{ path: string; line: string; fail?: boolean | undefined }> =
  {
    name: 'append_line',
    description: 'Appends a line to a file.',
    inputSchema: z.object({ path: z.string(), line: z.string(), fail: z.boolean().optional() }),
    mutates: true,
    needs: 'fs',
    async handler(input, env) {
      await env.fs.appendFile(input.path, `${input.line}\n`)
      // A failure after the change: with a key, the change must not survive it.
      if (input.fail) throw new Error('failed after writing')
      return { text: `appended to ${input.path}` }
    },
  }

/** A clock the test moves: now is `ms`, each reading 1 µs after the last (times never repeat). */
function movableClock(): Clock & { advance(ms: number): void } {
  let us = 1_704_067_200_000_000
  return {
    now() {
      us += 1
      return { sec: Math.floor(us / 1_000_000), nsec: (us % 1_000_000) * 1000 }
    },
    advance(ms: number) {
      us += ms * 1000
    },
  }
}

async function setup(options: Partial<AgentToolsOptions> = {}, path = ':memory:', clock?: Clock) {
  const agent = await AgentFS.open({ path, ...(clock ? { clock } : {}) })
  agents.push(agent)
  const tools = createAgentTools({
    fs: agent.fs,
    kv: agent.kv,
    audit: agent.tools,
    tools: [appendLine],
    ...options,
  })
  const run = (name: string, input: unknown) => tools.get(name)!.execute(input)
  return { agent, tools, run }
}

const rows = async (agent: AgentFS) =>
  (
    await agent.db.execute<{ n: number }>({
      sql: 'SELECT count(*) AS n FROM agentfs_idempotency',
    })
  ).rows[0]!.n

describe('idempotency keys', () => {
  test('a retry with the same key and arguments answers as the first call and changes nothing', async () => {
    const { agent, run, tools } = await setup()
    expect(JSON.stringify(z.toJSONSchema(tools.get('write_file')!.inputSchema))).toContain(
      'idempotency_key',
    )
    expect(JSON.stringify(z.toJSONSchema(tools.get('read_file')!.inputSchema))).not.toContain(
      'idempotency_key',
    )
    const first = await run('append_line', { path: '/log.txt', line: 'one', idempotency_key: 'k1' })
    expect(first).toEqual({ text: 'appended to /log.txt' })
    const again = await run('append_line', { line: 'one', path: '/log.txt', idempotency_key: 'k1' })
    expect(again).toEqual({ text: 'appended to /log.txt', replayed: true })
    expect(await agent.fs.readFile('/log.txt', 'utf8')).toBe('one\n')
    // write_file answers the same words, hash included, the second time.
    const w = await run('write_file', { path: '/a.md', content: 'A', idempotency_key: 'w1' })
    await agent.fs.writeFile('/a.md', 'changed since')
    const w2 = await run('write_file', { path: '/a.md', content: 'A', idempotency_key: 'w1' })
    expect(w2.text).toBe(w.text)
    expect(w2.replayed).toBe(true)
    expect(await agent.fs.readFile('/a.md', 'utf8')).toBe('changed since')
    // Every attempt is in the audit; the replay names the call it repeats.
    const calls = await agent.tools.query({ limit: 10 })
    const replays = calls.filter(
      (c) => (c.metadata as { replayOf?: number } | null)?.replayOf !== undefined,
    )
    expect(replays.map((c) => c.name).sort()).toEqual(['append_line', 'write_file'])
    expect(calls).toHaveLength(4)
  })

  test('the same key with other arguments is refused, saying which differ; a key is per tool', async () => {
    const { agent, run } = await setup()
    await run('append_line', { path: '/log.txt', line: 'one', idempotency_key: 'k' })
    const other = await run('append_line', { path: '/log.txt', line: 'two', idempotency_key: 'k' })
    expect(other.isError).toBe(true)
    expect(other.code).toBe('IDEMPOTENCY_MISMATCH')
    expect(other.text).toMatch(/idempotency key 'k' was first used at .* \(line differ\)/)
    expect(await agent.fs.readFile('/log.txt', 'utf8')).toBe('one\n')
    // Another tool's scope: the same key is new there.
    const kv = await run('kv_set', { key: 'x', value: 1, idempotency_key: 'k' })
    expect(kv.isError).toBeFalsy()
    const bad = await run('append_line', { path: '/l', line: 'x', idempotency_key: 'a\nb' })
    expect(bad).toMatchObject({ isError: true, code: 'INVALID_ARGUMENT' })
  })

  test('an oversized key counts toward the input limit: refused before anything runs', async () => {
    const { agent, run } = await setup({ maxInputBytes: 1000 })
    const huge = await run('append_line', {
      path: '/l',
      line: 'x',
      idempotency_key: 'k'.repeat(5000),
    })
    expect(huge).toMatchObject({ isError: true, code: 'EFBIG' })
    expect(await agent.fs.exists('/l')).toBe(false)
  })

  test('a keyed call that fails applies nothing, records no key, and can be retried', async () => {
    const { agent, run } = await setup()
    const failed = await run('append_line', {
      path: '/log.txt',
      line: 'one',
      fail: true,
      idempotency_key: 'f',
    })
    expect(failed).toMatchObject({ isError: true })
    expect(await agent.fs.exists('/log.txt')).toBe(false)
    expect(await rows(agent)).toBe(0)
    // Without a key the same failure leaves the half-done change (no transaction is opened).
    await run('append_line', { path: '/log.txt', line: 'half', fail: true })
    expect(await agent.fs.readFile('/log.txt', 'utf8')).toBe('half\n')
    const calls = await agent.tools.query({ limit: 10 })
    expect(calls.map((c) => c.status)).toEqual(['error', 'error'])
  })

  test('keys expire after the TTL; expired ones are deleted by later keyed calls', async () => {
    // The database's clock, moved by the test: expiry never depends on how fast the machine is.
    const clock = movableClock()
    const { agent, run } = await setup({ idempotencyTtlMs: 1000 }, ':memory:', clock)
    await run('append_line', { path: '/log.txt', line: 'one', idempotency_key: 'k1' })
    clock.advance(500)
    await run('append_line', { path: '/log.txt', line: 'two', idempotency_key: 'k2' })
    expect(await rows(agent)).toBe(2)
    expect(
      (await run('append_line', { path: '/log.txt', line: 'one', idempotency_key: 'k1' })).replayed,
    ).toBe(true)
    clock.advance(2000)
    const again = await run('append_line', { path: '/log.txt', line: 'one', idempotency_key: 'k1' })
    expect(again.replayed).toBeUndefined()
    expect(await agent.fs.readFile('/log.txt', 'utf8')).toBe('one\ntwo\none\n')
    // Both expired rows went; the new record of k1 is the only one.
    expect(await rows(agent)).toBe(1)
  })

  test('each keyed call deletes at most 100 expired keys; argument order does not matter', async () => {
    const { agent, run } = await setup()
    const values = Array.from(
      { length: 250 },
      (_, i) => `('tool:x', 'old-${i}', x'00', NULL, NULL, 1, ${i + 1})`,
    )
    await agent.db.execute({
      sql: `INSERT INTO agentfs_idempotency (scope, key, args_sha256, result, call_id, created_us, expires_us) VALUES ${values.join(', ')}`,
    })
    await run('append_line', { path: '/l', line: 'a', idempotency_key: 'n1' })
    expect(await rows(agent)).toBe(151)
    await run('append_line', { line: 'b', path: '/l', idempotency_key: 'n2' })
    await run('append_line', { path: '/l', line: 'c', idempotency_key: 'n3' })
    expect(await rows(agent)).toBe(3)
    expect(canonicalJson({ b: [1, { d: 1, c: 2 }], a: 'x', u: undefined })).toBe(
      '{"a":"x","b":[1,{"c":2,"d":1}]}',
    )
    // The same arguments in another order are the same request.
    expect(
      (await run('append_line', { line: 'b', path: '/l', idempotency_key: 'n2' })).replayed,
    ).toBe(true)
  })

  test('with an audit key, a record the key did not seal is refused, not replayed', async () => {
    const agent = await AgentFS.open({
      path: ':memory:',
      audit: { key: { key: Buffer.alloc(32, 7), id: 'k1' } },
    })
    agents.push(agent)
    const tools = createAgentTools({
      fs: agent.fs,
      kv: agent.kv,
      audit: agent.tools,
      tools: [appendLine],
    })
    const run = (name: string, input: unknown) => tools.get(name)!.execute(input)
    const input = { path: '/log.txt', line: 'one', idempotency_key: 'k' }
    await run('append_line', input)
    expect((await run('append_line', input)).replayed).toBe(true)
    // Someone with the file, but not the key, rewrites the answer a retry would get.
    await agent.db.execute({
      sql: `UPDATE agentfs_idempotency SET result = '{"text":"forged"}' WHERE key = 'k'`,
    })
    const forged = await run('append_line', input)
    expect(forged).toMatchObject({ isError: true, code: 'IDEMPOTENCY_UNTRUSTED' })
    expect(forged.text).not.toContain('forged')
    expect(await agent.fs.readFile('/log.txt', 'utf8')).toBe('one\n')
    // The refusal is in the audit like every attempt.
    const calls = await agent.tools.query({ limit: 10 })
    expect(calls).toHaveLength(3)
    expect(
      calls.filter((c) => c.error !== null && /IDEMPOTENCY_UNTRUSTED|not sealed/.test(c.error)),
    ).toHaveLength(1)
  })

  test('a key needs stores of one database; otherwise the call is refused, not run', async () => {
    const a = await AgentFS.open({ path: ':memory:' })
    const b = await AgentFS.open({ path: ':memory:' })
    agents.push(a, b)
    const tools = createAgentTools({ fs: a.fs, audit: b.tools, tools: [appendLine] })
    const out = await tools
      .get('append_line')!
      .execute({ path: '/x', line: 'x', idempotency_key: 'k' })
    expect(out).toMatchObject({ isError: true, code: 'EINVAL' })
    expect(out.text).toMatch(/audit log of the same database/)
    expect(await a.fs.exists('/x')).toBe(false)
    // A filesystem that is not a database's cannot apply a call atomically.
    const plain = createAgentTools({
      fs: new Proxy(createFileSystem(a.db), {}) as never,
      tools: [appendLine],
    })
    expect(
      (await plain.get('append_line')!.execute({ path: '/x', line: 'x', idempotency_key: 'k' }))
        .code,
    ).toBe('EINVAL')
  })
})

describe('idempotency keys across processes', () => {
  /** A process that runs one keyed append (and may die where it is told to). */
  function child(
    db: string,
    key: string,
    die: 'none' | 'after-commit' | 'inside',
  ): Promise<number> {
    // Inside the package, so the script resolves @agentfs/sdk and zod as the tests do (and this
    // package from its build: its test task builds it first).
    const cache = join(import.meta.dirname, '..', 'node_modules', '.cache')
    mkdirSync(cache, { recursive: true })
    const dir = mkdtempSync(join(cache, 'idem-child-'))
    dirs.push(dir)
    const script = join(dir, 'child.mjs')
    writeFileSync(
      script,
      `import { AgentFS } from '@agentfs/sdk'
import { createAgentTools } from ${JSON.stringify(pathToFileURL(join(import.meta.dirname, '..', 'dist', 'index.js')).href)}
import { z } from 'zod'
const agent = await AgentFS.open({ path: ${JSON.stringify(db)} })
const tool = {
  name: 'append_line', description: 'x', mutates: true, needs: 'fs',
  inputSchema: z.object({ path: z.string(), line: z.string() }),
  async handler(input, env) {
    await env.fs.appendFile(input.path, input.line + '\\n')
    // Dies with the change written but not committed.
    if (${JSON.stringify(die)} === 'inside') process.kill(process.pid, 'SIGKILL')
    return { text: 'ok' }
  },
}
const tools = createAgentTools({ fs: agent.fs, audit: agent.tools, tools: [tool] })
await tools.get('append_line').execute({ path: '/log.txt', line: 'once', idempotency_key: ${JSON.stringify(key)} })
// Dies with the change committed, before anyone hears the answer.
if (${JSON.stringify(die)} === 'after-commit') process.kill(process.pid, 'SIGKILL')
await agent.close()
`,
    )
    return new Promise((resolve, reject) => {
      const p = spawn(process.execPath, [script], {
        cwd: join(import.meta.dirname, '..'),
        stdio: 'inherit',
      })
      p.on('error', reject)
      p.on('exit', (code, signal) => resolve(signal === 'SIGKILL' ? -9 : (code ?? -1)))
    })
  }

  test('processes retrying one key at once apply it once; a writer killed mid-call or before its answer applies nothing twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfs-idem-'))
    dirs.push(dir)
    const db = join(dir, 'a.db')
    const agent = await AgentFS.open({ path: db })
    await agent.close()
    // Killed inside the call: nothing committed, so the retry applies it (once).
    expect(await child(db, 'inside', 'inside')).toBe(-9)
    // Killed after the commit, before the answer: the retry finds the key.
    expect(await child(db, 'after', 'after-commit')).toBe(-9)
    // Four processes retry both keys at the same time.
    const codes = await Promise.all([
      child(db, 'inside', 'none'),
      child(db, 'inside', 'none'),
      child(db, 'after', 'none'),
      child(db, 'after', 'none'),
    ])
    expect(codes).toEqual([0, 0, 0, 0])
    const check = await AgentFS.open({ path: db })
    agents.push(check)
    expect(await check.fs.readFile('/log.txt', 'utf8')).toBe('once\nonce\n')
    const calls = await check.tools.query({ limit: 20 })
    // The first 'after' call, and one of each key's racing retries, applied; the rest replayed.
    expect(calls.filter((c) => c.status === 'success')).toHaveLength(5)
    // The call killed mid-way left its pending record, with what it was sent; reconciled, it
    // is a failed call.
    const pending = await check.tools.pending()
    expect(pending.map((p) => [p.name, p.parameters, p.ours])).toEqual([
      ['append_line', { path: '/log.txt', line: 'once', idempotency_key: 'inside' }, false],
    ])
    const [abandoned] = await check.tools.reconcile({ olderThan: 0 })
    expect(await check.tools.get(abandoned!)).toMatchObject({
      name: 'append_line',
      status: 'error',
    })
    expect(await check.tools.pending()).toEqual([])
  }, 120_000)
})
