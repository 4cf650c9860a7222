import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  fsck,
  listOrphans,
  META_ORPHAN,
  ORPHAN_LEASE_MS,
  ORPHAN_RENEW_MS,
  openDatabase,
  type Queryable,
} from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { build } from 'esbuild'
import { describe, expect, test, vi } from 'vitest'
import { createFileSystem } from '../src/index.js'
import { code, DRIVERS, freshFs } from './helpers.js'

/** Inode rows and chunks of inode `ino`. */
async function rowsOf(db: Queryable, ino: number) {
  const inode = await db.execute({ sql: 'SELECT nlink FROM fs_inode WHERE ino = ?', params: [ino] })
  const data = await db.execute({ sql: 'SELECT 1 FROM fs_data WHERE ino = ?', params: [ino] })
  return { inode: inode.rows.length, chunks: data.rows.length }
}

for (const driver of Object.keys(DRIVERS)) {
  describe(`a file unlinked while open (${driver})`, () => {
    test('stays readable and writable through its handle, nlink 0, and goes at the last close', async () => {
      const { fs, db } = await freshFs(driver, { chunkSize: 64 })
      // A synced database frees at once (its replay knows no orphans): the old behaviour.
      const keeps = db.capabilities?.sync === undefined
      await fs.writeFile('/f', 'x'.repeat(200))
      const a = await fs.open('/f', 'r+')
      const b = await fs.open('/f', 'r')
      const ino = (await a.stat()).ino
      await fs.unlink('/f')
      expect(await fs.exists('/f')).toBe(false)
      if (!keeps) {
        expect(await code(a.stat())).toBe('EBADF')
        expect(await rowsOf(db, ino)).toEqual({ inode: 0, chunks: 0 })
        return
      }
      expect((await a.stat()).nlink).toBe(0)
      await a.write(Buffer.from('hello'), 0, 5, 0)
      const out = Buffer.alloc(7)
      await b.read(out, 0, 7, 0)
      expect(out.toString()).toBe('helloxx')
      // The name is free again, for a new file.
      await fs.writeFile('/f', 'new')
      expect(await fs.readFile('/f', 'utf8')).toBe('new')
      expect((await fsck(db)).findings).toEqual([])
      await a.close()
      expect((await rowsOf(db, ino)).inode).toBe(1)
      await b.close()
      expect(await rowsOf(db, ino)).toEqual({ inode: 0, chunks: 0 })
      expect(await listOrphans(db)).toEqual([])
      expect((await fsck(db)).findings).toEqual([])
    })

    test('a rename over an open file keeps the old file for its handle', async () => {
      const { fs, db } = await freshFs(driver)
      if (db.capabilities?.sync !== undefined) return
      await fs.writeFile('/target', 'old')
      await fs.writeFile('/tmp', 'new')
      const reader = await fs.open('/target', 'r')
      await fs.rename('/tmp', '/target')
      expect(await reader.readFile('utf8')).toBe('old')
      expect(await fs.readFile('/target', 'utf8')).toBe('new')
      const ino = (await reader.stat()).ino
      await reader.close()
      expect(await rowsOf(db, ino)).toEqual({ inode: 0, chunks: 0 })
    })

    test('rm -r of a tree keeps its open files, frees the rest at once', async () => {
      const { fs, db } = await freshFs(driver)
      if (db.capabilities?.sync !== undefined) return
      await fs.mkdir('/d/e', { recursive: true })
      await fs.writeFile('/d/e/open', 'kept')
      await fs.writeFile('/d/e/closed', 'gone')
      const closedIno = (await fs.stat('/d/e/closed')).ino
      const handle = await fs.open('/d/e/open', 'r')
      await fs.rm('/d', { recursive: true })
      expect((await rowsOf(db, closedIno)).inode).toBe(0)
      expect(await handle.readFile('utf8')).toBe('kept')
      const ino = (await handle.stat()).ino
      await handle.close()
      expect((await rowsOf(db, ino)).inode).toBe(0)
    })

    test('an unlink that rolls back leaves the file as it was', async () => {
      const { fs, db } = await freshFs(driver)
      if (db.capabilities?.sync !== undefined) return
      await fs.writeFile('/f', 'data')
      const handle = await fs.open('/f', 'r')
      await expect(
        fs.transaction(async (tx) => {
          await tx.unlink('/f')
          throw new Error('changed my mind')
        }),
      ).rejects.toThrow('changed my mind')
      await handle.close()
      expect(await fs.readFile('/f', 'utf8')).toBe('data')
      expect(await listOrphans(db)).toEqual([])
      expect((await fsck(db)).findings).toEqual([])
    })
  })
}

