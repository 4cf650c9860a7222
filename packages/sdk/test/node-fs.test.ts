import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FsError } from '@agentfs/core'
import { afterAll, describe, expect, test } from 'vitest'
import { AgentFS } from '../src/index.js'

const dir = mkdtempSync(join(tmpdir(), 'agentfs-nodefs-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('agent.nodeFs(): the …Sync calls run on the database file and see what async calls did', async () => {
  const agent = await AgentFS.open({ path: join(dir, 'sync.db') })
  const fs = agent.nodeFs()
  expect(agent.nodeFs()).toBe(fs)
  fs.mkdirSync('/src/lib', { recursive: true })
  fs.writeFileSync('/src/a.txt', 'hello')
  expect(fs.readFileSync('/src/a.txt', 'utf8')).toBe('hello')
  expect(Buffer.isBuffer(fs.readFileSync('/src/a.txt'))).toBe(true)
  // Each side sees the other's changes at once: one database.
  expect(await agent.fs.readFile('/src/a.txt', 'utf8')).toBe('hello')
  await agent.fs.writeFile('/src/b.txt', 'async')
  expect(fs.readFileSync('/src/b.txt', 'utf8')).toBe('async')
  const st = fs.statSync('/src/a.txt')
  expect([st.isFile(), st.isDirectory(), st.size]).toEqual([true, false, 5])
  expect(st).toBeInstanceOf(fs.Stats)
  // The Dates of a Stats rebuilt by the synchronous bridge come from its times.
  expect(st.mtime.getTime()).toBe(Math.trunc(st.mtimeMs))
  expect(st.birthtime).toBeInstanceOf(Date)
  // watchFile of a missing file: the state before is all zeros, its Dates the epoch.
  const seen = await new Promise<[number, number, number]>((resolve) => {
    fs.watchFile(
      '/src/later.txt',
      { interval: 10, persistent: false },
      (cur: InstanceType<typeof fs.Stats>, prev: InstanceType<typeof fs.Stats>) => {
        fs.unwatchFile('/src/later.txt')
        resolve([prev.mtime.getTime(), prev.atimeMs, cur.mtime.getTime() - Math.trunc(cur.mtimeMs)])
      },
    )
    fs.writeFileSync('/src/later.txt', 'now')
  })
  expect(seen).toEqual([0, 0, 0])
  fs.unlinkSync('/src/later.txt')
  const entries = fs.readdirSync('/src', { withFileTypes: true })
  expect(entries.map((d: InstanceType<typeof fs.Dirent>) => [d.name, d.isDirectory()])).toEqual([
    ['a.txt', false],
    ['b.txt', false],
    ['lib', true],
  ])
  expect(fs.existsSync('/src/a.txt')).toBe(true)
  expect(fs.existsSync('/nope')).toBe(false)
  fs.chmodSync('/src/a.txt', '600')
  expect(fs.statSync('/src/a.txt').mode & 0o777).toBe(0o600)
  // Descriptors: open, positional and cursor reads and writes into the caller's buffer.
  const fd = fs.openSync('/src/a.txt', 'r+')
  const buffer = Buffer.alloc(8, '.')
  expect(fs.readSync(fd, buffer, 2, 3, 1)).toBe(3)
  expect(buffer.toString()).toBe('..ell...')
  expect(fs.writeSync(fd, Buffer.from('XY'), 0, 2, 0)).toBe(2)
  expect(fs.writeSync(fd, '!', 5)).toBe(1)
  expect(fs.fstatSync(fd).size).toBe(6)
  // The callback API takes a descriptor from openSync too.
  const viaCallback = await new Promise<number>((resolve, reject) =>
    fs.read(fd, Buffer.alloc(6), 0, 6, 0, (e: Error | null, n: number) =>
      e ? reject(e) : resolve(n),
    ),
  )
  expect(viaCallback).toBe(6)
  fs.closeSync(fd)
  expect(await agent.fs.readFile('/src/a.txt', 'utf8')).toBe('XYllo!')
  // Errors keep their class, code, syscall and path.
  let error: unknown
  try {
    fs.readFileSync('/missing.txt')
  } catch (e) {
    error = e
  }
  expect(error).toBeInstanceOf(FsError)
  expect(error).toMatchObject({ code: 'ENOENT', syscall: 'open', path: '/missing.txt' })
  expect(() => fs.closeSync(fd)).toThrow(expect.objectContaining({ code: 'EBADF' }))
  expect(() => fs.chmodSync('/src/a.txt', 'rwx')).toThrow(
    expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }),
  )
  const listed = fs.opendirSync('/src')
  expect([listed.readSync()?.name, listed.readSync()?.name]).toEqual(['a.txt', 'b.txt'])
  listed.closeSync()
  await agent.close()
})

