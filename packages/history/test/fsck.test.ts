import { type AgentDatabase, fsck, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { createFileSystem } from '@agentfs/fs'
import { afterEach, expect, test } from 'vitest'
import { History } from '../src/index.js'

const open: AgentDatabase[] = []
afterEach(async () => {
  for (const db of open.splice(0)) await db.close()
})

async function withHistory() {
  const db = await openDatabase({ driver: betterSqlite3Driver({ path: ':memory:' }) })
  open.push(db)
  const fs = createFileSystem(db, { feed: { versions: true } })
  const history = new History(db, { clock: db.clock, chunks: db.chunks })
  for (let i = 0; i < 4; i++) await fs.writeFile(`/f${i}`, `content ${i}`.repeat(500))
  await history.snapshot('a')
  await fs.writeFile('/f0', 'changed')
  await history.snapshot('b')
  return { db, fs, history }
}

const rules = async (db: AgentDatabase) => (await fsck(db)).findings.map((f) => f.rule).sort()

test('a database with history is clean, also after deleting snapshots', async () => {
  const { db, history } = await withHistory()
  expect((await fsck(db)).findings).toEqual([])
  await history.deleteSnapshot('a')
  expect((await fsck(db)).findings).toEqual([])
})

test('wrong reference counts and rows no snapshot sees are found and repaired', async () => {
  const { db, history } = await withHistory()
  await db.execute({ sql: 'UPDATE agentfs_blob SET refs = refs + 5' })
  // A closed row whose span holds no snapshot: garbage left behind.
  await db.execute({
    sql: `INSERT INTO agentfs_snap_inode SELECT ino, 1000, 1001, mode, nlink, uid, gid, size, atime, mtime, ctime, rdev, atime_nsec, mtime_nsec, ctime_nsec, target, chunks FROM agentfs_snap_inode WHERE ino = 2 LIMIT 1`,
  })
  expect([...new Set(await rules(db))]).toEqual(['chunk-refs', 'snapshot-garbage'])
  const repaired = await fsck(db, { repair: true })
  expect(repaired.ok).toBe(true)
  expect(repaired.repaired.map((f) => f.rule).sort()).toContain('snapshot-garbage')
  expect(await history.readFile('/f1', { snapshot: 'b', encoding: 'utf8' })).toBe(
    'content 1'.repeat(500),
  )
})

test('a lost chunk and a hole in the feed are reported, not papered over', async () => {
  const { db } = await withHistory()
  await db.execute({
    sql: 'DELETE FROM agentfs_blob WHERE rowid = (SELECT min(rowid) FROM agentfs_blob)',
  })
  await db.execute({ sql: 'DELETE FROM agentfs_change WHERE seq = 2' })
  const report = await fsck(db, { repair: true })
  expect(report.findings.map((f) => f.rule).sort()).toEqual(['chunk-missing', 'feed-gap'])
  expect(report.findings.every((f) => !f.repairable)).toBe(true)
})
