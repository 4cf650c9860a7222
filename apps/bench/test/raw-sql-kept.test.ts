import { createHash } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AgentFS } from '@agentfs/sdk'
import Database from 'better-sqlite3'
import { expect, test } from 'vitest'
import { RawSqlFs } from '../src/raw-sql.js'
import { keptRows } from '../src/raw-sql-kept.js'

// The kept baseline must write every row the guarantees add, or its ceiling flatters nobody.
test('raw-sql-kept writes the parent times, feed, content hash, kv version and tool metadata rows', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-kept-'))
  try {
    const path = join(dir, 'raw.db')
    await (await AgentFS.open({ path })).close()
    const fs = new RawSqlFs(path, 'NORMAL', keptRows)
    await fs.mkdir('/a')
    await fs.mkdir('/b')
    await fs.writeFile('/a/f', Buffer.from('one'))
    await fs.writeFile('/a/f', Buffer.from('two'))
    // From 1 MiB the hash is computed on the thread pool while the chunks go in.
    const big = Buffer.alloc(2 * 1024 * 1024 + 5, 7)
    await fs.writeFile('/a/big', big)
    await fs.rename('/a/f', '/b/f')
    await fs.kvSet('k', { v: 1 })
    await fs.kvSet('k', { v: 2 })
    await fs.toolRecord('read', { path: '/b/f' }, { ok: true })
    await fs.rmTree('/b')
    await fs.close()

    const db = new Database(path, { readonly: true })
    const ops = db.prepare('SELECT op FROM agentfs_change ORDER BY seq').pluck().all()
    expect(ops).toEqual([
      'create',
      'create',
      'create',
      'write',
      'create',
      'rename',
      'kv-set',
      'kv-set',
      'remove',
    ])
    // Each content change carries its content's SHA-256, as AgentFS's feed rows do.
    const hashes = db
      .prepare(
        "SELECT path, hex(hash) FROM agentfs_change WHERE op IN ('create', 'write') AND path LIKE '/a/%' ORDER BY seq",
      )
      .raw()
      .all()
    const hex = (b: Buffer) => createHash('sha256').update(b).digest('hex').toUpperCase()
    expect(hashes).toEqual([
      ['/a/f', hex(Buffer.from('one'))],
      ['/a/f', hex(Buffer.from('two'))],
      ['/a/big', hex(big)],
    ])
    expect(db.prepare("SELECT version FROM agentfs_kv_version WHERE key = 'k'").pluck().get()).toBe(
      2,
    )
    expect(db.prepare("SELECT value FROM kv_store WHERE key = 'k'").pluck().get()).toBe('{"v":2}')
    expect(
      db
        .prepare('SELECT COUNT(*) FROM agentfs_tool_call_meta m JOIN tool_calls t ON t.id = m.id')
        .pluck()
        .get(),
    ).toBe(1)
    // The rename moved /a's times past its creation; the root's moved with each mkdir.
    const times = db
      .prepare(
        "SELECT i.mtime * 1000000000 + i.mtime_nsec AS m, i.ctime * 1000000000 + i.ctime_nsec AS c FROM fs_dentry d JOIN fs_inode i ON i.ino = d.ino WHERE d.parent_ino = 1 AND d.name = 'a'",
      )
      .get() as { m: number; c: number }
    const created = db
      .prepare(
        "SELECT CAST(version AS INTEGER) FROM agentfs_change WHERE op = 'create' AND path = '/a'",
      )
      .pluck()
      .get() as number
    expect(times.m).toBeGreaterThanOrEqual(created)
    expect(
      db
        .prepare("SELECT COUNT(*) FROM agentfs_change WHERE op = 'create' AND dir_ino = 1")
        .pluck()
        .get(),
    ).toBe(2)
    db.close()
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
