import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fixedClock, isAgentFsError } from '@agentfs/core'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { AgentFS } from '../src/index.js'

let dir: string
const cwd = process.cwd()
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-sdk-'))
})
afterEach(async () => {
  process.chdir(cwd)
  await rm(dir, { recursive: true, force: true })
})

describe('AgentFS.open', () => {
  test('zero config opens .agentfs/default.db in the working directory', async () => {
    process.chdir(dir)
    const agent = await AgentFS.open()
    await agent.fs.writeFile('/hello.txt', 'hi')
    expect(agent.path).toBe(join(dir, '.agentfs', 'default.db'))
    await agent.close()
    expect((await stat(join(dir, '.agentfs', 'default.db'))).isFile()).toBe(true)
    const again = await AgentFS.open()
    expect(await again.fs.readFile('/hello.txt', 'utf8')).toBe('hi')
    await again.close()
  })

  test('by id, by path, :memory:, and through any driver', async () => {
    const byId = await AgentFS.open({ id: 'agent-1', dir })
    expect(byId.path).toBe(join(dir, 'agent-1.db'))
    await byId.close()
    const byPath = await AgentFS.open({ path: join(dir, 'nested', 'x.db') })
    await byPath.kv.set('k', 1)
    await byPath.close()
    const memory = await AgentFS.open({ path: ':memory:' })
    await memory.fs.writeFile('/m', 'memory')
    expect(await memory.fs.readFile('/m', 'utf8')).toBe('memory')
    await memory.close()
    const libsql = await AgentFS.open({
      driver: libsqlDriver({ url: `file:${join(dir, 'libsql.db')}` }),
    })
    await libsql.kv.set('via', 'libsql')
    expect(await libsql.kv.get('via')).toBe('libsql')
    await libsql.close()
  })

  test('bad ids and chunk sizes are refused clearly', async () => {
    await expect(AgentFS.open({ id: '../escape', dir })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    const agent = await AgentFS.open({ path: join(dir, 'c.db'), chunkSize: 8192 })
    await agent.close()
    const error = await AgentFS.open({ path: join(dir, 'c.db'), chunkSize: 4096 }).catch(
      (e: unknown) => e,
    )
    expect(isAgentFsError(error, 'INVALID_ARGUMENT')).toBe(true)
  })
})

describe('AgentFS', () => {
  test('transaction commits fs, kv and tool calls together, or none of them', async () => {
    const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
    await agent.transaction(async (tx) => {
      await tx.fs.writeFile('/report.md', 'done')
      await tx.kv.set('status', 'reported')
      await tx.tools.record({ name: 'report', result: 'ok', startedAt: 0, completedAt: 1 })
    })
    const failure = new Error('abort')
    await expect(
      agent.transaction(async (tx) => {
        await tx.fs.writeFile('/report.md', 'half-done')
        await tx.kv.set('status', 'broken')
        await tx.tools.record({ name: 'report', result: 'bad', startedAt: 0, completedAt: 1 })
        throw failure
      }),
    ).rejects.toBe(failure)
    expect(await agent.fs.readFile('/report.md', 'utf8')).toBe('done')
    expect(await agent.kv.get('status')).toBe('reported')
    expect(await agent.tools.query()).toHaveLength(1)
    await agent.close()
  })

  test('many overlapping promises on one agent stay consistent', async () => {
    const agent = await AgentFS.open({ path: join(dir, 'busy.db') })
    await agent.fs.mkdir('/out')
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        i % 3 === 0
          ? agent.fs.writeFile(`/out/${i}.txt`, String(i))
          : i % 3 === 1
            ? agent.kv.update<number>('counter', (n) => (n ?? 0) + 1)
            : agent.tools.track('op', { i }, async () => i),
      ),
    )
    expect((await agent.fs.readdir('/out')).length).toBe(67)
    expect(await agent.kv.get('counter')).toBe(67)
    expect((await agent.tools.stats())[0]).toMatchObject({ name: 'op', totalCalls: 66 })
    await agent.close()
  })

  test('close is idempotent and later calls fail with CLOSED', async () => {
    const agent = await AgentFS.open({ path: ':memory:' })
    await agent.close()
    await agent.close()
    const error = await agent.kv.get('x').catch((e: unknown) => e)
    expect(isAgentFsError(error, 'CLOSED')).toBe(true)
  })
})
