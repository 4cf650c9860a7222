import { existsSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { AgentFsError, slotIds } from '@agentfs/core'
import { type TursoAsyncDriver, tursoAsyncDriver } from '@agentfs/driver-turso'
import { AgentFS } from '@agentfs/sdk'
import { withSync } from './controller.js'
import { conflictRules, newPushRecord } from './rules.js'
import { connectClient, ensureSchema } from './schema.js'
import type { SyncRemote } from './server.js'
import { claimSlot, prepareServer } from './slots.js'
import { newState, readState, writeState } from './state.js'
import type { OpenSyncedOptions, SyncedAgentFS } from './types.js'

/**
 * Opens an agent on a local database that syncs with a Turso sync server (Turso Cloud, or
 * `tursodb --sync-server` locally) through `@tursodatabase/sync`. The first client creates the
 * schema; the others bootstrap from the server. Each client claims a slot on the server, so
 * the rows it creates never collide with another client's; conflicts are resolved by the
 * rules of `conflictRules` and reconciled after each pull.
 *
 * @example
 * const agent = await openSynced({ path: 'agent.db', sync: { url, authToken } })
 * await agent.fs.writeFile('/notes.md', 'hello')
 * await agent.sync.push()
 * await agent.close()
 */
export async function openSynced(options: OpenSyncedOptions): Promise<SyncedAgentFS> {
  const remote: SyncRemote = {
    url: options.sync.url,
    ...(options.sync.authToken === undefined ? {} : { authToken: options.sync.authToken }),
  }
  // As AgentFS.open does for a path: its folder must exist (a mistyped path plants nothing).
  const folder = dirname(resolve(options.path))
  if (!existsSync(folder))
    throw new AgentFsError(
      'CANT_OPEN',
      `the folder ${folder} does not exist; create it first (openSynced does not make folders)`,
    )
  const state = readState(options.path) ?? newState(remote.url)
  if (state.url.replace(/\/+$/, '') !== remote.url.replace(/\/+$/, ''))
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `${options.path} syncs with ${state.url}, not ${remote.url}; open it with that url, or use a new file`,
    )
  if (state.slot === undefined) {
    // The first open needs the server; later ones work offline until a push or pull.
    await prepareServer(remote)
    state.slot = await claimSlot(remote, state.clientId)
    writeState(options.path, state)
  }
  const slot = state.slot
  await ensureSchema(options, state, remote)

  let record = newPushRecord()
  const database = await connectClient(
    options,
    remote,
    conflictRules(() => record),
  )
  const allocator = slotIds(slot)
  const driver: TursoAsyncDriver = tursoAsyncDriver({
    database,
    name: 'turso-sync',
    sync: allocator,
    refuseSchemaChanges:
      'the schema of a synced database changes only through an AgentFS upgrade (the 0.7 sync engine aborts the process when it pushes a schema change); overlays and custom tables need a database that does not sync',
  })
  const { sync: _sync, path: _path, ...sdkOptions } = options
  let agent: AgentFS
  try {
    agent = await AgentFS.open({ ...sdkOptions, driver, migrate: false })
    // Before any pull: rows of this slot a pull brings in later, above these, are a peer's.
    await allocator.prime(agent.db)
  } catch (error) {
    await driver.close().catch(() => undefined)
    throw error
  }
  return withSync(agent, driver, database, { options, state, slot, remote, allocator }, (next) => {
    record = next
  })
}