test('the worker keeps the agent’s policy, and attributes changes to the calling tool call', async () => {
  const path = join(dir, 'policy.db')
  const setup = await AgentFS.open({ path })
  await setup.fs.writeFile('/secret.txt', 'key')
  await setup.fs.mkdir('/ws')
  await setup.close()
  const agent = await AgentFS.open({
    path,
    policy: { read: ['/ws', '/ws/**'], write: ['/ws/**'] },
    sessionId: 'sync-session',
  })
  const fs = agent.nodeFs()
  expect(() => fs.readFileSync('/secret.txt')).toThrow(expect.objectContaining({ code: 'EACCES' }))
  expect(() => fs.writeFileSync('/secret.txt', 'x')).toThrow(
    expect.objectContaining({ code: 'EACCES' }),
  )
  await agent.tools.track('write', {}, async () => fs.writeFileSync('/ws/a.txt', 'a'))
  const [call] = await agent.tools.recent()
  const { changes } = await agent.changes.since(0, { path: '/ws/a.txt' })
  expect(changes.map((c) => [c.op, c.sessionId, c.toolCallId])).toEqual([
    ['create', 'sync-session', call!.id],
  ])
  await agent.close()
})

test('in memory the …Sync calls say why they cannot run; the rest works', async () => {
  const agent = await AgentFS.open({ path: ':memory:' })
  const fs = agent.nodeFs()
  expect(() => fs.readFileSync('/x')).toThrow(/in-memory database has no file/)
  await fs.promises.writeFile('/x', 'y')
  expect(await fs.promises.readFile('/x', 'utf8')).toBe('y')
  await agent.close()
})

/**
 * Waits for the worker to answer: under load its start (a thread, the built packages, the
 * database) can take longer than a short limit. A read that timed out ("not run" before it
 * started, or "changed nothing" once it had) had no effect, so trying again is safe.
 */
function warm(fs: ReturnType<AgentFS['nodeFs']>): void {
  for (let attempt = 0; ; attempt++) {
    try {
      fs.existsSync('/')
      return
    } catch (error) {
      if (attempt >= 100 || !/was not run|changed nothing/.test(String((error as Error).message)))
        throw error
    }
  }
}

describe('the …Sync bridge under contention', () => {
  test('inside the agent’s own transaction a …Sync call fails at once, and nothing is applied later', async () => {
    const agent = await AgentFS.open({ path: join(dir, 'own-tx.db') })
    const fs = agent.nodeFs({ syncTimeoutMs: 5_000 })
    warm(fs)
    fs.writeFileSync('/a.txt', 'a')
    const started = Date.now()
    await agent.transaction(async (tx) => {
      await tx.fs.writeFile('/in-tx.txt', 'x')
      expect(() => fs.writeFileSync('/b.txt', 'b')).toThrow(
        expect.objectContaining({ code: 'EDEADLK', message: expect.stringMatching(/transaction/) }),
      )
      expect(() => fs.readFileSync('/a.txt')).toThrow(expect.objectContaining({ code: 'EDEADLK' }))
    })
    expect(Date.now() - started).toBeLessThan(4_000)
    // Later calls get their own answers, and the refused write never happens.
    expect(fs.readFileSync('/a.txt', 'utf8')).toBe('a')
    expect(fs.existsSync('/b.txt')).toBe(false)
    expect(fs.existsSync('/nope')).toBe(false)
    expect(fs.readFileSync('/in-tx.txt', 'utf8')).toBe('x')
    await agent.close()
  })

  test('a call that times out is taken back, and its late reply never answers a later call', async () => {
    const path = join(dir, 'timeout.db')
    const agent = await AgentFS.open({ path })
    const fs = agent.nodeFs({ syncTimeoutMs: 300 })
    warm(fs)
    fs.writeFileSync('/a.txt', 'a')
    // Another connection (another process, as far as the worker can tell) holds the write lock.
    const { default: Database } = await import('better-sqlite3')
    const other = new Database(path)
    other.exec('BEGIN IMMEDIATE')
    let error: unknown
    try {
      fs.writeFileSync('/b.txt', 'b')
    } catch (e) {
      error = e
    }
    expect(error).toMatchObject({ code: 'ETIMEDOUT' })
    expect(String((error as Error).message)).toMatch(/taken back and has no effect/)
    other.exec('COMMIT')
    // The worker's write now gets the lock, and is rolled back: its caller gave up.
    await new Promise((resolve) => setTimeout(resolve, 500))
    warm(fs)
    expect(fs.readFileSync('/a.txt', 'utf8')).toBe('a')
    expect(fs.existsSync('/b.txt')).toBe(false)
    expect(fs.existsSync('/nope')).toBe(false)
    expect(await agent.fs.exists('/b.txt')).toBe(false)
    other.close()
    await agent.close()
  })
})
