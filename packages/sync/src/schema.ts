import { AgentFsError, SCHEMA_VERSION } from '@agentfs/core'
import { tursoAsyncDriver } from '@agentfs/driver-turso'
import { AgentFS } from '@agentfs/sdk'
import { connect, type Database } from '@tursodatabase/sync'
import { SYNC_TABLES } from './reconcile.js'
import { conflictRules, newPushRecord } from './rules.js'
import type { SyncRemote } from './server.js'
import { claim } from './slots.js'
import { type ClientState, writeState } from './state.js'
import type { OpenSyncedOptions } from './types.js'

async function schemaVersion(db: Database): Promise<number> {
  try {
    const meta = (await (
      await db.prepare("SELECT value FROM agentfs_meta WHERE key = 'schema_version'")
    ).all()) as Array<{ value: unknown }>
    await (await db.prepare('SELECT 1 FROM agentfs_sync_conflict LIMIT 1')).all()
    return Number(meta[0]?.value ?? 0)
  } catch {
    return 0
  }
}

/**
 * Brings the synced schema to this version: one client (the one that claims the version on the
 * server) creates or upgrades it and pushes at once; the others wait for it. Schema changes are
 * pushed from a connection without the conflict rules (the 0.7 engine aborts the process when
 * a push with a transform carries DDL).
 */
/** This client's connection to its synced file, with the conflict rules or without them. */
export function connectClient(
  options: OpenSyncedOptions,
  remote: SyncRemote,
  transform?: ReturnType<typeof conflictRules>,
): Promise<Database> {
  return connect({
    path: options.path,
    url: remote.url,
    ...(remote.authToken === undefined ? {} : { authToken: remote.authToken }),
    ...(options.sync.clientName === undefined ? {} : { clientName: options.sync.clientName }),
    ...(transform === undefined ? {} : { transform }),
  })
}

export async function ensureSchema(
  options: OpenSyncedOptions,
  state: ClientState,
  remote: SyncRemote,
  target = SCHEMA_VERSION,
): Promise<void> {
  const open = (transform?: ReturnType<typeof conflictRules>) =>
    connectClient(options, remote, transform)
  let db = await open()
  try {
    const version = await schemaVersion(db)
    if (version >= target) return
    if (version > 0) {
      // Row changes this copy has not pushed go through the conflict rules first: the
      // connection below has none (it carries the schema change) and would send them as they are.
      await db.close()
      const record = newPushRecord()
      db = await open(conflictRules(() => record))
      await db.push()
      state.swaps.push(...record.swaps)
      state.kv.push(...record.kv)
      writeState(options.path, state)
      await db.close()
      db = await open()
    }
    if (await claim(remote, -target, state.clientId)) {
      const driver = tursoAsyncDriver({ database: db, name: 'turso-sync' })
      const agent = await AgentFS.open({ driver })
      await agent.db.execute({ sql: SYNC_TABLES })
      await driver.exclusive(() => db.push())
      await agent.close()
      return
    }
    const deadline = Date.now() + (options.sync.waitForSchemaMs ?? 30_000)
    while (Date.now() < deadline) {
      await db.pull()
      if ((await schemaVersion(db)) >= target) return
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    throw new AgentFsError(
      'REMOTE',
      `another client is creating or upgrading the AgentFS schema on ${remote.url} and has not pushed it; retry later, or open with that client`,
    )
  } finally {
    await db.close().catch(() => undefined)
  }
}
