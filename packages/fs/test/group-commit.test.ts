import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  type AgentDatabase,
  fixedClock,
  type GroupCommitOptions,
  type GroupedDatabase,
  groupCommits,
  isAgentFsError,
  openDatabase,
} from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { createFileSystem } from '../src/index.js'

const require = createRequire(import.meta.url)

/**
 * `groupCommits` on a database file, watched from a second connection that is not ours (plain
 * better-sqlite3, no AgentFS locks): what it sees is what another process would see.
 */
let dir: string
const opened: AgentDatabase[] = []
const watchers: Database.Database[] = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-group-'))
})
afterEach(async () => {
  for (const w of watchers.splice(0)) w.close()
  for (const db of opened.splice(0)) await db.close().catch(() => {})
  await rm(dir, { recursive: true, force: true })
})

async function grouped(
  options: GroupCommitOptions,
  driver: { busyTimeoutMs?: number } = {},
): Promise<{ db: GroupedDatabase; path: string }> {
  const path = join(dir, 'g.db')
  const base = await openDatabase({
    driver: betterSqlite3Driver({ path, ...driver }),
    clock: fixedClock(),
  })
  await base.execute({ sql: 'CREATE TABLE t (x INTEGER)' })
  const db = groupCommits(base, options)
  opened.push(db)
  return { db, path }
}

/** The rows of `t` another connection sees now. */
function seen(path: string): number[] {
  let watcher = watchers[0]
  if (watcher === undefined) {
    watcher = new Database(path, { readonly: true })
    watchers.push(watcher)
  }
  return (watcher.prepare('SELECT x FROM t ORDER BY rowid').all() as { x: number }[]).map(
    (r) => r.x,
  )
}

const insert = (db: GroupedDatabase, x: number) =>
  db.transaction((tx) => tx.execute({ sql: 'INSERT INTO t VALUES (?)', params: [x] }))

