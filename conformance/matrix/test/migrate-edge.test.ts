import { canonicalDump, fixtureScript, readFileBySql } from '@agentfs/conformance'
import {
  fixedClock,
  type GuardedDriver,
  guardDriver,
  migrate,
  openDatabase,
  planMigration,
  SCHEMA_VERSION,
} from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { afterEach, describe, expect, test } from 'vitest'

let open: GuardedDriver[] = []
const memory = () => {
  const db = guardDriver(betterSqlite3Driver({ path: ':memory:' }))
  open.push(db)
  return db
}
afterEach(async () => {
  for (const db of open) await db.close()
  open = []
})

const V00_DATA_ONLY = `
CREATE TABLE fs_inode (ino INTEGER PRIMARY KEY AUTOINCREMENT, mode INTEGER NOT NULL, uid INTEGER NOT NULL DEFAULT 0,
  gid INTEGER NOT NULL DEFAULT 0, size INTEGER NOT NULL DEFAULT 0, atime INTEGER NOT NULL, mtime INTEGER NOT NULL, ctime INTEGER NOT NULL);
CREATE TABLE fs_dentry (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, parent_ino INTEGER NOT NULL, ino INTEGER NOT NULL,
  FOREIGN KEY (ino) REFERENCES fs_inode(ino) ON DELETE CASCADE, FOREIGN KEY (parent_ino) REFERENCES fs_inode(ino) ON DELETE CASCADE,
  UNIQUE(parent_ino, name));
CREATE TABLE fs_data (id INTEGER PRIMARY KEY AUTOINCREMENT, ino INTEGER NOT NULL, offset INTEGER NOT NULL, size INTEGER NOT NULL,
  data BLOB NOT NULL, FOREIGN KEY (ino) REFERENCES fs_inode(ino) ON DELETE CASCADE);
INSERT INTO fs_inode (ino, mode, size, atime, mtime, ctime) VALUES (1, 16877, 0, 1, 1, 1), (2, 33188, 10, 1, 1, 1);
INSERT INTO fs_dentry (name, parent_ino, ino) VALUES ('f', 1, 2);
`

