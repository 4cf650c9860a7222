import { AgentFsError } from '../errors.js'
import type { Executor, IdTable, SyncCapabilities } from './driver.js'

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

/** The tables whose ids a slot allocator hands out. */
export const ID_TABLES = Object.keys(ID_COLUMN) as IdTable[]

/** The id column of an id table (`ino`, `id`, `seq`). */
export const idColumn = (table: IdTable): string => ID_COLUMN[table]

/** A slot's allocator: the ids it has handed out, to tell its own rows from a peer's. */
export interface SlotAllocator extends SyncCapabilities {
  readonly slot: number
  /**
   * Reads where each table's counter starts (the largest id of the slot in the database), once.
   * Call it before the first pull: any row of this slot that a pull brings in later, above what
   * the allocator has handed out, was made by someone else.
   */
  prime(executor: Executor): Promise<void>
  /** The largest id handed out (or found at `prime`) for `table`; undefined before either. */
  issued(table: IdTable): number | undefined
}

/**
 * Client-unique ids for a synced database: a client that holds `slot` (claimed on the server so
 * no other client has it) numbers its rows `slot · 2^32 + n`. The counter of each table starts
 * after the largest id of the slot already in the database and then counts in memory, so one
 * allocator must serve every connection of the client (one process per synced file).
 */
export function slotIds(slot: number, options: { replaceOnRewrite?: boolean } = {}): SlotAllocator {
  if (!Number.isInteger(slot) || slot < 1 || slot > MAX_SLOT)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `slot ${slot} is not an integer from 1 to ${MAX_SLOT}`,
    )
  const low = slot * SLOT_SPAN
  const high = low + SLOT_SPAN - 1
  const next = new Map<IdTable, number>()
  const top = async (table: IdTable, executor: Executor) => {
    const column = ID_COLUMN[table]
    const { rows } = await executor.execute<{ top: number | null }>({
      sql: `SELECT max(${column}) AS top FROM ${table} WHERE ${column} BETWEEN ? AND ?`,
      params: [low, high],
    })
    return rows[0]?.top ?? low
  }
  return {
    slot,
    replaceOnRewrite: options.replaceOnRewrite ?? true,
    async prime(executor: Executor): Promise<void> {
      for (const table of ID_TABLES)
        if (!next.has(table)) next.set(table, await top(table, executor))
    },
    issued: (table: IdTable) => next.get(table),
    async nextId(table: IdTable, executor: Executor): Promise<number> {
      let last = next.get(table)
      if (last === undefined) last = await top(table, executor)
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
