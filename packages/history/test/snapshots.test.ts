import {
  type AgentDatabase,
  fixedClock,
  fsck,
  isAgentFsError,
  openDatabase,
  systemClock,
} from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { createFileSystem } from '@agentfs/fs'
import { createKvStore } from '@agentfs/kv'
import { HOSTILE_CASES } from '@agentfs/test-kit'
import { afterEach, describe, expect, test } from 'vitest'
import { History, snapshotBase } from '../src/index.js'

const open: AgentDatabase[] = []
afterEach(async () => {
  for (const db of open.splice(0)) await db.close()
})

async function fresh(clock = systemClock()) {
  const db = await openDatabase({ driver: betterSqlite3Driver({ path: ':memory:' }), clock })
  open.push(db)
  const fs = createFileSystem(db)
  const kv = createKvStore(db)
  const history = new History(db, { clock: db.clock, chunks: db.chunks })
  const count = async (table: string) =>
    (await db.execute<{ n: number }>({ sql: `SELECT count(*) AS n FROM ${table}` })).rows[0]!.n
  return { db, fs, kv, history, count }
}

describe('snapshots', () => {
  test('a file unlinked while open is not part of a snapshot, and a restore leaves no orphan', async () => {
    const { db, fs, history } = await fresh()
    await fs.writeFile('/kept', 'k')
    await fs.writeFile('/tmpfile', 'scratch')
    const handle = await fs.open('/tmpfile', 'r+')
    await fs.unlink('/tmpfile')
    await history.snapshot('with-open-orphan')
    await handle.write('more', 7)
    await handle.close()
    await fs.writeFile('/later', 'l')
    await history.restore('with-open-orphan')
    expect(await fs.readdir('/')).toEqual(['kept'])
    expect((await fsck(db)).findings).toEqual([])
  })

  test('restore brings back files, directories, links and kv; restore is undoable', async () => {
    const { fs, kv, history } = await fresh()
    await fs.mkdir('/src/lib', { recursive: true })
    await fs.writeFile('/src/a.txt', 'one\n')
    await fs.writeFile('/src/lib/b.bin', Buffer.alloc(10_000, 7))
    await fs.symlink('a.txt', '/src/link')
    await fs.link('/src/a.txt', '/src/hard')
    await kv.set('k', { v: 1 })
    await history.snapshot('first')

    await fs.writeFile('/src/a.txt', 'two\n')
    await fs.rm('/src/lib', { recursive: true })
    await fs.rename('/src/link', '/moved')
    await fs.writeFile('/new.txt', 'new')
    await kv.set('k', { v: 2 })
    await kv.set('extra', 1)

    const { before } = await history.restore('first')
    expect(await fs.readFile('/src/a.txt', 'utf8')).toBe('one\n')
    expect(await fs.readFile('/src/hard', 'utf8')).toBe('one\n')
    expect((await fs.stat('/src/a.txt')).nlink).toBe(2)
    expect(await fs.readFile('/src/lib/b.bin')).toEqual(Buffer.alloc(10_000, 7))
    expect(await fs.readlink('/src/link')).toBe('a.txt')
    expect(await fs.exists('/moved')).toBe(false)
    expect(await fs.exists('/new.txt')).toBe(false)
    expect(await kv.get('k')).toEqual({ v: 1 })
    expect(await kv.get('extra')).toBeUndefined()

    await history.restore(before.name)
    expect(await fs.readFile('/src/a.txt', 'utf8')).toBe('two\n')
    expect(await fs.exists('/src/lib')).toBe(false)
    expect(await fs.readlink('/moved')).toBe('a.txt')
    expect(await fs.readFile('/new.txt', 'utf8')).toBe('new')
    expect(await kv.get('extra')).toBe(1)
  })

  test('a snapshot after a small change costs rows in proportion to the change', async () => {
    const { fs, history, count } = await fresh()
    for (let i = 0; i < 200; i++)
      await fs.writeFile(`/d${i % 10}/f${i}.txt`, `file ${i}`).catch(async () => {
        await fs.mkdir(`/d${i % 10}`)
        await fs.writeFile(`/d${i % 10}/f${i}.txt`, `file ${i}`)
      })
    await history.snapshot('a')
    const rows = await count('agentfs_snap_inode')
    const blobs = await count('agentfs_blob')
    expect(rows).toBe(211)
    await fs.writeFile('/d3/f3.txt', 'changed')
    await history.snapshot('b')
    expect(await count('agentfs_snap_inode')).toBe(rows + 1)
    expect(await count('agentfs_blob')).toBe(blobs + 1)
    expect(await history.readFile('/d3/f3.txt', { snapshot: 'a', encoding: 'utf8' })).toBe('file 3')
    expect(await history.readFile('/d3/f3.txt', { snapshot: 'b', encoding: 'utf8' })).toBe(
      'changed',
    )
    const diff = await history.diff('a', 'b')
    expect(diff.map((c) => [c.path, c.kind])).toEqual([['/d3/f3.txt', 'modified']])
    expect(diff[0]!.diff).toContain('-file 3')
  })

  test('deleting snapshots reclaims rows and chunks', async () => {
    const { fs, history, count } = await fresh()
    await fs.writeFile('/a', 'x'.repeat(9000))
    await history.snapshot('one')
    await fs.writeFile('/a', 'y'.repeat(9000))
    await history.snapshot('two')
    expect(await count('agentfs_blob')).toBe(4)
    expect(await history.deleteSnapshot('one')).toBe(true)
    expect(await count('agentfs_blob')).toBe(2)
    expect(await history.readFile('/a', { snapshot: 'two', encoding: 'utf8' })).toBe(
      'y'.repeat(9000),
    )
    expect(await history.deleteSnapshot('two')).toBe(true)
    expect(await count('agentfs_blob')).toBe(0)
    expect(await count('agentfs_snap_inode')).toBe(0)
    expect(await history.deleteSnapshot('two')).toBe(false)
  })

  test('a diff of a wholly rewritten 10,000-line file is bounded: one linear hunk, at once', async () => {
    const { fs, history } = await fresh(fixedClock())
    const lines = (tag: string) =>
      `${Array.from({ length: 10_000 }, (_, i) => `line ${i} ${tag}`).join('\n')}\n`
    await fs.writeFile('/big.txt', lines('old'))
    await history.snapshot('s')
    await fs.writeFile('/big.txt', lines('new'))
    // Quadratic diffing took 48 s here (a hang guard, not a speed target).
    const started = Date.now()
    const [change] = await history.diff('s')
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(change!.diff!.match(/^@@ -1,10000 \+1,10000 @@$/gm)).toHaveLength(1)
  })

  test('the text a diff is made of has a budget; every change is still listed', async () => {
    const { fs, history } = await fresh(fixedClock())
    for (const name of ['a', 'b', 'c']) await fs.writeFile(`/${name}.txt`, `${name} one\n`)
    await history.snapshot('s')
    for (const name of ['a', 'b', 'c']) await fs.writeFile(`/${name}.txt`, `${name} two\n`)
    // 12 bytes a file, both sides: the budget covers the first two files in path order.
    const diff = await history.diff('s', undefined, { maxTextBytes: 24 })
    expect(diff.map((c) => [c.path, c.kind, c.diff !== undefined])).toEqual([
      ['/a.txt', 'modified', true],
      ['/b.txt', 'modified', true],
      ['/c.txt', 'modified', false],
    ])
    expect((await history.diff('s')).every((c) => c.diff !== undefined)).toBe(true)
    await expect(history.diff('s', undefined, { maxTextBytes: -1 })).rejects.toThrow(/maxTextBytes/)
  })

  test('diff against now does not keep a snapshot', async () => {
    const { fs, history } = await fresh(fixedClock())
    await fs.writeFile('/a', 'a\n')
    await history.snapshot('s')
    await fs.writeFile('/a', 'b\n')
    await fs.mkdir('/dir')
    const diff = await history.diff('s')
    expect(diff.map((c) => `${c.kind} ${c.path}`)).toEqual(['modified /a', 'added /dir'])
    expect((await history.listSnapshots()).map((s) => s.name)).toEqual(['s'])
  })

  test('bad names and unknown snapshots are clear errors', async () => {
    const { history } = await fresh()
    await expect(history.snapshot('../x')).rejects.toThrow(/snapshot name/)
    await expect(history.restore('nope')).rejects.toThrow(/no snapshot named 'nope'/)
    await history.snapshot('x')
    const error = await history.snapshot('x').catch((e: unknown) => e)
    expect(isAgentFsError(error, 'INVALID_ARGUMENT')).toBe(true)
  })

  test('damaged history rows: a bad tip means a full compare; bad overlay state is CORRUPT', async () => {
    const { db, fs, history } = await fresh()
    await fs.writeFile('/a', 'one')
    await history.snapshot('one')
    await db.execute({
      sql: "UPDATE agentfs_meta SET value = 'not json' WHERE key = 'history.tip'",
    })
    await fs.writeFile('/a', 'two')
    await history.snapshot('two')
    expect(await history.readFile('/a', { snapshot: 'two', encoding: 'utf8' })).toBe('two')
    await db.execute({ sql: "UPDATE agentfs_snapshot SET overlay = '{' WHERE name = 'one'" })
    const error = await history.restore('one').catch((e: unknown) => e)
    expect(isAgentFsError(error, 'CORRUPT')).toBe(true)
    expect(await fs.readFile('/a', 'utf8')).toBe('two')
  })
})

