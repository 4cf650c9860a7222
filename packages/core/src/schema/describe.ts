import type { Executor } from '../driver/driver.js'
import { metaVersion } from './layout.js'
import { S_IFDIR, S_IFLNK, S_IFMT, S_IFREG } from './schema.js'

/** What `agentfs info` shows about a database. */
export interface DatabaseDescription {
  readonly schemaVersion: number
  readonly specVersion: string | null
  readonly chunkSize: number
  /** How file content is compressed (`fs_config.compression`); null: stored as it is. */
  readonly compression: string | null
  readonly files: number
  readonly directories: number
  readonly symlinks: number
  readonly otherNodes: number
  /** Sum of file sizes. */
  readonly fileBytes: number
  /** Bytes the chunks take as stored (less than `fileBytes` when compressed or sparse). */
  readonly storedBytes: number
  readonly chunks: number
  readonly kvKeys: number
  readonly toolCalls: number
  readonly whiteouts: number
  /** page_count × page_size. */
  readonly databaseBytes: number
}

/** Counts and sizes of an open (migrated) database, read with a handful of aggregate queries. */
export async function describeDatabase(q: Executor): Promise<DatabaseDescription> {
  const one = async <T>(sql: string) => (await q.execute<T>({ sql })).rows[0]!
  const nodes = await one<{
    files: number
    dirs: number
    links: number
    other: number
    bytes: number
  }>(
    `SELECT SUM((mode & ${S_IFMT}) = ${S_IFREG}) AS files, SUM((mode & ${S_IFMT}) = ${S_IFDIR}) AS dirs,
       SUM((mode & ${S_IFMT}) = ${S_IFLNK}) AS links,
       SUM((mode & ${S_IFMT}) NOT IN (${S_IFREG}, ${S_IFDIR}, ${S_IFLNK})) AS other,
       COALESCE(SUM(CASE WHEN (mode & ${S_IFMT}) = ${S_IFREG} THEN size END), 0) AS bytes FROM fs_inode`,
  )
  const config = await q.execute<{ key: string; value: string }>({
    sql: 'SELECT key, value FROM fs_config',
  })
  const get = (key: string) => config.rows.find((r) => r.key === key)?.value
  const counts = await one<{
    chunks: number
    stored: number | null
    kv: number
    calls: number
    whiteouts: number
  }>(
    'SELECT (SELECT COUNT(*) FROM fs_data) AS chunks, (SELECT SUM(length(data)) FROM fs_data) AS stored, (SELECT COUNT(*) FROM kv_store) AS kv, (SELECT COUNT(*) FROM tool_calls) AS calls, (SELECT COUNT(*) FROM fs_whiteout) AS whiteouts',
  )
  const pages = await one<{ page_count: number }>('PRAGMA page_count')
  const size = await one<{ page_size: number }>('PRAGMA page_size')
  const version = await one<{ user_version: number }>('PRAGMA user_version')
  // A migrated database has agentfs_meta; a synced copy has the version only there.
  return {
    schemaVersion: Math.max(Number(version.user_version), await metaVersion(q)),
    specVersion: get('schema_version') ?? null,
    chunkSize: Number(get('chunk_size')),
    compression: get('compression') ?? null,
    files: Number(nodes.files ?? 0),
    directories: Number(nodes.dirs ?? 0),
    symlinks: Number(nodes.links ?? 0),
    otherNodes: Number(nodes.other ?? 0),
    fileBytes: Number(nodes.bytes),
    storedBytes: Number(counts.stored ?? 0),
    chunks: Number(counts.chunks),
    kvKeys: Number(counts.kv),
    toolCalls: Number(counts.calls),
    whiteouts: Number(counts.whiteouts),
    databaseBytes: Number(pages.page_count) * Number(size.page_size),
  }
}
