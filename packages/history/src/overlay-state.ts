import { AgentFsError, type Executor, placeholders } from '@agentfs/core'

/**
 * The overlay bookkeeping of a copy-on-write database (whiteouts, origins, the base state the
 * commit checks against), which snapshots keep whole beside the tree: small (one row per
 * path the overlay hid or copied), and restored together with it.
 */
const TABLES = {
  fs_whiteout: ['path', 'parent_path', 'created_at'],
  fs_origin: ['delta_ino', 'base_ino'],
  agentfs_overlay_base_state: ['path', 'token'],
} as const

type State = Record<string, unknown[][]>

/** The overlay rows as JSON, or null when there are none (a database that is not an overlay). */
export async function readOverlayState(q: Executor): Promise<string | null> {
  const state: State = {}
  let any = false
  for (const [table, columns] of Object.entries(TABLES)) {
    const { rows } = await q.execute<Record<string, unknown>>({
      sql: `SELECT ${columns.join(', ')} FROM ${table} ORDER BY 1`,
    })
    state[table] = rows.map((r) => columns.map((c) => r[c]))
    any ||= rows.length > 0
  }
  return any ? JSON.stringify(state) : null
}

/** Replaces the overlay rows with those of `json` (none when null). */
export async function writeOverlayState(q: Executor, json: string | null): Promise<void> {
  let state: State
  try {
    state = (json === null ? {} : JSON.parse(json)) as State
  } catch {
    throw new AgentFsError(
      'CORRUPT',
      'agentfs_snapshot.overlay is not the JSON this library writes; run fsck or restore a backup',
    )
  }
  for (const [table, columns] of Object.entries(TABLES)) {
    await q.execute({ sql: `DELETE FROM ${table}` })
    for (const row of state[table] ?? [])
      await q.execute({
        sql: `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${placeholders(columns.length)})`,
        params: row as (string | number | null)[],
      })
  }
}
