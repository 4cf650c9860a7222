import type { Executor, IdTable, SyncCapabilities } from './driver.js'
import { AgentFsError } from './errors.js'

/** Ids per slot: a slot's ids are `slot · 2^32 + n`, 1 ≤ n < 2^32. */
export const SLOT_SPAN = 2 ** 32
/** Slots are 1 … 2^21 − 1, so every id stays below 2^53 (a JS number, a FUSE inode number). */
export const MAX_SLOT = 2 ** 21 - 1

const ID_COLUMN: Record<IdTable, string> = {
  fs_inode: 'ino',
  fs_dentry: 'id',
  tool_calls: 'id',
  agentfs_change: 'seq',
}

/**
 * Client-unique ids for a synced database: a client that holds `slot` (claimed on the server so
 * no other client has it) numbers its rows `slot · 2^32 + n`. The counter of each table starts
 * after the largest id of the slot already in the database and then counts in memory, so one
 * allocator must serve every connection of the client (one process per synced file).
 */
export function slotIds(
  slot: number,
  options: { replaceOnRewrite?: boolean } = {},
): SyncCapabilities {
  if (!Number.isInteger(slot) || slot < 1 || slot > MAX_SLOT)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `slot ${slot} is not an integer from 1 to ${MAX_SLOT}`,
    )
  const low = slot * SLOT_SPAN
  const high = low + SLOT_SPAN - 1
  const next = new Map<IdTable, number>()
  return {
    replaceOnRewrite: options.replaceOnRewrite ?? true,
    async nextId(table: IdTable, executor: Executor): Promise<number> {
      let last = next.get(table)
      if (last === undefined) {
        const column = ID_COLUMN[table]
        const { rows } = await executor.execute<{ top: number | null }>({
          sql: `SELECT max(${column}) AS top FROM ${table} WHERE ${column} BETWEEN ? AND ?`,
          params: [low, high],
        })
        last = rows[0]?.top ?? low
      }
      if (last >= high)
        throw new AgentFsError(
          'FULL',
          `slot ${slot} has used all its ${SLOT_SPAN - 1} ids of ${table}; claim another slot`,
        )
      next.set(table, last + 1)
      return last + 1
    },
  }
}
