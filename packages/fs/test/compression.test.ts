import { randomBytes } from 'node:crypto'
import {
  type AgentDatabase,
  type Driver,
  fsck,
  hashChunks,
  isAgentFsError,
  isFsError,
  openDatabase,
} from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { tursoDriver } from '@agentfs/driver-turso'
import { afterEach, describe, expect, test } from 'vitest'
import { createFileSystem } from '../src/index.js'

const open: AgentDatabase[] = []
afterEach(async () => {
  for (const db of open.splice(0)) await db.close()
})

async function compressed(driver: Driver = betterSqlite3Driver({ path: ':memory:' })) {
  const db = await openDatabase({ driver, compression: 'zstd' })
  open.push(db)
  return { db, fs: createFileSystem(db) }
}

/** The stored chunks of `path` as they are in `fs_data`. */
async function stored(db: AgentDatabase, path: string): Promise<Uint8Array[]> {
  const fs = createFileSystem(db)
  const { ino } = await fs.stat(path)
  const { rows } = await db.execute<{ data: Uint8Array }>({
    sql: 'SELECT data FROM fs_data WHERE ino = ? ORDER BY chunk_index',
    params: [ino],
  })
  return rows.map((r) => r.data)
}

const isFrame = (b: Uint8Array) =>
  Buffer.from(b.subarray(0, 4)).equals(Buffer.from('28b52ffd', 'hex'))
const TEXT = Buffer.from(
  Array.from(
    { length: 3000 },
    (_, i) => `line ${i}: the agent wrote a note about task ${i % 17}\n`,
  ).join(''),
)

// "line of agent notes\n" × 200 as Node.js 22's zstd writes it (see core's codec test).
const NOTES = Buffer.from('line of agent notes\n'.repeat(200))
const NOTES_FRAME = Buffer.from(
  '28b52ffd60a00ee50000a06c696e65206f66206167656e74206e6f7465730a0100127ffe6402',
  'hex',
)

describe('a compressed database made by hand', () => {
  test('stored frames read as their content; new writes read back; fsck is clean', async () => {
    const db = await openDatabase({ driver: betterSqlite3Driver({ path: ':memory:' }) })
    open.push(db)
    const fs = createFileSystem(db)
    await fs.writeFile('/notes.md', NOTES)
    const { ino } = await fs.stat('/notes.md')
    // What a compressed database holds: the marker and a frame in place of the chunk.
    await db.execute({ sql: "INSERT INTO fs_config (key, value) VALUES ('compression', 'zstd')" })
    await db.execute({ sql: 'DELETE FROM fs_data WHERE ino = ?', params: [ino] })
    await db.execute({
      sql: 'INSERT INTO fs_data (ino, chunk_index, data) VALUES (?, 0, ?)',
      params: [ino, NOTES_FRAME],
    })
    // A plain reading of the same rows would return the frame.
    const reopened = await openDatabase({ driver: db.driver.driver, migrate: false })
    expect(reopened.chunks.codec?.name).toBe('zstd')
    const cfs = createFileSystem(reopened)
    expect(Buffer.from(await cfs.readFile('/notes.md'))).toEqual(NOTES)
    expect((await cfs.grep('agent notes', { path: '/' })).length).toBe(200)
    await cfs.appendFile('/notes.md', 'one more\n')
    expect(Buffer.from(await cfs.readFile('/notes.md'))).toEqual(
      Buffer.concat([NOTES, Buffer.from('one more\n')]),
    )
    await cfs.truncate('/notes.md', 10)
    expect(await cfs.readFile('/notes.md', 'utf8')).toBe('line of ag')
    expect((await fsck(reopened)).findings).toEqual([])
  })

  test('an unknown compression is refused at open, with what to do', async () => {
    const db = await openDatabase({ driver: betterSqlite3Driver({ path: ':memory:' }) })
    open.push(db)
    await db.execute({ sql: "INSERT INTO fs_config (key, value) VALUES ('compression', 'lz4')" })
    await expect(openDatabase({ driver: db.driver.driver, migrate: false })).rejects.toMatchObject({
      code: 'UNSUPPORTED_LAYOUT',
      message: expect.stringMatching(/compressed as "lz4".*upgrade AgentFS/),
    })
  })
})

