import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fixedClock, isAgentFsError } from '@agentfs/core'
import { libsqlDriver } from '@agentfs/driver-libsql'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest'
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
    const byPath = await AgentFS.open({ path: join(dir, 'x.db') })
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

  test('a path whose folder is missing is refused, and no folder is made; an id makes its own', async () => {
    const missing = join(dir, 'nonexistent', 'dir', 'x.db')
    await expect(AgentFS.open({ path: missing })).rejects.toMatchObject({
      code: 'CANT_OPEN',
      message: `the folder ${join(dir, 'nonexistent', 'dir')} does not exist; create it first (AgentFS.open makes folders only for { id, dir })`,
    })
    await expect(stat(join(dir, 'nonexistent'))).rejects.toMatchObject({ code: 'ENOENT' })
    const byId = await AgentFS.open({ id: 'made', dir: join(dir, 'ids', 'here') })
    await byId.close()
    expect((await stat(join(dir, 'ids', 'here', 'made.db'))).isFile()).toBe(true)
  })
})

describe('AgentFS.open with groupCommits', () => {
  test('fs, kv and tools share commits: another connection sees them after flush or close', async () => {
    const path = join(dir, 'grouped.db')
    const agent = await AgentFS.open({ path, groupCommits: { maxDelayMs: 1000 } })
    const watcher = new Database(path, { readonly: true })
    const count = (sql: string) => (watcher.prepare(sql).get() as { n: number }).n
    try {
      await agent.fs.writeFile('/a.txt', 'one')
      await agent.kv.set('k', 1)
      await agent.transaction(async (tx) => {
        await tx.fs.writeFile('/b.txt', 'two')
        await tx.tools.record({ name: 't', parameters: {}, startedAt: 1, completedAt: 2 })
      })
      await expect(
        agent.transaction(async (tx) => {
          await tx.kv.set('gone', 1)
          throw new Error('rolled back alone')
        }),
      ).rejects.toThrow('rolled back alone')
      // This connection reads its own changes; the other sees none yet.
      expect(await agent.fs.readFile('/b.txt', 'utf8')).toBe('two')
      expect(count("SELECT count(*) AS n FROM fs_dentry WHERE name = 'a.txt'")).toBe(0)
      await agent.flush()
      expect(count("SELECT count(*) AS n FROM fs_dentry WHERE name IN ('a.txt', 'b.txt')")).toBe(2)
      expect(count("SELECT count(*) AS n FROM kv_store WHERE key IN ('k', 'gone')")).toBe(1)
      expect(count('SELECT count(*) AS n FROM tool_calls')).toBe(1)
      await agent.fs.writeFile('/c.txt', 'three')
    } finally {
      await agent.close()
    }
    expect(count("SELECT count(*) AS n FROM fs_dentry WHERE name = 'c.txt'")).toBe(1)
    watcher.close()
    // Without the option every change is committed when it is made; flush has nothing to do.
    const plain = await AgentFS.open({ path })
    await plain.fs.writeFile('/d.txt', 'four')
    const other = new Database(path, { readonly: true })
    expect(other.prepare("SELECT count(*) AS n FROM fs_dentry WHERE name = 'd.txt'").get()).toEqual(
      {
        n: 1,
      },
    )
    other.close()
    await plain.flush()
    await plain.close()
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

test('an interrupted commit is said on open: to onWarning, else as a process warning', async () => {
  const here = await mkdtemp(join(tmpdir(), 'agentfs-interrupted-'))
  try {
    const path = join(here, 'session.db')
    const agent = await AgentFS.open({ path })
    // The journal a commit killed after its first of three steps leaves (overlay's layout).
    await agent.db.execute({
      sql: 'CREATE TABLE agentfs_overlay_commit (step INTEGER PRIMARY KEY, op TEXT NOT NULL, path TEXT NOT NULL, arg TEXT, mode INTEGER, atime REAL, mtime REAL, done INTEGER NOT NULL DEFAULT 0)',
    })
    await agent.db.execute({
      sql: "INSERT INTO agentfs_overlay_commit (step, op, path, done) VALUES (0, 'mkdir', '/a', 1), (1, 'file', '/a/b', 0), (2, 'file', '/a/c', 0)",
    })
    await agent.close()
    const told: string[] = []
    const again = await AgentFS.open({ path, onWarning: (m) => told.push(m) })
    await again.close()
    expect(told).toEqual([
      expect.stringMatching(/interrupted commit \(2 of 3 steps left, first: \/a\/b\)/),
    ])
    // Caught here rather than printed: the test run's output stays free of warnings.
    const emitted = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined)
    try {
      await (await AgentFS.open({ path })).close()
      expect(emitted).toHaveBeenCalledWith(
        expect.stringMatching(/interrupted commit/),
        expect.objectContaining({ code: 'AGENTFS_INTERRUPTED_COMMIT' }),
      )
    } finally {
      emitted.mockRestore()
    }
  } finally {
    await rm(here, { recursive: true, force: true })
  }
})
