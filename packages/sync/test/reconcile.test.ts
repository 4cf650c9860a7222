import { type Driver, fsck, openDatabase, SLOT_SPAN, slotIds } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { tursoDriver } from '@agentfs/driver-turso'
import { hostilePeerRows, withSlotIds } from '@agentfs/test-kit'
import { expect, test } from 'vitest'
import { reconcile } from '../src/index.js'
import { SYNC_TABLES } from '../src/reconcile.js'

// The repairs on hand-made states, without a server.
async function database(script: string, slot?: number) {
  const driver = tursoDriver({ path: ':memory:' })
  const db = await openDatabase({
    driver: slot === undefined ? driver : withSlotIds(driver, slot),
  })
  await db.execute({ sql: SYNC_TABLES })
  await db.transaction(async (tx) => {
    for (const sql of script
      .split(';')
      .map((s) => s.trim())
      .filter(Boolean))
      await tx.execute({ sql })
  })
  return db
}
const DIR = `16877, 1, 0, 0, 0, 0, 0, 0`

test('a cycle is broken at its own entry with the smallest id, not at a smaller one below it', async () => {
  // x (entry 10) and y (entry 11) are inside each other; sub (entry 5) is inside x.
  const db = await database(`
    INSERT INTO fs_inode (ino, mode, nlink, uid, gid, size, atime, mtime, ctime) VALUES (20, ${DIR}), (21, ${DIR}), (22, ${DIR});
    INSERT INTO fs_dentry (id, name, parent_ino, ino) VALUES (10, 'x', 21, 20), (11, 'y', 20, 21), (5, 'sub', 20, 22)`)
  const result = await reconcile(db, 9, { swaps: [], kv: [] })
  expect(result.conflicts.map((c) => [c.kind, c.path])).toEqual([['cycle', '/x (conflict 0-10)']])
  const { rows } = await db.execute({
    sql: 'SELECT id, name, parent_ino FROM fs_dentry ORDER BY id',
  })
  expect(rows).toEqual([
    { id: 5, name: 'sub', parent_ino: 20 },
    { id: 10, name: 'x (conflict 0-10)', parent_ino: 1 },
    { id: 11, name: 'y', parent_ino: 20 },
  ])
  expect((await fsck(db)).findings).toEqual([])
  await db.close()
})

test('link counts are recomputed from the entries; a clean database is left unchanged', async () => {
  const db = await database(`
    INSERT INTO fs_inode (ino, mode, nlink, uid, gid, size, atime, mtime, ctime) VALUES (30, 33188, 1, 0, 0, 0, 0, 0, 0);
    INSERT INTO fs_dentry (id, name, parent_ino, ino) VALUES (40, 'a', 1, 30), (41, 'b', 1, 30), (42, 'c', 1, 30)`)
  expect((await reconcile(db, 9, { swaps: [], kv: [] })).changed).toBe(true)
  expect((await db.execute({ sql: 'SELECT nlink FROM fs_inode WHERE ino = 30' })).rows).toEqual([
    { nlink: 3 },
  ])
  expect(await reconcile(db, 9, { swaps: [], kv: [] })).toEqual({ conflicts: [], changed: false })
  await db.close()
})

// The hostile peer's rows of the test kit, on every engine a synced database could run on.
const ENGINES: Record<string, () => Driver> = {
  turso: () => tursoDriver({ path: ':memory:' }),
  'better-sqlite3': () => betterSqlite3Driver({ path: ':memory:' }),
  libsql: () => libsqlDriver({ url: ':memory:' }),
}

