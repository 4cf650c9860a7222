import { createHash } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  type AgentDatabase,
  fixedClock,
  fsck,
  openDatabase,
  SQLITE_INTEGRITY_RULE,
} from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { createFileSystem } from '@agentfs/fs'
import { createKvStore } from '@agentfs/kv'
import { createToolCalls } from '@agentfs/tool-calls'
import { expect, test } from 'vitest'

async function populated() {
  const db = await openDatabase({
    driver: betterSqlite3Driver({ path: ':memory:' }),
    clock: fixedClock(),
    chunkSize: 64,
  })
  const fs = createFileSystem(db)
  await fs.mkdir('/docs/deep', { recursive: true })
  await fs.writeFile('/docs/a.txt', 'x'.repeat(200))
  await fs.link('/docs/a.txt', '/docs/hard.txt')
  await fs.symlink('/docs/a.txt', '/link')
  await createKvStore(db).set('k', { v: 1 })
  await createToolCalls(db).record({ name: 't', result: 1, startedAt: 0, completedAt: 2000 })
  return { db, fs }
}

async function fsReadLength(db: AgentDatabase, ino: number): Promise<number> {
  const { rows } = await db.execute<{ n: number }>({
    sql: 'SELECT SUM(length(data)) AS n FROM fs_data WHERE ino = ?',
    params: [ino],
  })
  return Number(rows[0]!.n)
}

test('a database written through the packages is clean', async () => {
  const { db } = await populated()
  expect(await fsck(db)).toEqual({ findings: [], repaired: [], ok: true })
  await db.close()
})

test('every injected inconsistency is found; safe ones are repaired, the rest reported', async () => {
  const { db } = await populated()
  const ino = async (name: string) =>
    Number(
      (
        await db.execute<{ ino: number }>({
          sql: 'SELECT ino FROM fs_dentry WHERE name = ?',
          params: [name],
        })
      ).rows[0]!.ino,
    )
  const file = await ino('a.txt')
  const inject = [
    `UPDATE fs_inode SET nlink = 5 WHERE ino = ${file}`,
    // Smaller than its chunks: bytes past the end (a larger size is a legal sparse file).
    `UPDATE fs_inode SET size = 100 WHERE ino = ${file}`,
    "INSERT INTO fs_data (ino, chunk_index, data) VALUES (4242, 0, x'00')",
    "INSERT INTO fs_dentry (name, parent_ino, ino) VALUES ('ghost', 1, 4343)",
    "INSERT INTO fs_symlink (ino, target) VALUES (4444, '/nowhere')",
    "INSERT INTO fs_whiteout (path, parent_path, created_at) VALUES ('/a/b', '/wrong', 0)",
    'INSERT INTO fs_origin (delta_ino, base_ino) VALUES (4545, 7)',
    'INSERT INTO agentfs_tool_call_meta (id, started_at_ns) VALUES (4646, 0)',
    'INSERT INTO fs_inode (mode, nlink, size, atime, mtime, ctime) VALUES (33188, 0, -5, 0, 0, 0)',
    "INSERT INTO kv_store (key, value) VALUES ('bad', '{not json')",
    "INSERT INTO tool_calls (name, parameters, result, error, started_at, completed_at, duration_ms) VALUES ('x', '{', '1', 'e', 0, 5, 1)",
    `UPDATE fs_inode SET mode = 16877 WHERE ino = ${await ino('link')}`,
  ]
  for (const sql of inject) await db.execute({ sql })
  const report = await fsck(db)
  const rules = new Set(report.findings.map((f) => f.rule))
  for (const rule of [
    'nlink',
    'size',
    'chunk-past-eof',
    'orphan-chunk',
    'dentry-target',
    'orphan-symlink',
    'whiteout-parent',
    'origin',
    'tool-call-meta',
    'orphan-inode',
    'kv-json',
    'tool-call-json',
    'tool-call-outcome',
    'tool-call-duration',
  ]) {
    expect(rules.has(rule), rule).toBe(true)
  }
  expect(report.ok).toBe(false)
  const repaired = await fsck(db, { repair: true })
  expect(new Set(repaired.repaired.map((f) => f.rule))).toEqual(
    new Set([
      'nlink',
      'chunk-past-eof',
      'orphan-chunk',
      'dentry-target',
      'orphan-symlink',
      'whiteout-parent',
      'origin',
      'tool-call-meta',
    ]),
  )
  // What needs a human stays reported: nothing is guessed or thrown away.
  expect(new Set(repaired.findings.map((f) => f.rule))).toEqual(
    new Set([
      'size',
      'orphan-inode',
      'kv-json',
      'tool-call-json',
      'tool-call-outcome',
      'tool-call-duration',
    ]),
  )
  expect(
    (await db.execute({ sql: `SELECT nlink, size FROM fs_inode WHERE ino = ${file}` })).rows,
  ).toEqual([{ nlink: 2, size: 100 }])
  expect(await fsReadLength(db, file)).toBe(100)
  await db.close()
})

