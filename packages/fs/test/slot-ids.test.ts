import { fixedClock, openDatabase, SLOT_SPAN } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { withSlotIds } from '@agentfs/test-kit'
import { expect, test } from 'vitest'
import { createFileSystem } from '../src/index.js'

// A synced database's filesystem: ids from the client's slot, whole-file writes as inode swaps.
async function synced(slot: number) {
  const db = await openDatabase({
    driver: withSlotIds(betterSqlite3Driver({ path: ':memory:' }), slot),
    clock: fixedClock(),
  })
  return { db, fs: createFileSystem(db) }
}

test('new inodes and entries take ids from the slot, in order', async () => {
  const { db, fs } = await synced(7)
  await fs.mkdir('/d')
  await fs.writeFile('/d/a', 'a')
  await fs.link('/d/a', '/d/b')
  const { rows } = await db.execute<{ id: number; ino: number }>({
    sql: 'SELECT id, ino FROM fs_dentry ORDER BY id',
  })
  const base = 7 * SLOT_SPAN
  expect(rows).toEqual([
    { id: base + 1, ino: base + 1 },
    { id: base + 2, ino: base + 2 },
    { id: base + 3, ino: base + 2 },
  ])
  expect((await fs.stat('/d/b')).nlink).toBe(2)
  await db.close()
})

test('a whole-file rewrite puts the bytes in a new inode and drops the old one', async () => {
  const { db, fs } = await synced(3)
  await fs.writeFile('/f', 'x'.repeat(10_000))
  const before = await fs.stat('/f')
  await fs.writeFile('/f', 'new')
  const after = await fs.stat('/f')
  expect(after.ino).not.toBe(before.ino)
  expect(after.mode).toBe(before.mode)
  expect(await fs.readFile('/f', 'utf8')).toBe('new')
  const left = await db.execute<{ n: number }>({
    sql: 'SELECT (SELECT count(*) FROM fs_inode WHERE ino = ?) + (SELECT count(*) FROM fs_data WHERE ino = ?) AS n',
    params: [before.ino, before.ino],
  })
  expect(left.rows[0]!.n).toBe(0)
  // The version token moves forward, so a writer holding the old one gets a conflict.
  expect(BigInt(after.version)).toBeGreaterThan(BigInt(before.version))
  await expect(fs.writeFile('/f', 'stale', { ifMatch: before.version })).rejects.toMatchObject({
    code: 'CONFLICT',
  })
  // Appends and files with several links change in place.
  await fs.appendFile('/f', '+')
  expect((await fs.stat('/f')).ino).toBe(after.ino)
  await fs.link('/f', '/g')
  await fs.writeFile('/f', 'both')
  expect((await fs.stat('/f')).ino).toBe(after.ino)
  expect(await fs.readFile('/g', 'utf8')).toBe('both')
  await db.close()
})