test.each(Object.keys(ENGINES))(
  'rows a hostile peer sends are refused after the pull (%s): ids of this slot, bad names, loops, a file root',
  async (engine) => {
    const slot = 9
    const peer = 2
    const low = slot * SLOT_SPAN
    const db = await openDatabase({ driver: ENGINES[engine]!() })
    await db.execute({ sql: SYNC_TABLES })
    await db.execute({
      sql: `INSERT INTO fs_inode (ino, mode, nlink, uid, gid, size, atime, mtime, ctime) VALUES (${low + 1}, ${DIR}), (${low + 2}, ${DIR})`,
    })
    await db.execute({
      sql: `INSERT INTO fs_dentry (id, name, parent_ino, ino) VALUES (${low + 1}, 'work', 1, ${low + 1}), (${low + 2}, 'sub', ${low + 1}, ${low + 2})`,
    })
    // The client's allocator knows what it handed out before the pull.
    const allocator = slotIds(slot)
    await allocator.prime(db)
    // The pull brings the peer's rows.
    await db.transaction(async (tx) => {
      for (const sql of hostilePeerRows(slot, peer, 'work')) await tx.execute({ sql })
    })
    const result = await reconcile(db, slot, { swaps: [], kv: [] }, Date.now, allocator)
    expect(result.changed).toBe(true)
    // (The peer's entry at the slot's last id went with its inode.)
    expect(result.conflicts.filter((c) => c.kind === 'refused').map((c) => c.path)).toEqual([
      'fs_inode',
      '/',
      `refused-name (conflict ${peer}-900)`,
      `inode ${low + 1}`,
    ])
    const names = await db.execute<{ name: string }>({
      sql: 'SELECT name FROM fs_dentry ORDER BY id',
    })
    expect(names.rows.map((r) => r.name)).toEqual([
      `refused-name (conflict ${peer}-900)`,
      'work',
      'sub',
    ])
    const root = await db.execute<{ mode: number }>({
      sql: 'SELECT mode FROM fs_inode WHERE ino = 1',
    })
    expect(root.rows[0]!.mode & 0o170000).toBe(0o040000)
    // The client can still create: its next id is free, and its slot is not exhausted.
    expect(await allocator.nextId('fs_inode', db)).toBe(low + 3)
    expect((await fsck(db)).findings).toEqual([])
    await db.close()
  },
)

test('a lost rewrite merges against its ancestor; a peer chunk that is not a BLOB leaves the copy instead of failing the pull', async () => {
  const FILE = `33188, 1, 0, 0, 6, 0, 0, 0`
  const mine = 9 * SLOT_SPAN + 31
  const setup = (theirs: string) =>
    database(
      `
    INSERT INTO fs_inode (ino, mode, nlink, uid, gid, size, atime, mtime, ctime) VALUES (30, ${FILE}), (${mine}, ${FILE});
    INSERT INTO fs_dentry (id, name, parent_ino, ino) VALUES (10, 'f.txt', 1, 30);
    INSERT INTO fs_data (ino, chunk_index, data) VALUES (30, 0, ${theirs}), (${mine}, 0, X'610A620A430A')`,
      9,
    )
  // The last synced version: a, b, c; the winner changed line 1, this client line 3.
  const ancestor = {
    size: 6,
    chunks: new Map([[0, Buffer.from('a\nb\nc\n')]]),
    bytes: 6,
    over: false,
  }
  const pushed = (ino: number) => ({
    swaps: [{ ino, parent: 1, name: 'f.txt', entry: 10 }],
    kv: [],
    ancestors: new Map([[ino, ancestor]]),
  })
  const good = await setup(`X'410A620A630A'`)
  const merged = await reconcile(good, 9, pushed(mine))
  expect(merged.conflicts.map((c) => [c.kind, c.path, c.detail])).toEqual([
    ['merged', '/f.txt', expect.any(String)],
  ])
  const { rows } = await good.execute<{ ino: number }>({
    sql: 'SELECT ino FROM fs_dentry WHERE id = 10',
  })
  expect(rows[0]!.ino).toBe(mine)
  const { rows: data } = await good.execute<{ data: Uint8Array }>({
    sql: 'SELECT data FROM fs_data WHERE ino = ?',
    params: [mine],
  })
  expect(Buffer.from(data[0]!.data).toString()).toBe('A\nb\nC\n')
  expect((await fsck(good)).findings).toEqual([])

  const hostile = await setup(`'A\nb\nc\n'`)
  const kept = await reconcile(hostile, 9, pushed(mine))
  expect(kept.conflicts.map((c) => c.kind)).toEqual(['write'])
  expect(kept.conflicts[0]!.detail).toMatch(/not merged: a version is damaged$/)
})