test('a file damaged below the tables is a sqlite-integrity finding, and repair writes nothing', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-fsck-'))
  try {
    const path = join(dir, 'agent.db')
    const db = await openDatabase({ driver: betterSqlite3Driver({ path }), chunkSize: 4096 })
    const fs = createFileSystem(db)
    for (let i = 0; i < 40; i++) await fs.writeFile(`/f${i}.txt`, `${i}`.repeat(3000))
    await createToolCalls(db).record({ name: 't', result: 1, startedAt: 0, completedAt: 2 })
    await db.close()
    // Overwrite one page in the middle of the file with garbage.
    const bytes = await readFile(path)
    bytes.fill(0x5a, 8 * 4096, 9 * 4096)
    await writeFile(path, bytes)
    const before = createHash('sha256').update(bytes).digest('hex')
    const damaged = await openDatabase({ driver: betterSqlite3Driver({ path }) })
    const report = await fsck(damaged, { repair: true })
    await damaged.close()
    expect(report.ok).toBe(false)
    expect(report.repaired).toEqual([])
    expect(report.findings.filter((f) => f.rule === SQLITE_INTEGRITY_RULE).length).toBeGreaterThan(
      0,
    )
    expect(report.findings[0]!.message).toMatch(/restore the file from a backup/)
    const after = createHash('sha256')
      .update(await readFile(path))
      .digest('hex')
    expect(after).toBe(before)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

test('the audit payload store: a missing payload or chunk is reported; what no call names is deleted', async () => {
  const { db } = await populated()
  const tools = createToolCalls(db)
  const a = await tools.record({
    name: 'a',
    parameters: 'p'.repeat(70_000),
    startedAt: 0,
    completedAt: 1,
  })
  const b = await tools.record({
    name: 'b',
    result: 'r'.repeat(140_000),
    startedAt: 0,
    completedAt: 1,
  })
  expect(await fsck(db)).toEqual({ findings: [], repaired: [], ok: true })
  // A call whose parameters changed between its start and its record: the first are named by nothing.
  await tools.start({ name: 'c', parameters: 'c'.repeat(70_000), callToken: 'tok' })
  await tools.record({
    name: 'c',
    parameters: 'other',
    startedAt: 0,
    completedAt: 1,
    callToken: 'tok',
  })
  const sha = async (id: number) =>
    Object.values(
      JSON.parse(
        (
          await db.execute<{ payloads: string }>({
            sql: 'SELECT payloads FROM agentfs_tool_call_meta WHERE id = ?',
            params: [id],
          })
        ).rows[0]!.payloads,
      ),
    )[0] as string
  const [shaA, shaB] = [await sha(a), await sha(b)]
  await db.execute({ sql: 'DELETE FROM agentfs_payload WHERE sha256 = ?', params: [shaA] })
  await db.execute({
    sql: 'DELETE FROM agentfs_payload_chunk WHERE sha256 = ? AND chunk_index = 1',
    params: [shaB],
  })
  const report = await fsck(db)
  expect(report.findings.map((f) => [f.rule, f.message])).toEqual([
    ['audit-payload-missing', `audit payload of tool call ${a}: parameters ${shaA} is missing`],
    ['audit-payload-missing', `audit payload of tool call ${b}: result ${shaB} has 2 of 3 chunks`],
    [
      'audit-payload-orphan',
      expect.stringMatching(/^audit payload [0-9a-f]{64} is named by no tool call$/),
    ],
    ['audit-payload-chunk', `chunks of audit payload ${shaA}, which is not in agentfs_payload`],
  ])
  const repaired = await fsck(db, { repair: true })
  expect(repaired.repaired.map((f) => f.rule)).toEqual([
    'audit-payload-orphan',
    'audit-payload-chunk',
  ])
  expect(repaired.findings.map((f) => f.rule)).toEqual([
    'audit-payload-missing',
    'audit-payload-missing',
  ])
  const left = await db.execute<{ sha256: string; n: number }>({
    sql: 'SELECT sha256, (SELECT COUNT(*) FROM agentfs_payload_chunk c WHERE c.sha256 = p.sha256) AS n FROM agentfs_payload p',
  })
  expect(left.rows).toEqual([{ sha256: shaB, n: 2 }])
  expect(
    (await db.execute<{ n: number }>({ sql: 'SELECT COUNT(*) AS n FROM agentfs_payload_chunk' }))
      .rows[0]!.n,
  ).toBe(2)
  await db.close()
})
