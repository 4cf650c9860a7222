import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  type AgentDatabase,
  type Executor,
  fixedClock,
  groupCommits,
  openDatabase,
} from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFileSystem, type SqlFileSystem } from '../src/index.js'
import { code } from './helpers.js'

// The path cache answers a lookup from remembered directories. Each test changes the tree
// behind the cache's back in a way the cache cannot see from this handle's own calls, and
// checks that the next answer is the database's, not the remembered one.

let dir: string
const open: AgentDatabase[] = []

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentfs-path-cache-'))
})
afterEach(async () => {
  for (const db of open.splice(0)) await db.close()
  rmSync(dir, { recursive: true, force: true })
})

async function connect(): Promise<{ fs: SqlFileSystem; db: AgentDatabase }> {
  const db = await openDatabase({
    driver: betterSqlite3Driver({ path: join(dir, 'cache.db') }),
    clock: fixedClock(),
  })
  open.push(db)
  return { fs: createFileSystem(db), db }
}

/**
 * `execute` and `executeNow` of `executor` that report each statement run to `seen` (a call of
 * `executeNow` that ran nothing, leaving the statement to `execute`, is not one).
 */
function counted(executor: Executor, seen: (sql: string) => void): Executor {
  const execute = executor.execute.bind(executor)
  const now = executor.executeNow?.bind(executor)
  return {
    execute: (statement) => {
      seen(statement.sql)
      return execute(statement)
    },
    ...(now && {
      executeNow: (statement) => {
        const result = now(statement)
        if (result !== undefined) seen(statement.sql)
        return result
      },
    }),
  } as Executor
}

/**
 * A driver on `name` that lists every SELECT it runs in `selects`, at the top level and in its
 * transactions (a group's statements run in its transaction: counted there too).
 */
function countingSelects(name: string) {
  const driver = betterSqlite3Driver({ path: join(dir, name) })
  const selects: string[] = []
  const select = (sql: string) => {
    if (/^\s*SELECT\s/i.test(sql)) selects.push(sql)
  }
  Object.assign(driver, counted(driver, select))
  const transaction = driver.transaction.bind(driver)
  driver.transaction = (fn) => transaction((tx) => fn({ ...tx, ...counted(tx, select) }))
  return { driver, selects }
}

/** Stats every file of `/a/b` twice, so the second round is answered from the cache. */
async function warm(fs: SqlFileSystem): Promise<void> {
  for (let round = 0; round < 2; round++) {
    expect((await fs.stat('/a/b/f')).size).toBe(1)
    expect(await fs.readdir('/a/b')).toContain('f')
  }
}