describe('migration edge cases', () => {
  test('v0.0 chunks with gaps and overlaps: gaps read as zeros, later rows win', async () => {
    const db = memory()
    await db.executeScript(`${V00_DATA_ONLY}
      INSERT INTO fs_data (ino, offset, size, data) VALUES (2, 0, 3, x'414243');
      INSERT INTO fs_data (ino, offset, size, data) VALUES (2, 6, 2, x'5859');
      INSERT INTO fs_data (ino, offset, size, data) VALUES (2, 1, 1, x'7a');`)
    await migrate(db, { clock: fixedClock(), chunkSize: 64 })
    const bytes = await readFileBySql(db, '/f')
    expect([...bytes!]).toEqual([0x41, 0x7a, 0x43, 0, 0, 0, 0x58, 0x59])
    const size = await db.execute<{ size: number }>({
      sql: 'SELECT size FROM fs_inode WHERE ino = 2',
    })
    expect(size.rows[0]!.size).toBe(8)
  })

  test('v0.0 re-cut honours the chunk size chosen at migration', async () => {
    const db = memory()
    await db.executeScript(fixtureScript('v0.0'))
    await migrate(db, { clock: fixedClock(), chunkSize: 1024 })
    const chunks = await db.execute<{ n: number; len: number }>({
      sql: 'SELECT COUNT(*) AS n, MAX(length(data)) AS len FROM fs_data WHERE ino = 4',
    })
    expect(chunks.rows[0]).toEqual({ n: 10, len: 1024 })
    const config = await db.execute<{ value: string }>({
      sql: "SELECT value FROM fs_config WHERE key = 'chunk_size'",
    })
    expect(config.rows[0]!.value).toBe('1024')
  })

  test('foreign keys on: rebuilding v0.0 tables cascades nothing, and the pragma is restored', async () => {
    const db = memory()
    await db.execute({ sql: 'PRAGMA foreign_keys = ON' })
    await db.executeScript(fixtureScript('v0.0'))
    await migrate(db, { clock: fixedClock() })
    const counts = await db.execute<{ d: number; c: number }>({
      sql: 'SELECT (SELECT COUNT(*) FROM fs_dentry) AS d, (SELECT COUNT(*) FROM fs_data) AS c',
    })
    expect(counts.rows[0]).toEqual({ d: 6, c: 4 })
    const fk = await db.execute<{ foreign_keys: number }>({ sql: 'PRAGMA foreign_keys' })
    expect(fk.rows[0]!.foreign_keys).toBe(1)
  })

  test('a whiteout table without parent_path gets it derived', async () => {
    const db = memory()
    await db.executeScript(`${fixtureScript('v0.4')}
      DROP TABLE fs_whiteout;
      CREATE TABLE fs_whiteout (path TEXT PRIMARY KEY, created_at INTEGER NOT NULL);
      INSERT INTO fs_whiteout VALUES ('/a', 1), ('/a/b/c', 2), ('/x/y', 3);`)
    await migrate(db, { clock: fixedClock() })
    const rows = await db.execute({
      sql: 'SELECT path, parent_path FROM fs_whiteout ORDER BY path',
    })
    expect(rows.rows).toEqual([
      { path: '/a', parent_path: '/' },
      { path: '/a/b/c', parent_path: '/a/b' },
      { path: '/x/y', parent_path: '/x' },
    ])
  })

  test('a copy without user_version (rows synced, file header not) opens as migrated, from agentfs_meta', async () => {
    const db = memory()
    const first = await openDatabase({ driver: db, clock: fixedClock() })
    await first.execute({ sql: "INSERT INTO kv_store (key, value) VALUES ('k', '1')" })
    // What a row-shipping sync leaves on another machine: every table and row, user_version 0.
    await db.execute({ sql: 'PRAGMA user_version = 0' })
    const plan = await planMigration(db)
    expect(plan.steps).toEqual([])
    const reopened = await openDatabase({ driver: db, clock: fixedClock() })
    expect(reopened.migration.fromVersion).toBe(SCHEMA_VERSION)
    expect((await db.execute({ sql: 'SELECT value FROM agentfs_meta' })).rows).toEqual([
      { value: String(SCHEMA_VERSION) },
    ])
  })

  test('a schema version in agentfs_meta that is not a number is refused before any change', async () => {
    const db = memory()
    await openDatabase({ driver: db, clock: fixedClock() })
    await db.execute({
      sql: "UPDATE agentfs_meta SET value = '4; DROP TABLE x' WHERE key = 'schema_version'",
    })
    const before = await canonicalDump(db)
    const error = await openDatabase({ driver: db, clock: fixedClock() }).catch((e: unknown) => e)
    expect((error as { code?: string }).code).toBe('CORRUPT')
    expect(String((error as Error).message)).toMatch(/^agentfs_meta\.schema_version holds /)
    expect(await canonicalDump(db)).toBe(before)
  })

  test('planMigration is read-only (dry run)', async () => {
    const db = memory()
    await db.executeScript(fixtureScript('v0.1'))
    const before = await canonicalDump(db)
    const plan = await planMigration(db)
    expect(plan.from).toBe('v0.1')
    expect(plan.steps.map((s) => s.kind)).toContain('rebuild-table')
    expect(await canonicalDump(db)).toBe(before)
  })

  test('migrate: false refuses an old layout instead of changing it', async () => {
    const db = memory()
    await db.executeScript(fixtureScript('v0.2'))
    await expect(openDatabase({ driver: db, migrate: false })).rejects.toMatchObject({
      code: 'UNSUPPORTED_LAYOUT',
    })
  })

  test('two processes opening one new file at once both succeed (migration under the write lock)', async () => {
    const { mkdtemp } = await import('node:fs/promises')
    const { tmpdir } = await import('node:os')
    const dir = await mkdtemp(`${tmpdir()}/agentfs-race-`)
    const path = `${dir}/db.sqlite`
    const opened = await Promise.all(
      Array.from({ length: 4 }, () => openDatabase({ driver: betterSqlite3Driver({ path }) })),
    )
    for (const db of opened) expect(db.chunkSize).toBe(4096)
    const roots = await opened[0]!.execute<{ n: number }>({
      sql: 'SELECT COUNT(*) AS n FROM fs_inode',
    })
    expect(roots.rows[0]!.n).toBe(1)
    for (const db of opened) await db.close()
  })
})
