import { fsck, openDatabase } from '@agentfs/core'
import { tursoDriver } from '@agentfs/driver-turso'
import { expect, test } from 'vitest'
import { reconcile } from '../src/index.js'
import { SYNC_TABLES } from '../src/reconcile.js'

// The repairs on hand-made states, without a server.
async function database(script: string) {
  const db = await openDatabase({ driver: tursoDriver({ path: ':memory:' }) })
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