/** Polls `check` every 5 ms until it holds or `ms` pass; the milliseconds it took, or Infinity. */
async function within(ms: number, check: () => boolean): Promise<number> {
  const start = Date.now()
  while (Date.now() - start < ms) {
    if (check()) return Date.now() - start
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  return check() ? Date.now() - start : Number.POSITIVE_INFINITY
}

describe('groupCommits', () => {
  test('changes reach other connections when their group commits: flush commits at once', async () => {
    const { db, path } = await grouped({ maxDelayMs: 1000 })
    await insert(db, 1)
    await insert(db, 2)
    // Our own connection reads its changes at once, in order.
    const own = await db.execute<{ n: number }>({ sql: 'SELECT count(*) AS n FROM t' })
    expect(own.rows[0]!.n).toBe(2)
    expect(seen(path)).toEqual([])
    await db.flush()
    expect(seen(path)).toEqual([1, 2])
  })

  test('a group commits by itself within maxDelayMs, and after maxChanges', async () => {
    const timed = await grouped({ maxDelayMs: 40 })
    await insert(timed.db, 1)
    expect(await within(900, () => seen(timed.path).length === 1)).toBeLessThan(900)
    await timed.db.close()
    for (const w of watchers.splice(0)) w.close()
    await rm(timed.path)

    const sized = await grouped({ maxDelayMs: 1000, maxChanges: 3 })
    await insert(sized.db, 1)
    await insert(sized.db, 2)
    expect(seen(sized.path)).toEqual([])
    await insert(sized.db, 3)
    // Well before the 1 s delay: the third change filled the group.
    expect(await within(500, () => seen(sized.path).length === 3)).toBeLessThan(500)
  })

  test('a call that fails rolls back alone; the calls around it commit', async () => {
    const { db, path } = await grouped({ maxDelayMs: 1000 })
    const failing = db.transaction(async (tx) => {
      await tx.execute({ sql: 'INSERT INTO t VALUES (2)' })
      throw new Error('refused by a check')
    })
    const results = await Promise.allSettled([insert(db, 1), failing, insert(db, 3)])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    expect((results[1] as PromiseRejectedResult).reason.message).toBe('refused by a check')
    await db.flush()
    expect(seen(path)).toEqual([1, 3])
  })

  test('concurrent calls run one at a time in call order; each read sees the calls before it', async () => {
    const { db, path } = await grouped({ maxDelayMs: 1000 })
    const counts: Promise<number>[] = []
    const writes: Promise<unknown>[] = []
    for (let i = 1; i <= 50; i++) {
      writes.push(insert(db, i))
      counts.push(
        db.execute<{ n: number }>({ sql: 'SELECT count(*) AS n FROM t' }).then((r) => r.rows[0]!.n),
      )
    }
    await Promise.all(writes)
    expect(await Promise.all(counts)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1))
    await db.flush()
    expect(seen(path)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1))
  })

  test('a transaction that ends under a call loses its group: reported once, and the next group works', async () => {
    const lost: number[] = []
    const { db, path } = await grouped({
      maxDelayMs: 1000,
      onLost: (_error, changes) => lost.push(changes),
    })
    await insert(db, 1)
    await insert(db, 2)
    // What SQLite does itself after some I/O errors: the whole transaction is rolled back. A
    // call queued behind it goes to the next group instead of running outside any transaction.
    const broken = db.transaction((tx) => tx.execute({ sql: 'ROLLBACK' }).then(() => undefined))
    const after = insert(db, 3)
    await expect(broken).rejects.toThrow()
    await after
    const error = await db.flush().then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(isAgentFsError(error)).toBe(true)
    expect((error as Error).message).toMatch(
      /^2 change\(s\) that had already succeeded were not committed/,
    )
    expect(lost).toEqual([2])
    await db.flush() // reported once
    await insert(db, 4)
    await db.flush()
    expect(seen(path)).toEqual([3, 4])
  })

  test('a group that cannot begin fails its calls (BUSY) and the next one works', async () => {
    const { db, path } = await grouped({ maxDelayMs: 1000 }, { busyTimeoutMs: 100 })
    const holder = new Database(path)
    watchers.push(holder)
    holder.exec('BEGIN IMMEDIATE')
    const results = await Promise.allSettled([insert(db, 1), insert(db, 2)])
    for (const r of results) {
      expect(r.status).toBe('rejected')
      expect((r as PromiseRejectedResult).reason.code).toBe('BUSY')
    }
    holder.exec('ROLLBACK')
    await insert(db, 3)
    await db.flush()
    expect(seen(path)).toEqual([3])
  })

  test('close commits the open group; maxDelayMs 0 commits every change on its own', async () => {
    const { db, path } = await grouped({ maxDelayMs: 1000 })
    await insert(db, 1)
    const start = Date.now()
    await db.close()
    // At once, not when the group's 1 s is up.
    expect(Date.now() - start).toBeLessThan(500)
    expect(seen(path)).toEqual([1])
    await expect(insert(db, 2)).rejects.toMatchObject({ code: 'CLOSED' })
    for (const w of watchers.splice(0)) w.close()
    await rm(path)

    const each = await grouped({ maxDelayMs: 0 })
    await insert(each.db, 1)
    expect(seen(each.path)).toEqual([1])
  })

  test('while changes keep coming, another process still gets the write lock between groups', async () => {
    const { db, path } = await grouped({ maxDelayMs: 5 })
    let stop = false
    let written = 0
    // Calls arrive from I/O, as a mount's do: the event loop turns between them.
    const stream = (async () => {
      while (!stop) {
        await insert(db, ++written)
        await new Promise((resolve) => setImmediate(resolve))
      }
    })()
    await new Promise((resolve) => setTimeout(resolve, 50))
    // SQLite's own busy handler in another process: it retries now and then, for up to 2 s.
    const script = `const D = require(${JSON.stringify(require.resolve('better-sqlite3'))});
      const d = new D(${JSON.stringify(path)}, { timeout: 2000 });
      try { d.prepare('INSERT INTO t VALUES (-1)').run(); console.log('ok') }
      catch (e) { console.log(e.code) }`
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d: Buffer) => {
      out += String(d)
    })
    await new Promise((resolve) => child.on('exit', resolve))
    stop = true
    await stream
    expect(out.trim()).toBe('ok')
    expect(written).toBeGreaterThan(10)
    await db.flush()
    expect(seen(path)).toContain(-1)
  })

  test('a filesystem on it behaves as on the database itself, and its changes are stored', async () => {
    const { db, path } = await grouped({ maxDelayMs: 1000 })
    const fs = createFileSystem(db)
    await fs.mkdir('/d')
    await fs.writeFile('/d/a.txt', 'one')
    await fs.rename('/d/a.txt', '/d/b.txt')
    await expect(fs.mkdir('/d')).rejects.toMatchObject({ code: 'EEXIST' })
    await fs.appendFile('/d/b.txt', ', two')
    expect(await fs.readFile('/d/b.txt', 'utf8')).toBe('one, two')
    await db.close()
    const again = await openDatabase({ driver: betterSqlite3Driver({ path }) })
    opened.push(again)
    expect(await createFileSystem(again).readFile('/d/b.txt', 'utf8')).toBe('one, two')
  })

  test('options are checked', async () => {
    const base = await openDatabase({ driver: betterSqlite3Driver({ path: ':memory:' }) })
    opened.push(base)
    expect(() => groupCommits(base, { maxDelayMs: -1 })).toThrow(/maxDelayMs must be 0 … 1000/)
    expect(() => groupCommits(base, { maxDelayMs: 5000 })).toThrow(/maxDelayMs/)
    expect(() => groupCommits(base, { maxChanges: 0 })).toThrow(/maxChanges must be a positive/)
  })
})
