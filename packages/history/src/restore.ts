import type { ChunkFormat, Executor, Timestamp } from '@agentfs/core'
import { encodeChunk, hashesOf, placeholders, readBlob } from '@agentfs/core'
import { type Candidates, noCandidates } from './capture.js'
import { INODE_COLUMNS, isRegMode, type SnapInode, visibleAt } from './rows.js'

/**
 * Makes the live tables what snapshot `target` holds, given that the open rows describe the
 * live state (a snapshot was just taken). Only what differs between the two is written: rows
 * of `target` that are no longer open, and open rows `target` does not have. Returns what it
 * touched, for the tip to follow.
 */
export async function applySnapshot(
  q: Executor,
  target: number,
  now: Timestamp,
  format: ChunkFormat,
): Promise<Candidates> {
  const touched = noCandidates()
  // Inodes: S-only rows are written, tip-only rows whose inode S lacks are deleted.
  const old = await q.execute<SnapInode>({
    sql: `SELECT ino, ${INODE_COLUMNS.join(', ')}, target, chunks FROM agentfs_snap_inode s
WHERE ${visibleAt('s')} AND s.until IS NOT NULL ORDER BY s.ino`,
    params: [target, target],
  })
  const restored = new Set(old.rows.map((r) => r.ino))
  const extra = await q.execute<{ ino: number }>({
    sql: 'SELECT ino FROM agentfs_snap_inode WHERE until IS NULL AND since > ? ORDER BY ino',
    params: [target],
  })
  for (const { ino } of extra.rows) {
    touched.inodes.add(ino)
    if (restored.has(ino)) continue
    for (const table of ['fs_data', 'fs_symlink', 'fs_inode'])
      await q.execute({ sql: `DELETE FROM ${table} WHERE ino = ?`, params: [ino] })
  }
  for (const row of old.rows) {
    touched.inodes.add(row.ino)
    // A restore changes the inode: its ctime (the version token) moves on, never back.
    const nowNs = BigInt(now.sec) * 1_000_000_000n + BigInt(now.nsec)
    const older = 'ctime * 1000000000 + ctime_nsec < ?'
    const plain = INODE_COLUMNS.filter((c) => c !== 'ctime' && c !== 'ctime_nsec')
    await q.execute({
      sql: `INSERT INTO fs_inode (ino, ${INODE_COLUMNS.join(', ')}) VALUES (?, ${placeholders(INODE_COLUMNS.length)})
ON CONFLICT(ino) DO UPDATE SET ${plain.map((c) => `${c} = excluded.${c}`).join(', ')},
  ctime = CASE WHEN ${older} THEN excluded.ctime ELSE ctime + (ctime_nsec + 1) / 1000000000 END,
  ctime_nsec = CASE WHEN ${older} THEN excluded.ctime_nsec ELSE (ctime_nsec + 1) % 1000000000 END`,
      params: [
        row.ino,
        ...INODE_COLUMNS.map((c) =>
          c === 'ctime' ? now.sec : c === 'ctime_nsec' ? now.nsec : row[c],
        ),
        nowNs as unknown as number,
        nowNs as unknown as number,
      ],
    })
    await q.execute({ sql: 'DELETE FROM fs_symlink WHERE ino = ?', params: [row.ino] })
    if (row.target !== null)
      await q.execute({
        sql: 'INSERT INTO fs_symlink (ino, target) VALUES (?, ?)',
        params: [row.ino, row.target],
      })
    await q.execute({ sql: 'DELETE FROM fs_data WHERE ino = ?', params: [row.ino] })
    if (isRegMode(row.mode)) await writeChunks(q, q, row.ino, row.chunks, format)
  }
  // Entries: tip-only ones go first (a name may move to another inode), then S-only ones.
  const gone = await q.execute<{ parent_ino: number; name: string }>({
    sql: 'SELECT parent_ino, name FROM agentfs_snap_dentry WHERE until IS NULL AND since > ? ORDER BY parent_ino, name',
    params: [target],
  })
  for (const { parent_ino, name } of gone.rows) {
    touched.dirs.add(parent_ino)
    await q.execute({
      sql: 'DELETE FROM fs_dentry WHERE parent_ino = ? AND name = ?',
      params: [parent_ino, name],
    })
  }
  const back = await q.execute<{ parent_ino: number; name: string; ino: number }>({
    sql: `SELECT parent_ino, name, ino FROM agentfs_snap_dentry d WHERE ${visibleAt('d')} AND d.until IS NOT NULL ORDER BY d.parent_ino, d.name`,
    params: [target, target],
  })
  for (const { parent_ino, name, ino } of back.rows) {
    touched.dirs.add(parent_ino)
    await q.execute({
      sql: 'INSERT INTO fs_dentry (name, parent_ino, ino) VALUES (?, ?, ?) ON CONFLICT(parent_ino, name) DO UPDATE SET ino = excluded.ino',
      params: [name, parent_ino, ino],
    })
  }
  await applyKv(q, target, touched)
  return touched
}

/**
 * Writes the stored chunks `chunks` (hashes) as the `fs_data` rows of inode `ino` in `target`,
 * reading them from the blob store of `q`. A chunk of zeros was a hole: it is left out, as the
 * filesystem writes holes.
 */
export async function writeChunks(
  q: Executor,
  target: Executor,
  ino: number,
  chunks: Uint8Array | null,
  format: ChunkFormat,
): Promise<void> {
  let index = 0
  for (const hash of hashesOf(chunks)) {
    const data = await readBlob(q, hash)
    if (data.some((b) => b !== 0))
      await target.execute({
        sql: 'INSERT INTO fs_data (ino, chunk_index, data) VALUES (?, ?, ?)',
        params: [ino, index, encodeChunk(format, data)],
      })
    index++
  }
}

async function applyKv(q: Executor, target: number, touched: Candidates): Promise<void> {
  const gone = await q.execute<{ key: string }>({
    sql: 'SELECT key FROM agentfs_snap_kv WHERE until IS NULL AND since > ? ORDER BY key',
    params: [target],
  })
  for (const { key } of gone.rows) {
    touched.keys.add(key)
    await q.execute({ sql: 'DELETE FROM kv_store WHERE key = ?', params: [key] })
  }
  const back = await q.execute<{
    key: string
    value: string
    created_at: number | null
    updated_at: number | null
  }>({
    sql: `SELECT key, value, created_at, updated_at FROM agentfs_snap_kv k WHERE ${visibleAt('k')} AND k.until IS NOT NULL ORDER BY k.key`,
    params: [target, target],
  })
  for (const row of back.rows) {
    touched.keys.add(row.key)
    await q.execute({
      sql: `INSERT INTO kv_store (key, value, created_at, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT(key) DO UPDATE SET value = excluded.value, created_at = excluded.created_at, updated_at = excluded.updated_at`,
      params: [row.key, row.value, row.created_at, row.updated_at],
    })
  }
  // Every restored key moves to a new version, so a stale compare-and-set fails.
  for (const key of touched.keys)
    await q.execute({
      sql: 'INSERT INTO agentfs_kv_version (key, version) VALUES (?, 1) ON CONFLICT(key) DO UPDATE SET version = version + 1',
      params: [key],
    })
}
