import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { AgentFS } from '../src/index.js'

const dirs: string[] = []
const agents: AgentFS[] = []
afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.close()
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function tempPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agentfs-once-'))
  dirs.push(dir)
  return join(dir, 'a.db')
}

async function open(path = tempPath()): Promise<AgentFS> {
  const agent = await AgentFS.open({ path })
  agents.push(agent)
  return agent
}

/** The feed rows of `path` (newest last). */
async function feedOf(agent: AgentFS, path: string): Promise<string[]> {
  const page = await agent.changes.since(0)
  return page.changes.filter((c) => c.path === path).map((c) => c.op)
}

describe('the SDK’s mutating calls take { idempotencyKey }', () => {
  test('fs.appendFile and fs.writeFile: a retry changes nothing; other data is refused', async () => {
    const agent = await open()
    await agent.fs.appendFile('/log.txt', 'one\n', { idempotencyKey: 'k1' })
    await agent.fs.appendFile('/log.txt', 'one\n', { idempotencyKey: 'k1' })
    await agent.fs.appendFile('/log.txt', 'two\n', { idempotencyKey: 'k2' })
    expect(await agent.fs.readFile('/log.txt', 'utf8')).toBe('one\ntwo\n')
    expect(await feedOf(agent, '/log.txt')).toHaveLength(2)
    await expect(
      agent.fs.appendFile('/log.txt', 'three\n', { idempotencyKey: 'k1' }),
    ).rejects.toMatchObject({
      code: 'IDEMPOTENCY_MISMATCH',
      message: expect.stringMatching(/sha256, size differ/),
    })
    // The same key in another call is another scope: writeFile's keys are not appendFile's.
    await agent.fs.writeFile('/log.txt', 'new', { idempotencyKey: 'k1' })
    await agent.fs.appendFile('/log.txt', '!', {})
    await agent.fs.writeFile('/log.txt', 'new', { idempotencyKey: 'k1' })
    expect(await agent.fs.readFile('/log.txt', 'utf8')).toBe('new!')
    // A refused write keeps the key free: the retry with it applies.
    await expect(
      agent.fs.writeFile('/log.txt', 'x', { idempotencyKey: 'k3', flag: 'wx' }),
    ).rejects.toMatchObject({ code: 'EEXIST' })
    await agent.fs.writeFile('/fresh.txt', 'x', { idempotencyKey: 'k4', flag: 'wx' })
    await agent.fs.writeFile('/fresh.txt', 'x', { idempotencyKey: 'k4', flag: 'wx' })
    expect(await agent.fs.readFile('/fresh.txt', 'utf8')).toBe('x')
    await expect(agent.fs.writeFile('/a.txt', 'x', { idempotencyKey: '' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    expect(await agent.fs.exists('/a.txt')).toBe(false)
  })

  test('kv.set and kv.delete: a retry answers as the first call, even past ifVersion', async () => {
    const agent = await open()
    const version = await agent.kv.set('n', 1, { ifVersion: null, idempotencyKey: 'set-1' })
    // Without the key this retry would be a conflict: the key is no longer absent.
    expect(await agent.kv.set('n', 1, { ifVersion: null, idempotencyKey: 'set-1' })).toBe(version)
    expect(await agent.kv.version('n')).toBe(version)
    await expect(agent.kv.set('n', 2, { idempotencyKey: 'set-1' })).rejects.toMatchObject({
      code: 'IDEMPOTENCY_MISMATCH',
      message: expect.stringMatching(/ifVersion, value differ/),
    })
    expect(await agent.kv.delete('n', { idempotencyKey: 'del-1' })).toBe(true)
    expect(await agent.kv.delete('n', { idempotencyKey: 'del-1' })).toBe(true)
    expect(await agent.kv.delete('n')).toBe(false)
    expect(await feedOf(agent, 'n')).toEqual(['kv-set', 'kv-delete'])
  })

  test('agent.transaction: runs once per key, replays its result, frees the key when it throws', async () => {
    const agent = await open()
    let runs = 0
    const transfer = (amount: number) =>
      agent.transaction(
        async (tx) => {
          runs++
          const balance = ((await tx.kv.get<number>('balance')) ?? 100) - amount
          await tx.kv.set('balance', balance)
          await tx.fs.appendFile('/ledger', `-${amount}\n`)
          return { balance }
        },
        { idempotencyKey: 'pay-7', arguments: { amount } },
      )
    expect(await transfer(30)).toEqual({ balance: 70 })
    expect(await transfer(30)).toEqual({ balance: 70 })
    expect(runs).toBe(1)
    await expect(transfer(40)).rejects.toMatchObject({
      code: 'IDEMPOTENCY_MISMATCH',
      differs: ['amount'],
    })
    expect(await agent.kv.get('balance')).toBe(70)
    expect(await agent.fs.readFile('/ledger', 'utf8')).toBe('-30\n')

    const failing = () =>
      agent.transaction(
        async (tx) => {
          runs++
          await tx.fs.writeFile('/half.txt', 'x')
          if (runs === 2) throw new Error('boom')
          return 'done'
        },
        { idempotencyKey: 'try' },
      )
    await expect(failing()).rejects.toThrow('boom')
    expect(await agent.fs.exists('/half.txt')).toBe(false)
    expect(await failing()).toBe('done')
    expect(await failing()).toBe('done')
    expect(runs).toBe(3)
  })

  test('a retry through another connection to the database is recognised', async () => {
    const path = tempPath()
    const first = await open(path)
    const second = await open(path)
    await first.fs.appendFile('/x', 'a', { idempotencyKey: 'shared' })
    await second.fs.appendFile('/x', 'a', { idempotencyKey: 'shared' })
    await second.kv.set('k', 'v', { idempotencyKey: 'kv-shared' })
    await first.kv.set('k', 'v', { idempotencyKey: 'kv-shared' })
    expect(await first.fs.readFile('/x', 'utf8')).toBe('a')
    expect(await feedOf(first, 'k')).toEqual(['kv-set'])
  })
})
