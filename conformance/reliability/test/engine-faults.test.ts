import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { canonicalDump } from '@agentfs/conformance'
import { fixedClock, fsck, isAgentFsError } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { AgentFS } from '@agentfs/sdk'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'

/**
 * Real engine errors at every statement of a mutation, on a file database: the better-sqlite3
 * connection is wrapped so that the N-th statement run — BEGIN, SAVEPOINT, RELEASE, COMMIT and
 * ROLLBACK included — throws the engine's own `SqliteError` with SQLITE_IOERR or SQLITE_FULL
 * instead of running. Each time the caller must get a typed error, the connection must not be
 * left inside a transaction (the next write works), and the file, reopened by a new
 * connection, must hold exactly what it held before, fsck-clean.
 */

type Db = InstanceType<typeof Database>
const CODES = ['SQLITE_IOERR', 'SQLITE_FULL'] as const

function faultyConnection(db: Db) {
  let failAt = Number.POSITIVE_INFINITY
  let seen = 0
  let code: (typeof CODES)[number] = 'SQLITE_IOERR'
  /** Also fail the ROLLBACK that follows the injected failure (the worst case). */
  let failRollback = false
  let tripped = false
  const failed = new Set<string>()
  const raise = (): never => {
    throw new Database.SqliteError(
      code === 'SQLITE_FULL' ? 'database or disk is full' : 'disk I/O error',
      code,
    )
  }
  const trip = (sql: string) => {
    if (seen++ === failAt) {
      tripped = true
      failed.add(sql.split(' ')[0]!)
      raise()
    }
    if (failRollback && tripped && /^ROLLBACK/.test(sql)) {
      failRollback = false
      failed.add(sql.split(' ').slice(0, 2).join(' '))
      raise()
    }
  }
  const wrapStatement = (statement: ReturnType<Db['prepare']>, sql: string) =>
    new Proxy(statement, {
      get(target, key) {
        const value = Reflect.get(target, key, target)
        if (typeof value !== 'function') return value
        if (key === 'run' || key === 'all' || key === 'get' || key === 'iterate')
          return (...args: unknown[]) => {
            trip(sql)
            return value.apply(target, args)
          }
        return (...args: unknown[]) => {
          const out = value.apply(target, args)
          return out === target ? proxy : out
        }
      },
    })
  let proxy: unknown
  const connection = new Proxy(db, {
    get(target, key) {
      const value = Reflect.get(target, key, target)
      if (key === 'prepare')
        return (sql: string) => {
          proxy = undefined
          const statement = wrapStatement(target.prepare(sql), sql)
          proxy = statement
          return statement
        }
      if (key === 'exec')
        return (sql: string) => {
          trip(sql)
          return target.exec(sql)
        }
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return {
    connection,
    arm(n: number, as: (typeof CODES)[number], rollbackToo = false) {
      failAt = n
      seen = 0
      code = as
      tripped = false
      failRollback = rollbackToo
    },
    disarm() {
      failAt = Number.POSITIVE_INFINITY
      failRollback = false
    },
    /** The first word of every statement that was made to fail (BEGIN, COMMIT, ROLLBACK, …). */
    failed,
  }
}

const MUTATIONS: Record<string, (agent: AgentFS) => Promise<unknown>> = {
  'writeFile (new)': (a) => a.fs.writeFile('/docs/new.txt', 'x'.repeat(9000)),
  'writeFile (overwrite)': (a) => a.fs.writeFile('/docs/a.txt', 'changed'),
  'rename (replace)': (a) => a.fs.rename('/docs/b.txt', '/docs/a.txt'),
  'rm -r': (a) => a.fs.rm('/docs', { recursive: true }),
  'kv set': (a) => a.kv.set('k', { v: 2 }),
  'tool call record': (a) =>
    a.tools.record({ name: 't', parameters: {}, startedAt: 1, completedAt: 2 }),
  'cross-store transaction': (a) =>
    a.transaction(async (tx) => {
      await tx.fs.writeFile('/docs/tx.txt', 'both or neither')
      await tx.kv.set('tx', 1)
    }),
  'nested transaction (savepoints)': (a) =>
    a.fs.transaction(async (fs) => {
      await fs.writeFile('/docs/n1.txt', '1')
      await fs.transaction(async (inner) => inner.writeFile('/docs/n2.txt', '2'))
    }),
}

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-engine-faults-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

async function reopenDump(path: string): Promise<{ dump: string; clean: boolean }> {
  const agent = await AgentFS.open({ path, clock: fixedClock() })
  try {
    const report = await fsck(agent.db)
    return { dump: await canonicalDump(agent.db, { maxValueLength: 100_000 }), clean: report.ok }
  } finally {
    await agent.close()
  }
}

describe('real engine errors at every statement, BEGIN/COMMIT/ROLLBACK included (file database)', () => {
  for (const [name, mutate] of Object.entries(MUTATIONS)) {
    test(name, async () => {
      const path = join(dir, `${name.replace(/\W+/g, '-')}.db`)
      const faulty = faultyConnection(new Database(path))
      const agent = await AgentFS.open({
        driver: betterSqlite3Driver({ database: faulty.connection as Db }),
        clock: fixedClock(),
      })
      await agent.fs.mkdir('/docs')
      await agent.fs.writeFile('/docs/a.txt', 'alpha')
      await agent.fs.writeFile('/docs/b.txt', 'beta')
      await agent.kv.set('k', { v: 1 })
      let before = await canonicalDump(agent.db, { maxValueLength: 100_000 })
      faulty.arm(Number.POSITIVE_INFINITY, 'SQLITE_IOERR')
      let n = 0
      for (; ; n++) {
        const code = CODES[n % 2]!
        // Every other position also fails the rollback that follows.
        faulty.arm(n, code, Math.floor(n / 2) % 2 === 1)
        let error: unknown
        try {
          await mutate(agent)
        } catch (e) {
          error = e
        }
        faulty.disarm()
        if (error === undefined) break // the mutation ran to its end: every position was tried
        expect(isAgentFsError(error), `${name} @${n}: ${String(error)}`).toBe(true)
        expect(['IO', 'FULL'], `${name} @${n}: ${String(error)}`).toContain(
          (error as { code: string }).code,
        )
        expect(
          await canonicalDump(agent.db, { maxValueLength: 100_000 }),
          `${name} @${n} (${code}) left a trace`,
        ).toBe(before)
        const disk = await reopenDump(path)
        expect(disk.dump, `${name} @${n}: the file differs`).toBe(before)
        expect(disk.clean).toBe(true)
        // The connection is not stuck inside a transaction: a write goes through.
        await agent.fs.writeFile('/probe', 'p')
        await agent.fs.unlink('/probe')
        before = await canonicalDump(agent.db, { maxValueLength: 100_000 })
      }
      expect(n).toBeGreaterThan(2)
      for (const kind of ['BEGIN', 'COMMIT', 'ROLLBACK'])
        expect(
          [...faulty.failed].some((f) => f.startsWith(kind)),
          `${name}: ${kind} never failed`,
        ).toBe(true)
      await agent.close()
    }, 120_000)
  }
})