describe('path cache', () => {
  it('answers a stat in a remembered directory with one statement', async () => {
    const driver = betterSqlite3Driver({ path: join(dir, 'count.db') })
    const statements: string[] = []
    Object.assign(
      driver,
      counted(driver, (sql) => statements.push(sql)),
    )
    const db = await openDatabase({ driver, clock: fixedClock() })
    open.push(db)
    const fs = createFileSystem(db)
    await fs.mkdir('/a/b', { recursive: true })
    await fs.writeFile('/a/b/f', 'x')
    await fs.writeFile('/a/b/g', 'yy')
    await warm(fs)
    statements.length = 0
    expect((await fs.stat('/a/b/g')).size).toBe(2)
    expect(await fs.readdir('/a/b')).toEqual(['f', 'g'])
    expect(statements).toHaveLength(2)
  })

  it('after a change of its own, resolves a path afresh in one statement, grouped or not', async () => {
    const { driver, selects } = countingSelects('own.db')
    const plain = await openDatabase({ driver, clock: fixedClock() })
    open.push(plain)
    const grouped = groupCommits(plain, { maxDelayMs: 1000 })
    for (const db of [plain, grouped]) {
      const fs = createFileSystem(db)
      await fs.mkdir('/a/b', { recursive: true })
      await fs.writeFile('/a/b/f', 'x')
      await fs.writeFile('/top', 'y')
      await warm(fs)
      for (const [path, size] of [
        ['/a/b/f', 1],
        ['/top', 1],
      ] as const) {
        // The cache knows from the handle alone that it may be stale: no statement that is
        // bound to fail before the walk.
        await fs.writeFile('/a/b/other', 'z')
        selects.length = 0
        expect((await fs.stat(path)).size).toBe(size)
        expect(selects).toHaveLength(1)
      }
      await fs.rm('/a', { recursive: true })
      await fs.unlink('/top')
    }
    await grouped.flush()
  })

  it('sees a rename made by another connection', async () => {
    const one = await connect()
    await one.fs.mkdir('/a/b', { recursive: true })
    await one.fs.writeFile('/a/b/f', 'x')
    await warm(one.fs)
    const two = await connect()
    await two.fs.rename('/a', '/z')
    await two.fs.mkdir('/a/b', { recursive: true })
    await two.fs.writeFile('/a/b/f', 'longer')
    expect((await one.fs.stat('/a/b/f')).size).toBe(6)
    expect((await one.fs.stat('/z/b/f')).size).toBe(1)
    await two.fs.unlink('/a/b/f')
    expect(await code(one.fs.stat('/a/b/f'))).toBe('ENOENT')
    expect(await one.fs.readdir('/a/b')).toEqual([])
  })

  it('sees rows changed by a statement on the same handle', async () => {
    const { fs, db } = await connect()
    await fs.mkdir('/a/b', { recursive: true })
    await fs.writeFile('/a/b/f', 'x')
    await fs.mkdir('/c')
    await warm(fs)
    // Point /a at /c's inode behind the filesystem's back.
    await db.execute({
      sql: "UPDATE fs_dentry SET ino = (SELECT ino FROM fs_dentry WHERE parent_ino = 1 AND name = 'c') WHERE parent_ino = 1 AND name = 'a'",
    })
    expect(await code(fs.stat('/a/b/f'))).toBe('ENOENT')
    expect(await code(fs.readdir('/a/b'))).toBe('ENOENT')
  })

  it('forgets what a rolled-back transaction showed', async () => {
    const { fs, db } = await connect()
    await fs.mkdir('/a/b', { recursive: true })
    await fs.writeFile('/a/b/f', 'x')
    await warm(fs)
    // A transaction opened by hand on the top-level handle: what the filesystem reads inside
    // it (and may remember) is undone by the ROLLBACK.
    await db.execute({ sql: 'BEGIN' })
    await db.execute({
      sql: "UPDATE fs_dentry SET name = 'moved' WHERE parent_ino = 1 AND name = 'a'",
    })
    for (let round = 0; round < 2; round++) {
      expect((await fs.stat('/moved/b/f')).size).toBe(1)
      expect(await fs.readdir('/moved/b')).toEqual(['f'])
    }
    await db.execute({ sql: 'ROLLBACK' })
    // ROLLBACK leaves total_changes() where the undone UPDATE took it: a write's lookups, too,
    // must not take what was read inside.
    expect(await code(fs.writeFile('/moved/b/f', 'lost'))).toBe('ENOENT')
    expect(await code(fs.rename('/moved/b/f', '/moved/b/g'))).toBe('ENOENT')
    expect(await code(fs.stat('/moved/b/f'))).toBe('ENOENT')
    expect(await code(fs.readdir('/moved/b'))).toBe('ENOENT')
    expect((await fs.stat('/a/b/f')).size).toBe(1)
  })

  it('follows a directory replaced by a symlink', async () => {
    const { fs } = await connect()
    await fs.mkdir('/a/b', { recursive: true })
    await fs.writeFile('/a/b/f', 'x')
    await fs.mkdir('/other/b', { recursive: true })
    await fs.writeFile('/other/b/f', 'three')
    await warm(fs)
    await fs.rename('/a', '/old')
    await fs.symlink('/other', '/a')
    expect((await fs.stat('/a/b/f')).size).toBe(5)
    expect((await fs.lstat('/a')).isSymbolicLink()).toBe(true)
    expect(await fs.readdir('/a/b')).toEqual(['f'])
  })

  it('answers misses, trailing slashes and links exactly as a fresh resolution', async () => {
    const { fs } = await connect()
    await fs.mkdir('/a/b', { recursive: true })
    await fs.writeFile('/a/b/f', 'x')
    await fs.symlink('f', '/a/b/l')
    await warm(fs)
    expect(await code(fs.stat('/a/b/missing'))).toBe('ENOENT')
    expect(await code(fs.stat('/a/b/f/'))).toBe('ENOTDIR')
    expect((await fs.stat('/a/b/l')).isFile()).toBe(true)
    expect((await fs.lstat('/a/b/l')).isSymbolicLink()).toBe(true)
    expect((await fs.stat('/a/b/')).isDirectory()).toBe(true)
    expect((await fs.stat('/a/b/../b/f')).size).toBe(1)
  })

  it("keeps its directories across the handle's own writes that move no directory", async () => {
    const { driver, selects } = countingSelects('kept.db')
    const db = await openDatabase({ driver, clock: fixedClock() })
    open.push(db)
    const fs = createFileSystem(db)
    await fs.mkdir('/a/b', { recursive: true })
    await fs.writeFile('/a/b/f', 'x')
    await warm(fs)
    // Each write finds its names in the remembered directory: no statement walks from the root.
    const walks = () =>
      selects.filter((sql) => !sql.includes('LEFT JOIN fs_dentry d ON d.parent_ino = s.dir'))
    for (const step of [
      () => fs.writeFile('/a/b/g', 'yy'),
      () => fs.rename('/a/b/g', '/a/b/h'),
      () => fs.appendFile('/a/b/h', 'z'),
      () => fs.symlink('h', '/a/b/l'),
      () => fs.unlink('/a/b/l'),
      () => fs.mkdir('/a/b/c'),
    ]) {
      selects.length = 0
      await step()
      expect(
        selects.filter((sql) => sql.includes('LEFT JOIN fs_dentry d ON d.parent_ino = s.dir'))
          .length,
      ).toBeGreaterThan(0)
      expect(walks().filter((sql) => sql.includes('fs_dentry'))).toEqual([])
    }
    expect((await fs.stat('/a/b/h')).size).toBe(3)
    expect(await fs.readdir('/a/b')).toEqual(['c', 'f', 'h'])
  })

  it('forgets its directories when a write of its own moved or removed one', async () => {
    const { fs } = await connect()
    const tree = async () => {
      await fs.mkdir('/a/b/c', { recursive: true })
      await fs.writeFile('/a/b/f', 'x')
      await warm(fs)
      await fs.writeFile('/a/b/c/g', 'y')
    }
    // A directory renamed: its old path is gone, and nothing is written where it went.
    await tree()
    await fs.rename('/a', '/z')
    expect(await code(fs.writeFile('/a/b/f', 'lost'))).toBe('ENOENT')
    expect(await code(fs.stat('/a/b/c/g'))).toBe('ENOENT')
    expect(await fs.readFile('/z/b/f', 'utf8')).toBe('x')
    // A directory removed, alone or with what it held.
    await tree()
    await fs.unlink('/a/b/c/g')
    await fs.rmdir('/a/b/c')
    expect(await code(fs.writeFile('/a/b/c/g', 'lost'))).toBe('ENOENT')
    await fs.rm('/a/b', { recursive: true })
    expect(await code(fs.writeFile('/a/b/f', 'lost'))).toBe('ENOENT')
    expect(await code(fs.mkdir('/a/b/c'))).toBe('ENOENT')
    // A directory renamed over an empty one.
    await fs.rm('/a', { recursive: true })
    await tree()
    await fs.mkdir('/a/e')
    await fs.writeFile('/a/e2', 'w')
    await fs.rename('/a/b/c', '/a/e')
    expect(await fs.readdir('/a/e')).toEqual(['g'])
    expect(await code(fs.stat('/a/b/c/g'))).toBe('ENOENT')
  })

  it("sees another connection's commit between the handle's own writes", async () => {
    const one = await connect()
    await one.fs.mkdir('/a/b', { recursive: true })
    await one.fs.writeFile('/a/b/f', 'x')
    await warm(one.fs)
    await one.fs.writeFile('/a/b/g', 'y')
    const two = await connect()
    await two.fs.rename('/a', '/z')
    await two.fs.mkdir('/a/b', { recursive: true })
    await one.fs.writeFile('/a/b/f', 'new')
    await one.fs.rename('/a/b/f', '/a/b/moved')
    expect(await two.fs.readFile('/a/b/moved', 'utf8')).toBe('new')
    expect(await two.fs.readdir('/z/b')).toEqual(['f', 'g'])
  })

  it('stays correct beyond the number of directories it remembers', async () => {
    const { fs } = await connect()
    const count = 4200
    for (let i = 0; i < count; i++) await fs.mkdir(`/d${i}`)
    for (let i = 0; i < count; i++) await fs.writeFile(`/d${i}/f`, String(i))
    for (let round = 0; round < 2; round++)
      for (let i = 0; i < count; i += 7)
        expect((await fs.stat(`/d${i}/f`)).size).toBe(`${i}`.length)
    await fs.rename('/d0', '/gone')
    expect(await code(fs.stat('/d0/f'))).toBe('ENOENT')
    expect((await fs.stat('/d4199/f')).size).toBe(4)
  })
})
