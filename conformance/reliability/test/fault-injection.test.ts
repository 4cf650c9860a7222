import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { canonicalDump } from '@agentfs/conformance'
import { AgentFsError, type Driver, type Executor, fixedClock, fsck } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { AgentFS } from '@agentfs/sdk'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'

/**
 * A driver that fails the N-th statement after it is armed with an I/O error, as SQLite reports
 * a failing disk (SQLITE_IOERR). The Driver seam makes every storage fault reachable.
 */
function faultyDriver(inner: Driver) {
  let failAt = Number.POSITIVE_INFINITY
  let seen = 0
  const wrap = (executor: Executor): Executor => ({
    execute(statement) {
      if (seen++ === failAt) {
        return Promise.reject(
          Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR', errcode: 10 }),
        )
      }
      return executor.execute(statement)
    },
  })
  const driver: Driver = {
    name: `faulty(${inner.name})`,
    capabilities: inner.capabilities,
    execute: (statement) => wrap(inner).execute(statement),
    transaction: (fn) => inner.transaction((tx) => fn(wrap(tx))),
    executeScript: (sql) => inner.executeScript(sql),
    close: () => inner.close(),
  }
  return {
    driver,
    arm(n: number) {
      failAt = n
      seen = 0
    },
    disarm() {
      failAt = Number.POSITIVE_INFINITY
    },
  }
}

const payload = (n: number, salt: number) =>
  Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + salt) & 255))

/** Every mutation the stores offer, on a populated database. */
const MUTATIONS: Record<string, (agent: AgentFS) => Promise<unknown>> = {
  'writeFile (new, 3 chunks)': (a) => a.fs.writeFile('/docs/new.bin', payload(10_000, 1)),
  'writeFile (overwrite, shrink)': (a) => a.fs.writeFile('/docs/big.bin', 'short'),
  appendFile: (a) => a.fs.appendFile('/docs/big.bin', payload(5000, 2)),
  truncate: (a) => a.fs.truncate('/docs/big.bin', 100),
  'rename (directory across parents)': (a) => a.fs.rename('/tree', '/docs/moved'),
  'rename (replace a file)': (a) => a.fs.rename('/docs/a.txt', '/docs/big.bin'),
  'rm -r': (a) => a.fs.rm('/tree', { recursive: true }),
  'cp -r': (a) => a.fs.cp('/tree', '/copy', { recursive: true }),
  'mkdir -p': (a) => a.fs.mkdir('/x/y/z', { recursive: true }),
  symlink: (a) => a.fs.symlink('/docs/a.txt', '/link'),
  link: (a) => a.fs.link('/docs/a.txt', '/hard'),
  unlink: (a) => a.fs.unlink('/docs/a.txt'),
  chmod: (a) => a.fs.chmod('/docs/a.txt', 0o600),
  'handle write at an offset': async (a) => {
    const handle = await a.fs.open('/docs/big.bin', 'r+')
    try {
      await handle.write(payload(6000, 3), 0, 6000, 3000)
    } finally {
      await handle.close()
    }
  },
  'kv set': (a) => a.kv.set('user:prefs', { theme: 'light', size: 3 }),
  'kv update': (a) => a.kv.update('counter', (v) => ((v as number | undefined) ?? 0) + 1),
  'kv delete': (a) => a.kv.delete('user:prefs'),
  'tool call record': (a) =>
    a.tools.record({
      name: 'edit_file',
      parameters: { path: '/a' },
      result: { ok: true },
      startedAt: 1000,
      completedAt: 1002,
    }),
  'cross-store transaction': (a) =>
    a.transaction(async (tx) => {
      await tx.fs.writeFile('/docs/tx.txt', 'both or neither')
      await tx.kv.set('tx', 1)
      await tx.tools.record({ name: 'tx', parameters: {}, startedAt: 1, completedAt: 2 })
    }),
}

async function populate(agent: AgentFS): Promise<void> {
  await agent.fs.mkdir('/docs')
  await agent.fs.writeFile('/docs/a.txt', 'alpha\n')
  await agent.fs.writeFile('/docs/big.bin', payload(20_000, 0))
  await agent.fs.mkdir('/tree/sub', { recursive: true })
  await agent.fs.writeFile('/tree/sub/f.txt', payload(9000, 5))
  await agent.fs.symlink('sub/f.txt', '/tree/l')
  await agent.kv.set('user:prefs', { theme: 'dark' })
  await agent.kv.set('counter', 41)
  await agent.tools.record({
    name: 'read_file',
    parameters: { path: '/docs/a.txt' },
    startedAt: 1,
    completedAt: 2,
  })
}

const dumpOf = (agent: AgentFS) => canonicalDump(agent.db, { maxValueLength: 1_000_000 })

