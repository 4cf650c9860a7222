import { randomInt } from 'node:crypto'
import { AgentFsError, MAX_SLOT } from '@agentfs/core'
import { type SyncRemote, serverExecute } from './server.js'

const SLOT_TABLE =
  'CREATE TABLE IF NOT EXISTS agentfs_sync_slot (slot INTEGER PRIMARY KEY, client_id TEXT NOT NULL, claimed_at INTEGER NOT NULL)'
const CLAIM =
  'INSERT INTO agentfs_sync_slot (slot, client_id, claimed_at) VALUES (?, ?, unixepoch()) ON CONFLICT(slot) DO NOTHING RETURNING slot'

export async function claim(remote: SyncRemote, slot: number, clientId: string): Promise<boolean> {
  if ((await serverExecute(remote, CLAIM, [slot, clientId])).length > 0) return true
  const rows = await serverExecute(
    remote,
    'SELECT client_id FROM agentfs_sync_slot WHERE slot = ?',
    [slot],
  )
  return rows[0]?.[0] === clientId
}

/** Creates the server's slot table (once; later calls change nothing). */
export async function prepareServer(remote: SyncRemote): Promise<void> {
  await serverExecute(remote, SLOT_TABLE)
}

/**
 * Claims a slot no other client holds: a random one (or `pick`'s), taken on the server by one
 * atomic statement; a slot already taken means another try.
 */
export async function claimSlot(
  remote: SyncRemote,
  clientId: string,
  pick: () => number = () => randomInt(1, MAX_SLOT + 1),
): Promise<number> {
  for (let attempt = 0; attempt < 32; attempt++) {
    const slot = pick()
    if (await claim(remote, slot, clientId)) return slot
  }
  throw new AgentFsError(
    'REMOTE',
    `no free slot found on ${remote.url} after 32 tries; the server's agentfs_sync_slot table is nearly full`,
  )
}