describe('compressed databases (zstd)', () => {
  const engines: Record<string, () => Driver> = {
    'better-sqlite3': () => betterSqlite3Driver({ path: ':memory:' }),
    libsql: () => libsqlDriver({ url: ':memory:' }),
    turso: () => tursoDriver({ path: ':memory:' }),
  }

  for (const [name, driver] of Object.entries(engines))
    test(`${name}: text is stored smaller, random data as it is, and both read back`, async () => {
      const { db, fs } = await compressed(driver())
      const random = randomBytes(64 * 1024 + 123)
      await fs.writeFile('/text.md', TEXT)
      await fs.writeFile('/random.bin', random)
      expect(Buffer.from(await fs.readFile('/text.md'))).toEqual(TEXT)
      expect(Buffer.from(await fs.readFile('/random.bin'))).toEqual(random)
      const text = await stored(db, '/text.md')
      const bytes = text.reduce((n, c) => n + c.byteLength, 0)
      expect(text.every(isFrame)).toBe(true)
      expect(bytes).toBeLessThan(TEXT.byteLength / 3)
      // Incompressible chunks are the spec's bytes exactly.
      const raw = await stored(db, '/random.bin')
      expect(Buffer.concat(raw)).toEqual(random)
      expect((await fsck(db)).findings).toEqual([])
    })

  test('random reads, partial writes and truncates agree with a plain buffer', async () => {
    const { db, fs } = await compressed(
      betterSqlite3Driver({ path: ':memory:', busyTimeoutMs: 100 }),
    )
    let model = Buffer.alloc(0)
    const handle = await fs.open('/f', 'w+')
    let seed = 7
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      return seed % n
    }
    for (let step = 0; step < 300; step++) {
      const op = rand(10)
      if (op < 5) {
        const at = rand(model.length + 9000)
        // Text (compressible), random bytes or zeros, sometimes beginning like a frame.
        const kind = rand(4)
        const length = 1 + rand(9000)
        const data =
          kind === 0
            ? Buffer.from('agent '.repeat(length)).subarray(0, length)
            : kind === 1
              ? randomBytes(length)
              : kind === 2
                ? Buffer.alloc(length)
                : Buffer.concat([Buffer.from('28b52ffd', 'hex'), randomBytes(length)])
        await handle.write(data, 0, data.length, at)
        const end = Math.max(model.length, at + data.length)
        const next = Buffer.alloc(end)
        model.copy(next)
        data.copy(next, at)
        model = next
      } else if (op < 7) {
        const length = rand(model.length + 5000)
        await handle.truncate(length)
        const next = Buffer.alloc(length)
        model.copy(next, 0, 0, Math.min(length, model.length))
        model = next
      } else {
        const at = rand(model.length + 100)
        const length = rand(10000)
        const out = Buffer.alloc(length)
        const { bytesRead } = await handle.read(out, 0, length, at)
        expect(out.subarray(0, bytesRead)).toEqual(model.subarray(at, at + length))
      }
    }
    await handle.close()
    expect(Buffer.from(await fs.readFile('/f'))).toEqual(model)
    expect((await fsck(db)).findings).toEqual([])
  })

  test('grep, search, copies and hashes see the content, not the frames', async () => {
    const { db, fs } = await compressed()
    await fs.writeFile('/a.md', TEXT)
    await fs.copyFile('/a.md', '/b.md')
    expect(Buffer.from(await fs.readFile('/b.md'))).toEqual(TEXT)
    expect((await fs.grep('task 16', { path: '/' })).length).toBeGreaterThan(100)
    expect((await fs.search('agent note')).hits.map((h) => h.path).sort()).toEqual([
      '/a.md',
      '/b.md',
    ])
    // Snapshot chunk hashes are of the content, whatever the storage.
    const plain = await openDatabase({ driver: betterSqlite3Driver({ path: ':memory:' }) })
    open.push(plain)
    const pfs = createFileSystem(plain)
    await pfs.writeFile('/a.md', TEXT)
    const hashes = async (d: AgentDatabase, f: ReturnType<typeof createFileSystem>) => {
      const { ino, size } = await f.stat('/a.md')
      return Buffer.from(await hashChunks(d, ino, size, d.chunks)).toString('hex')
    }
    expect(await hashes(db, fs)).toBe(await hashes(plain, pfs))
    expect((await fsck(db)).findings).toEqual([])
  })

  test('asking to compress a database that exists without it is refused before any migration', async () => {
    // A database of the spec's tables only, as another implementation writes it.
    const driver = betterSqlite3Driver({ path: ':memory:' })
    for (const sql of [
      'CREATE TABLE fs_config (key TEXT PRIMARY KEY, value TEXT NOT NULL)',
      "INSERT INTO fs_config VALUES ('chunk_size', '4096')",
      'CREATE TABLE fs_inode (ino INTEGER PRIMARY KEY AUTOINCREMENT, mode INTEGER NOT NULL, nlink INTEGER NOT NULL DEFAULT 0, uid INTEGER NOT NULL DEFAULT 0, gid INTEGER NOT NULL DEFAULT 0, size INTEGER NOT NULL DEFAULT 0, atime INTEGER NOT NULL, mtime INTEGER NOT NULL, ctime INTEGER NOT NULL, rdev INTEGER NOT NULL DEFAULT 0, atime_nsec INTEGER NOT NULL DEFAULT 0, mtime_nsec INTEGER NOT NULL DEFAULT 0, ctime_nsec INTEGER NOT NULL DEFAULT 0)',
      'INSERT INTO fs_inode (ino, mode, nlink, atime, mtime, ctime) VALUES (1, 16877, 1, 0, 0, 0)',
      'CREATE TABLE fs_dentry (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, parent_ino INTEGER NOT NULL, ino INTEGER NOT NULL, UNIQUE(parent_ino, name))',
      'CREATE TABLE fs_data (ino INTEGER NOT NULL, chunk_index INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (ino, chunk_index))',
      'CREATE TABLE fs_symlink (ino INTEGER PRIMARY KEY, target TEXT NOT NULL)',
    ])
      await driver.execute({ sql })
    const tables = async () =>
      (
        await driver.execute<{ name: string }>({
          sql: 'SELECT name FROM sqlite_schema ORDER BY name',
        })
      ).rows
    const before = await tables()
    await expect(openDatabase({ driver, compression: 'zstd' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/created without compression/),
    })
    expect(await tables()).toEqual(before)
    await driver.close()
  })

  test('compression is fixed at creation; the database says it is compressed', async () => {
    const plain = await openDatabase({ driver: betterSqlite3Driver({ path: ':memory:' }) })
    open.push(plain)
    await expect(
      openDatabase({ driver: plain.driver.driver, compression: 'zstd' }),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(
        /created without compression; compression is chosen at creation/,
      ),
    })
    const { db } = await compressed()
    const again = await openDatabase({ driver: db.driver.driver, compression: 'zstd' })
    expect(again.chunks.codec?.name).toBe('zstd')
    const { rows } = await db.execute<{ value: string }>({
      sql: "SELECT value FROM fs_config WHERE key = 'compression'",
    })
    expect(rows).toEqual([{ value: 'zstd' }])
    // The reference SDK's first write on open (its schema_version row) is refused.
    await expect(
      db.execute({
        sql: "INSERT OR REPLACE INTO fs_config (key, value) VALUES ('schema_version', '0.4')",
      }),
    ).rejects.toThrow(/stores file content compressed/)
    await expect(
      openDatabase({ driver: db.driver.driver, compression: 'lz4' as 'zstd' }),
    ).rejects.toSatisfy((e) => isAgentFsError(e, 'INVALID_ARGUMENT'))
  })

  test('fsck finds damaged frames and refits frames of the wrong length', async () => {
    const { db, fs } = await compressed()
    await fs.writeFile('/a.md', TEXT.subarray(0, 3 * 4096))
    await fs.writeFile('/b.md', TEXT.subarray(0, 3 * 4096))
    const a = (await fs.stat('/a.md')).ino
    const b = (await fs.stat('/b.md')).ino
    // a: chunk 1 cut short (a damaged frame); b: chunk 0 replaced by a frame of 100 bytes.
    const [chunk] = (
      await db.execute<{ data: Uint8Array }>({
        sql: 'SELECT data FROM fs_data WHERE ino = ? AND chunk_index = 1',
        params: [a],
      })
    ).rows
    await db.execute({
      sql: 'UPDATE fs_data SET data = ? WHERE ino = ? AND chunk_index = 1',
      params: [chunk!.data.subarray(0, chunk!.data.byteLength - 3), a],
    })
    const hundred = await compressed()
    await hundred.fs.writeFile('/x', 'a'.repeat(100))
    const [x] = await stored(hundred.db, '/x')
    expect(isFrame(x!)).toBe(true)
    await db.execute({
      sql: 'UPDATE fs_data SET data = ? WHERE ino = ? AND chunk_index = 0',
      params: [x!, b],
    })
    await expect(fs.readFile('/a.md')).rejects.toSatisfy((e) => isFsError(e, 'EIO'))
    const found = (await fsck(db)).findings.map((i) => `${i.rule} ${i.ino}`)
    expect(found).toEqual([`chunk-frame ${a}`, `chunk-frame-size ${b}`])
    const repaired = await fsck(db, { repair: true })
    expect(repaired.repaired.map((i) => i.rule)).toEqual(['chunk-frame-size'])
    expect((await fsck(db)).findings.map((i) => i.rule)).toEqual(['chunk-frame'])
    // Chunk 0 of b now reads as the 100 bytes it held, zero-padded to a whole chunk.
    const bytes = Buffer.from(await fs.readFile('/b.md'))
    expect(bytes.subarray(0, 100).toString()).toBe('a'.repeat(100))
    expect(bytes.subarray(100, 4096).every((v) => v === 0)).toBe(true)
    expect(bytes.subarray(4096)).toEqual(TEXT.subarray(4096, 3 * 4096))
  })
})