describe('a file unlinked while open by a process that died', () => {
  test('is reported by fsck, and freed by the next open of the database', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfs-orphan-'))
    try {
      const path = join(dir, 'a.db')
      // A process that opens a file, unlinks it and is killed with the handle open.
      const script = `
        const { openDatabase } = await import('@agentfs/core')
        const { betterSqlite3Driver } = await import('@agentfs/driver-better-sqlite3')
        const { createFileSystem } = await import('@agentfs/fs')
        const db = await openDatabase({ driver: betterSqlite3Driver({ path: ${JSON.stringify(path)} }) })
        const fs = createFileSystem(db)
        await fs.writeFile('/tmpfile', 'x'.repeat(10000))
        const handle = await fs.open('/tmpfile', 'r+')
        await fs.unlink('/tmpfile')
        process.stdout.write(String((await handle.stat()).ino))
        process.kill(process.pid, 'SIGKILL')
      `
      // Bundled from the workspace's TypeScript source, as the tests run (no prior build).
      // Beside the package, so the child finds better-sqlite3 in its node_modules.
      const bundled = join(import.meta.dirname, '..', '.tmp', `orphan-child-${process.pid}.mjs`)
      await build({
        stdin: { contents: script, resolveDir: import.meta.dirname, loader: 'ts' },
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        outfile: bundled,
        conditions: ['@agentfs/source'],
        external: ['better-sqlite3'],
        logLevel: 'silent',
      })
      const child = spawnSync(process.execPath, [bundled], {
        cwd: join(import.meta.dirname, '..'),
        encoding: 'utf8',
        timeout: 30_000,
      })
      rmSync(bundled, { force: true })
      expect(child.signal, child.stderr).toBe('SIGKILL')
      const ino = Number(child.stdout)
      expect(ino).toBeGreaterThan(1)
      // What fsck sees before anything frees it (read the file directly, as fsck's CLI can).
      const Database = (await import('better-sqlite3')).default
      const raw = new Database(path)
      const holder = raw
        .prepare('SELECT value FROM agentfs_meta WHERE key = ?')
        .get(`${META_ORPHAN}${ino}`) as { value: string }
      expect(holder.value).toMatch(/ \d+$/)
      raw.close()
      const db = await openDatabase({ driver: betterSqlite3Driver({ path }) })
      try {
        expect(await rowsOf(db, ino)).toEqual({ inode: 0, chunks: 0 })
        expect(await listOrphans(db)).toEqual([])
        expect((await fsck(db)).findings).toEqual([])
        expect(await createFileSystem(db).readdir('/')).toEqual([])
      } finally {
        await db.close()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('fsck checks the records in a fixed number of statements, however many a file holds', async () => {
    const { fs, db } = await freshFs('better-sqlite3')
    await fs.writeFile('/f', 'data')
    const linked = (await fs.stat('/f')).ino
    /** Statements fsck runs on the database. */
    const statements = async () => {
      let count = 0
      const counting = new Proxy(db, {
        get(target, key) {
          if (key === 'execute')
            return (statement: Parameters<Queryable['execute']>[0]) => {
              count++
              return target.execute(statement)
            }
          const value = Reflect.get(target, key)
          return typeof value === 'function' ? value.bind(target) : value
        },
      })
      const report = await fsck(counting)
      return { count, findings: report.findings.length }
    }
    const record = (n: number, ino: number) =>
      db.execute({
        sql: 'INSERT INTO agentfs_meta (key, value) VALUES (?, ?)',
        params: [`${META_ORPHAN}${ino}`, `${hostname()} ${process.pid} ${n}`],
      })
    // Records a hostile or damaged file may hold: of an inode with a link, and of missing ones.
    await record(0, linked)
    const few = await statements()
    for (let n = 1; n <= 300; n++) await record(n, 1000 + n)
    const many = await statements()
    expect(few.findings).toBe(1)
    expect(many.findings).toBe(301)
    expect(many.count).toBe(few.count)
  })

  test('held on another machine: gone once its last renewal is older than the lease', async () => {
    const { fs, db } = await freshFs('better-sqlite3')
    const inos: number[] = []
    const handles = []
    for (const name of ['stale', 'fresh', 'unstamped']) {
      await fs.writeFile(`/${name}`, name)
      const handle = await fs.open(`/${name}`, 'r')
      handles.push(handle)
      inos.push((await handle.stat()).ino)
      await fs.unlink(`/${name}`)
    }
    const now = Date.now()
    const holders = [
      `other-machine 4242 ${now - ORPHAN_LEASE_MS - 1000}`,
      `other-machine 4242 ${now - ORPHAN_LEASE_MS / 2}`,
      // As an earlier version wrote it: no renewal time, so never taken for abandoned.
      'other-machine 4242',
    ]
    for (const [i, holder] of holders.entries())
      await db.execute({
        sql: 'UPDATE agentfs_meta SET value = ? WHERE key = ?',
        params: [holder, `${META_ORPHAN}${inos[i]}`],
      })
    const report = await fsck(db)
    expect(report.findings.map((f) => [f.rule, f.ino])).toEqual([['unlinked-open', inos[0]]])
    expect((await fsck(db, { repair: true })).ok).toBe(true)
    expect(await rowsOf(db, inos[0]!)).toEqual({ inode: 0, chunks: 0 })
    expect((await listOrphans(db)).map((o) => o.ino)).toEqual(inos.slice(1))
    for (const handle of handles) await handle.close()
  })

  test('a process renews the records of the files it keeps, and stops when they are closed', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] })
    try {
      const { fs, db } = await freshFs('better-sqlite3')
      await fs.writeFile('/f', 'data')
      const handle = await fs.open('/f', 'r')
      const ino = (await handle.stat()).ino
      await fs.unlink('/f')
      const renewed = async () => Number((await listOrphans(db))[0]!.holder.split(' ')[2])
      const first = await renewed()
      expect(first).toBe(Date.now())
      await vi.advanceTimersByTimeAsync(ORPHAN_RENEW_MS)
      await new Promise((resolve) => setImmediate(resolve))
      expect(await renewed()).toBe(first + ORPHAN_RENEW_MS)
      expect(vi.getTimerCount()).toBe(1)
      await handle.close()
      expect(await rowsOf(db, ino)).toEqual({ inode: 0, chunks: 0 })
      expect(vi.getTimerCount()).toBe(0)
    } finally {
      vi.useRealTimers()
    }
  })

  test('fsck --repair frees it when no open did', async () => {
    const { fs, db } = await freshFs('better-sqlite3')
    await fs.writeFile('/f', 'data')
    const handle = await fs.open('/f', 'r')
    const ino = (await handle.stat()).ino
    await fs.unlink('/f')
    // As a process that is gone would leave it: a holder that cannot be running.
    await db.execute({
      sql: 'UPDATE agentfs_meta SET value = ? WHERE key = ?',
      params: [`${hostname()} 2147483647`, `${META_ORPHAN}${ino}`],
    })
    const report = await fsck(db)
    expect(report.findings.map((f) => f.rule)).toEqual(['unlinked-open'])
    expect(report.findings[0]?.repairable).toBe(true)
    const repaired = await fsck(db, { repair: true })
    expect(repaired.ok).toBe(true)
    expect(await rowsOf(db, ino)).toEqual({ inode: 0, chunks: 0 })
    await handle.close()
  })
})
