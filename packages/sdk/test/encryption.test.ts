import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { tursoDriver } from '@agentfs/driver-turso'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { AgentFS } from '../src/index.js'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-sdk-key-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const MARKER = 'MARKER-e1b4-agent-secret'
const files = (path: string) => [path, `${path}-wal`, `${path}-shm`].filter((f) => existsSync(f))

async function errorOf(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p
  } catch (error) {
    return error as { code?: string; message: string }
  }
  throw new Error('expected a rejection')
}

describe('AgentFS.open({ key })', () => {
  test('files, kv and tool calls are encrypted at rest; the key opens them again; a wrong key does not', async () => {
    const path = join(dir, 'agent.db')
    const agent = await AgentFS.open({ path, key: 'sdk passphrase' })
    expect(agent.db.driver.capabilities.encrypted).toBe(true)
    await agent.fs.writeFile('/notes.md', `${MARKER} in a file\n`.repeat(200))
    await agent.kv.set('k', { secret: MARKER })
    await agent.tools.record({
      name: 'search',
      parameters: { q: MARKER },
      result: { hits: [MARKER] },
      startedAt: 1,
      completedAt: 2,
    })
    for (const file of files(path)) expect(readFileSync(file).includes(MARKER), file).toBe(false)
    await agent.close()
    for (const file of files(path)) expect(readFileSync(file).includes(MARKER), file).toBe(false)

    const again = await AgentFS.open({ path, key: 'sdk passphrase' })
    expect(await again.fs.readFile('/notes.md', 'utf8')).toContain(MARKER)
    expect(await again.kv.get('k')).toEqual({ secret: MARKER })
    expect((await again.verify()).ok).toBe(true)
    await again.close()

    expect(await errorOf(AgentFS.open({ path, key: 'guess' }))).toMatchObject({ code: 'WRONG_KEY' })
    expect(await errorOf(AgentFS.open({ path }))).toMatchObject({
      code: 'CORRUPT',
      message: expect.stringMatching(/is encrypted, damaged/),
    })
    expect(
      await errorOf(AgentFS.open({ path, key: 'sdk passphrase', cipher: 'chacha20' })),
    ).toMatchObject({
      code: 'WRONG_KEY',
    })
  })

  test("the nodeFs() worker opens the same encrypted file with the agent's key", async () => {
    const path = join(dir, 'agent.db')
    const agent = await AgentFS.open({ path, key: new Uint8Array([9, 8, 7, 6, 5]) })
    const fs = agent.nodeFs()
    fs.writeFileSync('/sync.txt', MARKER)
    expect(await agent.fs.readFile('/sync.txt', 'utf8')).toBe(MARKER)
    await agent.close()
    for (const file of files(path)) expect(readFileSync(file).includes(MARKER), file).toBe(false)
  })

  test("a Turso engine cipher opens the engine's own encrypted format (tursodb's)", async () => {
    const path = join(dir, 'turso.db')
    const key = '5d'.repeat(32)
    const agent = await AgentFS.open({ path, key, cipher: 'aegis256' })
    expect(agent.db.driver.capabilities.encrypted).toBe(true)
    await agent.fs.writeFile('/secret.md', MARKER)
    await agent.close()
    expect(files(path).some((f) => readFileSync(f).includes(MARKER))).toBe(false)
    // The engine's own driver reads it: the file is its format, not better-sqlite3's.
    const engine = await AgentFS.open({ driver: tursoDriver({ path, key, cipher: 'aegis256' }) })
    expect(await engine.fs.readFile('/secret.md', 'utf8')).toBe(MARKER)
    await engine.close()
    const wrong = await errorOf(AgentFS.open({ path, key: '00'.repeat(32), cipher: 'aegis256' }))
    expect(wrong.code).toBe('WRONG_KEY')
    expect(
      (await errorOf(AgentFS.open({ path, key, cipher: 'aegis512' as 'aegis256' }))).message,
    ).toMatch(/unknown cipher "aegis512"/)
  })

  test('a key beside your own driver is refused: the driver takes it', async () => {
    const driver = betterSqlite3Driver({ path: join(dir, 'x.db') })
    expect(await errorOf(AgentFS.open({ driver, key: 'k' }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/give the key to your driver/),
    })
    await driver.close()
  })
})
