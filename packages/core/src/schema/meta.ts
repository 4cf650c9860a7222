import { type ChunkFormat, codecOf } from '../content/chunk-codec.js'
import type { Executor } from '../driver/driver.js'
import { AgentFsError } from '../errors.js'

/** `agentfs_meta` rows of history: the snapshot the open rows describe, and the trimmed feed. */
export const META_HISTORY_TIP = 'history.tip'
export const META_HISTORY_TRIMMED = 'history.trimmed'

/** A value of `agentfs_meta`, as stored (undefined without the row). */
export async function readMeta(q: Executor, key: string): Promise<unknown> {
  const { rows } = await q.execute<{ value: unknown }>({
    sql: 'SELECT value FROM agentfs_meta WHERE key = ?',
    params: [key],
  })
  return rows[0]?.value
}

/** Sets a value of `agentfs_meta`; undefined deletes the row. */
export async function writeMeta(
  q: Executor,
  key: string,
  value: string | undefined,
): Promise<void> {
  await q.execute(
    value === undefined
      ? { sql: 'DELETE FROM agentfs_meta WHERE key = ?', params: [key] }
      : {
          sql: 'INSERT INTO agentfs_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
          params: [key, value],
        },
  )
}

/**
 * The database's `fs_config.chunk_size`: what every reader of `fs_data` cuts by. CORRUPT when
 * it is missing or not a positive whole number (a damaged or crafted file).
 */
export async function readChunkSize(q: Executor): Promise<number> {
  const { rows } = await q.execute<{ value: unknown }>({
    sql: "SELECT value FROM fs_config WHERE key = 'chunk_size'",
  })
  return checkStoredChunkSize(rows[0]?.value)
}

function checkStoredChunkSize(value: unknown): number {
  const size = Number(value)
  if (!Number.isSafeInteger(size) || size <= 0)
    throw new AgentFsError(
      'CORRUPT',
      `fs_config.chunk_size is ${JSON.stringify(value)}; expected a positive integer`,
    )
  return size
}

/**
 * How the database stores `fs_data` chunks: `fs_config.chunk_size` and the codec of
 * `fs_config.compression` (see {@link codecOf}), read in one statement.
 */
export async function readChunkFormat(q: Executor): Promise<ChunkFormat> {
  const { rows } = await q.execute<{ key: string; value: unknown }>({
    sql: "SELECT key, value FROM fs_config WHERE key IN ('chunk_size', 'compression')",
  })
  const value = (key: string) => rows.find((r) => r.key === key)?.value
  return { size: checkStoredChunkSize(value('chunk_size')), codec: codecOf(value('compression')) }
}
