import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type AgentDatabase, fixedClock, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, test } from 'vitest'
import { ConflictError, createFileSystem } from '../src/index.js'
import { DRIVERS, freshFs } from './helpers.js'

for (const driver of Object.keys(DRIVERS)) {
  describe(`atime policies (${driver})`, () => {
    test('relatime (default) writes atime only when it is older than mtime/ctime', async () => {
      const { fs } = await freshFs(driver)
      await fs.writeFile('/f', 'x')
      const created = (await fs.stat('/f')).atimeNs
      await fs.readFile('/f')
      const first = (await fs.stat('/f')).atimeNs
      expect(first).toBeGreaterThan(created) // atime was not newer than mtime: updated once
      await fs.readFile('/f')
      expect((await fs.stat('/f')).atimeNs).toBe(first) // now newer: no write per read
    })

    test("relatime after each kind of change: this connection's, another connection's", async () => {
      const { fs, db } = await freshFs(driver)
      const atime = async () => (await fs.stat('/f')).atimeNs
      await fs.writeFile('/f', 'x')
      await fs.readFile('/f')
      await fs.readFile('/f')
      const quiet = await atime()
      // A change made here: the next read sets the access time again (with its read).
      await fs.writeFile('/f', 'y')
      expect(await fs.readFile('/f', 'utf8')).toBe('y')
      const second = await atime()
      expect(second).toBeGreaterThan(quiet)
      await fs.readFile('/f')
      expect(await atime()).toBe(second)
      // A lone statement on the handle (not through the filesystem) counts as well.
      await db.execute({
        sql: "UPDATE fs_inode SET mtime = mtime + 10 WHERE ino = (SELECT ino FROM fs_dentry WHERE name = 'f')",
      })
      await fs.readFile('/f')
      expect(await atime()).toBeGreaterThan(second)
    })

    test('strictatime writes on every read; noatime never', async () => {
      const strict = (await freshFs(driver, { atime: 'strictatime' })).fs
      await strict.writeFile('/f', 'x')
      await strict.readFile('/f')
      const a = (await strict.stat('/f')).atimeNs
      await strict.readFile('/f')
      expect((await strict.stat('/f')).atimeNs).toBeGreaterThan(a)
      const none = (await freshFs(driver, { atime: 'noatime' })).fs
      await none.writeFile('/f', 'x')
      const b = (await none.stat('/f')).atimeNs
      await none.readFile('/f')
      expect((await none.stat('/f')).atimeNs).toBe(b)
    })
  })
}

describe('access times while another connection writes', () => {
  const dirs: string[] = []
  const dbs: AgentDatabase[] = []
  afterEach(async () => {
    for (const db of dbs.splice(0)) await db.close()
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
  })
  /** A database file holding `/f` ("bytes"), and a filesystem on it (read-only if asked). */
  async function fileWithF(readonly = false) {
    const dir = await mkdtemp(join(tmpdir(), 'agentfs-atime-'))
    dirs.push(dir)
    const path = join(dir, 'db.sqlite')
    const writer = await openDatabase({ driver: betterSqlite3Driver({ path }) })
    await createFileSystem(writer).writeFile('/f', 'bytes')
    await writer.close()
    const db = await openDatabase({ driver: betterSqlite3Driver({ path, readonly }) })
    dbs.push(db)
    return { path, fs: createFileSystem(db) }
  }

  test('a read while another process holds the write lock returns its bytes; the access time lands when the lock is free', async () => {
    const { path, fs } = await fileWithF()
    const before = (await fs.stat('/f')).atimeNs
    // A connection outside this driver (as another process's would be) takes the write lock.
    const other = new Database(path)
    other.exec('BEGIN IMMEDIATE')
    let released = false
    const release = setTimeout(() => {
      released = true
      other.exec('COMMIT')
    }, 150)
    expect(await fs.readFile('/f', 'utf8')).toBe('bytes')
    // The access time waited for the lock (as a lone update does), then was set.
    expect(released).toBe(true)
    expect((await fs.stat('/f')).atimeNs).toBeGreaterThan(before)
    clearTimeout(release)
    other.close()
  })

  test('a change another connection committed: the next read sets the access time', async () => {
    const { path, fs } = await fileWithF()
    await fs.readFile('/f')
    await fs.readFile('/f')
    const quiet = (await fs.stat('/f')).atimeNs
    const other = new Database(path)
    other.exec(
      "UPDATE fs_inode SET mtime = mtime + 10 WHERE ino = (SELECT ino FROM fs_dentry WHERE name = 'f')",
    )
    other.close()
    await fs.readFile('/f')
    expect((await fs.stat('/f')).atimeNs).toBeGreaterThan(quiet)
  })

  test('on a read-only database the read returns and the access time stays', async () => {
    const { fs } = await fileWithF(true)
    const before = (await fs.stat('/f')).atimeNs
    expect(await fs.readFile('/f', 'utf8')).toBe('bytes')
    expect(await fs.readFile('/f', 'utf8')).toBe('bytes')
    expect((await fs.stat('/f')).atimeNs).toBe(before)
  })
})

describe('versions across connections', () => {
  test('two connections with the same fixed clock still get distinct, increasing versions', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'agentfs-versions-'))
    const path = join(dir, 'db.sqlite')
    // Both clocks return identical times: ctime must still move strictly forward.
    const a = await openDatabase({
      driver: betterSqlite3Driver({ path }),
      clock: fixedClock({ stepNs: 0 }),
    })
    const b = await openDatabase({
      driver: betterSqlite3Driver({ path }),
      clock: fixedClock({ stepNs: 0 }),
    })
    const fsA = createFileSystem(a)
    const fsB = createFileSystem(b)
    await fsA.writeFile('/shared', 'v0')
    const seen = new Set<string>()
    let previous = 0n
    for (let i = 0; i < 20; i++) {
      const writer = i % 2 === 0 ? fsA : fsB
      const { version } = await writer.stat('/shared')
      await writer.writeFile('/shared', `v${i + 1}`, { ifMatch: version })
      const next = (await fsA.stat('/shared')).version
      expect(BigInt(next)).toBeGreaterThan(previous)
      expect(seen.has(next)).toBe(false)
      seen.add(next)
      previous = BigInt(next)
    }
    // A writer holding an old version is refused, whichever connection it uses.
    const stale = (await fsA.stat('/shared')).version
    await fsB.writeFile('/shared', 'other writer')
    await expect(
      fsA.writeFile('/shared', 'lost update', { ifMatch: stale }),
    ).rejects.toBeInstanceOf(ConflictError)
    expect(await fsB.readFile('/shared', 'utf8')).toBe('other writer')
    await a.close()
    await b.close()
    await rm(dir, { recursive: true, force: true })
  })
})
