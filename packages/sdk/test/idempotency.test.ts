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

describe('sealed idempotency records (audit.key)', () => {
  const keyA = { key: Buffer.alloc(32, 1), id: 'a' }
  const keyB = { key: Buffer.alloc(32, 2), id: 'b' }

  async function openKeyed(
    path: string,
    audit: { key: typeof keyA; previousKeys?: (typeof keyA)[] },
  ): Promise<AgentFS> {
    const agent = await AgentFS.open({ path, audit })
    agents.push(agent)
    return agent
  }

  async function recordOf(agent: AgentFS, scope: string, key: string) {
    const { rows } = await agent.db.execute<{ mac: Uint8Array | null; key_id: string | null }>({
      sql: 'SELECT mac, key_id FROM agentfs_idempotency WHERE scope = ? AND key = ?',
      params: [scope, key],
    })
    return rows[0]
  }

  test('records are sealed; an altered or planted record is refused before anything runs', async () => {
    const agent = await openKeyed(tempPath(), { key: keyA })
    await agent.fs.writeFile('/a.txt', 'one', { idempotencyKey: 'w1' })
    const sealed = await recordOf(agent, 'fs:writeFile', 'w1')
    expect(sealed?.key_id).toBe('a')
    expect(sealed?.mac).toBeInstanceOf(Uint8Array)
    // An untouched record replays: nothing is written twice.
    await agent.fs.writeFile('/a.txt', 'one', { idempotencyKey: 'w1' })
    expect(await feedOf(agent, '/a.txt')).toHaveLength(1)

    // A changed record (its expiry pushed out) no longer verifies.
    await agent.db.execute({
      sql: "UPDATE agentfs_idempotency SET expires_us = expires_us + 1 WHERE key = 'w1'",
    })
    await expect(
      agent.fs.writeFile('/a.txt', 'one', { idempotencyKey: 'w1' }),
    ).rejects.toMatchObject({
      code: 'IDEMPOTENCY_UNTRUSTED',
      message: expect.stringMatching(/'w1'.*retry with a new key/),
    })

    // A record planted for a key not used yet (unsealed, or with a made-up seal) is refused,
    // and what the request would have changed stays as it was.
    const planted = {
      sql: `INSERT INTO agentfs_idempotency (scope, key, args_sha256, args_digests, result, call_id, created_us, expires_us, mac, key_id)
SELECT 'kv:set', ?, args_sha256, NULL, '7', NULL, created_us, expires_us, ?, ? FROM agentfs_idempotency WHERE key = 'w1'`,
    }
    await agent.db.execute({ ...planted, params: ['p1', null, null] })
    await agent.db.execute({ ...planted, params: ['p2', Buffer.alloc(32, 9), 'a'] })
    for (const key of ['p1', 'p2'])
      await expect(agent.kv.set('k', 1, { idempotencyKey: key })).rejects.toMatchObject({
        code: 'IDEMPOTENCY_UNTRUSTED',
      })
    expect(await agent.kv.get('k')).toBeUndefined()

    // Transactions are sealed the same way.
    const run = () =>
      agent.transaction(async (tx) => tx.kv.set('t', 1), {
        idempotencyKey: 't1',
        arguments: { n: 1 },
      })
    expect(await run()).toBe(1)
    expect(await run()).toBe(1)
    expect((await recordOf(agent, 'sdk:transaction', 't1'))?.key_id).toBe('a')
  })

  test('a rotated key: records of the previous key replay while it is given, and only then', async () => {
    const path = tempPath()
    const first = await openKeyed(path, { key: keyA })
    expect(await first.kv.set('n', 1, { idempotencyKey: 'r1' })).toBe(1)
    await first.close()

    const rotated = await openKeyed(path, { key: keyB, previousKeys: [keyA] })
    expect(await rotated.kv.set('n', 1, { idempotencyKey: 'r1' })).toBe(1)
    expect(await rotated.kv.set('n', 2, { idempotencyKey: 'r2' })).toBe(2)
    expect((await recordOf(rotated, 'kv:set', 'r2'))?.key_id).toBe('b')
    expect((await rotated.verify()).ok).toBe(true)
    await rotated.close()

    const only = await openKeyed(path, { key: keyB })
    await expect(only.kv.set('n', 1, { idempotencyKey: 'r1' })).rejects.toMatchObject({
      code: 'IDEMPOTENCY_UNTRUSTED',
      message: expect.stringMatching(/key id "a"/),
    })
    expect(await only.kv.set('n', 2, { idempotencyKey: 'r2' })).toBe(2)
    expect(await only.kv.get('n')).toBe(2)

    await expect(
      AgentFS.open({ path, audit: { previousKeys: [keyA] } as never }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
  })

  test('without keys, records are unsealed and trusted as they are', async () => {
    const agent = await open()
    await agent.kv.set('n', 1, { idempotencyKey: 'u1' })
    expect(await recordOf(agent, 'kv:set', 'u1')).toEqual({ mac: null, key_id: null })
    expect(await agent.kv.set('n', 1, { idempotencyKey: 'u1' })).toBe(1)
  })
})