describe('a crafted snapshot cannot expand without limit', () => {
  test('restore and branch refuse a snapshot referring to one chunk 20,000 times; fsck reports it', async () => {
    const bomb = HOSTILE_CASES.find((c) => c.name.startsWith('snapshot expanding'))!
    const { db, fs, history, count } = await fresh(fixedClock())
    await fs.writeFile('/kept.txt', 'kept')
    for (const sql of bomb.sql.split(';\n')) await db.execute({ sql })
    const size = async () =>
      (
        await db.execute<{ n: number }>({
          sql: 'SELECT coalesce(sum(length(data)), 0) AS n FROM fs_data',
        })
      ).rows[0]!.n
    const before = await size()
    const refused = await history.restore('bomb').then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(isAgentFsError(refused, 'TOO_BIG')).toBe(true)
    expect((refused as Error).message).toMatch(
      /snapshot 'bomb' would expand to 81920000 bytes from 4096 stored/,
    )
    // Nothing changed: no before-snapshot, no data, the live file as it was.
    expect(await size()).toBe(before)
    expect(await count('agentfs_snapshot')).toBe(1)
    expect(await fs.readFile('/kept.txt', 'utf8')).toBe('kept')
    const target = await openDatabase({ driver: betterSqlite3Driver({ path: ':memory:' }) })
    open.push(target)
    const branched = await snapshotBase(db, history, 'bomb', target).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(isAgentFsError(branched, 'TOO_BIG')).toBe(true)
    expect(await count('fs_inode')).toBeGreaterThan(0)
    const report = await fsck(db)
    expect(report.findings.map((f) => f.rule)).toContain('snapshot-expansion')
    // A limit raised on purpose lets it through (a user who means it).
    const lenient = new History(db, {
      clock: db.clock,
      chunks: db.chunks,
      expansion: { ratio: 1e9, minBytes: 0 },
    })
    await lenient.restore('bomb')
    expect(await size()).toBe(81_920_000)
  })
})
