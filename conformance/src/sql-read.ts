import { decodeChunk, type Executor, readChunkFormat } from '@agentfs/core'

/**
 * Reads a file's bytes with plain spec SQL (path walk over fs_dentry, chunks in order, decoded
 * when the database compresses them), so the suites can check migrated data without depending
 * on the filesystem package.
 */
export async function readFileBySql(db: Executor, path: string): Promise<Uint8Array | undefined> {
  const ino = await inoBySql(db, path)
  if (ino === undefined) return undefined
  const format = await readChunkFormat(db)
  const chunks = await db.execute<{ data: unknown }>({
    sql: 'SELECT data FROM fs_data WHERE ino = ? ORDER BY chunk_index ASC',
    params: [ino],
  })
  return Buffer.concat(chunks.rows.map((c) => decodeChunk(format, c.data, ino, 'read')))
}

/** Inode number at `path`, or undefined. */
export async function inoBySql(db: Executor, path: string): Promise<number | undefined> {
  let ino = 1
  for (const name of path.split('/').filter(Boolean)) {
    const row = await db.execute<{ ino: number }>({
      sql: 'SELECT ino FROM fs_dentry WHERE parent_ino = ? AND name = ?',
      params: [ino, name],
    })
    if (!row.rows[0]) return undefined
    ino = Number(row.rows[0].ino)
  }
  return ino
}

/** `SELECT COUNT(*)` of a table. */
export async function countRows(db: Executor, table: string): Promise<number> {
  const result = await db.execute<{ n: number }>({ sql: `SELECT COUNT(*) AS n FROM "${table}"` })
  return Number(result.rows[0]?.n ?? 0)
}