describe('an I/O error at any statement of a mutation leaves no trace', () => {
  for (const [name, mutate] of Object.entries(MUTATIONS)) {
    test(name, async () => {
      let failures = 0
      for (let at = 0; ; at++) {
        const faulty = faultyDriver(betterSqlite3Driver({ path: ':memory:' }))
        const agent = await AgentFS.open({
          driver: faulty.driver,
          clock: fixedClock(),
        })
        try {
          await populate(agent)
          const before = await dumpOf(agent)
          faulty.arm(at)
          const outcome = await mutate(agent).then(
            () => undefined,
            (error: unknown) => error,
          )
          faulty.disarm()
          if (outcome === undefined) {
            // The mutation needs fewer statements than `at`: every position has been tried.
            expect(await dumpOf(agent)).not.toBe(before)
            break
          }
          failures++
          expect(outcome, `statement ${at}`).toBeInstanceOf(AgentFsError)
          expect((outcome as AgentFsError).code).toBe('IO')
          expect(await dumpOf(agent), `statement ${at}`).toBe(before)
          expect((await fsck(agent.db)).findings).toEqual([])
        } finally {
          await agent.close()
        }
      }
      expect(failures).toBeGreaterThan(0)
    })
  }
})

describe('storage limits and modes', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agentfs-faults-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  test('disk full (max_page_count): a typed FULL error, the old content intact, writable again after', async () => {
    const path = join(dir, 'full.db')
    const agent = await AgentFS.open({ path })
    await agent.fs.writeFile('/keep.txt', 'committed before the disk filled\n')
    await agent.kv.set('k', 'v')
    const { rows } = await agent.db.execute<{ page_count: number }>({ sql: 'PRAGMA page_count' })
    await agent.db.execute({ sql: `PRAGMA max_page_count = ${rows[0]!.page_count + 8}` })
    const before = await dumpOf(agent)

    const big = payload(1024 * 1024, 9)
    const error = await agent.fs.writeFile('/big.bin', big).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(AgentFsError)
    expect((error as AgentFsError).code).toBe('FULL')
    expect((error as Error).message).toMatch(/free disk space or raise the size limit/)
    const overwrite = await agent.fs.writeFile('/keep.txt', big).catch((e: unknown) => e)
    expect((overwrite as AgentFsError).code).toBe('FULL')
    const kv = await agent.kv.set('huge', 'x'.repeat(1024 * 1024)).catch((e: unknown) => e)
    expect((kv as AgentFsError).code).toBe('FULL')
    // Nothing of the refused writes is left behind.
    expect(await dumpOf(agent)).toBe(before)
    expect((await fsck(agent.db)).findings).toEqual([])

    // A stream commits batch by batch: it fails with FULL and leaves a consistent file.
    const stream = agent.fs.createWriteStream('/streamed.bin')
    const streamed = await new Promise<unknown>((resolve) => {
      stream.on('error', resolve)
      stream.on('finish', () => resolve(undefined))
      stream.end(big)
    })
    expect((streamed as AgentFsError).code).toBe('FULL')
    expect((await fsck(agent.db)).findings).toEqual([])
    await agent.fs.rm('/streamed.bin', { force: true })
    expect(await agent.fs.readFile('/keep.txt', 'utf8')).toBe('committed before the disk filled\n')

    await agent.db.execute({ sql: 'PRAGMA max_page_count = 1073741823' })
    await agent.fs.writeFile('/big.bin', big)
    expect((await agent.fs.readFile('/big.bin')).equals(big)).toBe(true)
    expect((await fsck(agent.db)).findings).toEqual([])
    await agent.close()
  })

  test('a read-only database: reads work, every change is a typed READONLY error', async () => {
    const path = join(dir, 'ro.db')
    const writer = await AgentFS.open({ path })
    await writer.fs.writeFile('/a.txt', 'read me')
    await writer.kv.set('k', 1)
    await writer.close()

    const agent = await AgentFS.open({ driver: betterSqlite3Driver({ path, readonly: true }) })
    expect(await agent.fs.readFile('/a.txt', 'utf8')).toBe('read me')
    expect(await agent.kv.get('k')).toBe(1)
    for (const change of [
      () => agent.fs.writeFile('/a.txt', 'no'),
      () => agent.fs.mkdir('/d'),
      () => agent.fs.unlink('/a.txt'),
      () => agent.kv.set('k', 2),
      () => agent.tools.record({ name: 'x', parameters: {}, startedAt: 1, completedAt: 2 }),
    ]) {
      const error = await change().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(AgentFsError)
      expect((error as AgentFsError).code).toBe('READONLY')
    }
    expect(await agent.fs.readFile('/a.txt', 'utf8')).toBe('read me')
    expect((await fsck(agent.db)).findings).toEqual([])
    await agent.close()
  })

  test('a closed database: every operation is a typed CLOSED error', async () => {
    const agent = await AgentFS.open({ path: ':memory:' })
    await agent.fs.writeFile('/a.txt', 'x')
    const handle = await agent.fs.open('/a.txt', 'r')
    await agent.close()
    for (const op of [
      () => agent.fs.readFile('/a.txt'),
      () => agent.fs.writeFile('/a.txt', 'y'),
      () => agent.kv.get('k'),
      () => agent.tools.recent(),
      () => handle.read(Buffer.alloc(1), 0, 1, 0),
    ]) {
      const error = await op().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(AgentFsError)
      expect((error as AgentFsError).code).toBe('CLOSED')
    }
  })
})
