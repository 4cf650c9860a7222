import { randomInt } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { AgentFsError, fsck, MAX_SLOT, SCHEMA_VERSION, slotIds } from '@agentfs/core'
import { type TursoAsyncDriver, tursoAsyncDriver } from '@agentfs/driver-turso'
import { AgentFS, type AgentFSOptions } from '@agentfs/sdk'
import { connect, type Database } from '@tursodatabase/sync'
import { reconcile, SYNC_TABLES, type SyncConflict } from './reconcile.js'
import { conflictRules, type PushRecord } from './rules.js'
import { type SyncRemote, serverExecute } from './server.js'
import { type ClientState, newState, readState, writeState } from './state.js'

/** Where and how a database syncs. */
export interface SyncOptions extends SyncRemote {
  /** A name for this client in the server's records (default: none). */
  readonly clientName?: string
  /**
   * Sync in the background every this many ms (push, pull, reconcile), with ±25% jitter so
   * clients spread out. Default: off; call `agent.sync.pull()` and `push()` yourself.
   */
  readonly intervalMs?: number
  /** Called for every conflict this client resolves (it is also logged in the database). */
  readonly onConflict?: (conflict: SyncConflict) => void
  /** Called when a background sync fails (the next one still runs). */
  readonly onError?: (error: unknown) => void
  /** How long to wait for another client that is creating or upgrading the schema (ms, 30000). */
  readonly waitForSchemaMs?: number
}

/** Options of {@link openSynced}: the SDK's, for a local file that syncs with a server. */
export interface OpenSyncedOptions
  extends Omit<AgentFSOptions, 'driver' | 'path' | 'id' | 'dir' | 'migrate' | 'synchronous'> {
  /** The local database file (the sync engine keeps `-wal`, `-info` and `-changes` beside it). */
  readonly path: string
  readonly sync: SyncOptions
}

/** What {@link AgentSync.status} reports. */
export interface SyncStatus {
  readonly url: string
  readonly clientId: string
  /** This client's slot: its ids are `slot · 2^32 + n`. */
  readonly slot: number
  readonly lastPushMs: number | undefined
  readonly lastPullMs: number | undefined
  /** Replaced files and kv writes pushed and not yet checked against the server. */
  readonly unreconciled: number
  /** Bytes sent and received by this client since the database was created. */
  readonly networkSentBytes: number
  readonly networkReceivedBytes: number
  /** True while background sync runs. */
  readonly background: boolean
}

/** What one {@link AgentSync.pull} did. */
export interface PullReport {
  /** True when the pull brought changes from other clients. */
  readonly changed: boolean
  /** Conflicts resolved by this client during it. */
  readonly conflicts: readonly SyncConflict[]
}

/** The sync controls of a synced agent (`agent.sync`). */
export interface AgentSync {
  /**
   * Sends this client's changes, with the conflict rules applied on the server. If the push
   * fails part-way (the server may have applied some changes), it pulls, reconciles, logs a
   * `push-failed` conflict and rejects with a `REMOTE` error.
   */
  push(): Promise<void>
  /**
   * Pushes pending changes first (the engine would otherwise replay them over the pulled state
   * without the conflict rules), pulls, reconciles (conflict copies, stranded entries, link
   * counts, kv losses) and pushes what reconciliation changed.
   */
  pull(): Promise<PullReport>
  status(): Promise<SyncStatus>
  /** The conflict log of every client, oldest first. */
  conflicts(): Promise<SyncConflict[]>
  /** Starts background sync (see `SyncOptions.intervalMs`). */
  start(intervalMs?: number): void
  /** Stops background sync, after the running round. */
  stop(): Promise<void>
}

/** An agent on a synced database. `close()` also stops background sync. */
export type SyncedAgentFS = AgentFS & { readonly sync: AgentSync }

const SLOT_TABLE =
  'CREATE TABLE IF NOT EXISTS agentfs_sync_slot (slot INTEGER PRIMARY KEY, client_id TEXT NOT NULL, claimed_at INTEGER NOT NULL)'
const CLAIM =
  'INSERT INTO agentfs_sync_slot (slot, client_id, claimed_at) VALUES (?, ?, unixepoch()) ON CONFLICT(slot) DO NOTHING RETURNING slot'

async function claim(remote: SyncRemote, slot: number, clientId: string): Promise<boolean> {
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
export async function ensureSchema(
  options: OpenSyncedOptions,
  state: ClientState,
  remote: SyncRemote,
  target = SCHEMA_VERSION,
): Promise<void> {
  const open = (transform?: ReturnType<typeof conflictRules>) =>
    connect({
      path: options.path,
      url: remote.url,
      ...(remote.authToken === undefined ? {} : { authToken: remote.authToken }),
      ...(options.sync.clientName === undefined ? {} : { clientName: options.sync.clientName }),
      ...(transform === undefined ? {} : { transform }),
    })
  let db = await open()
  try {
    const version = await schemaVersion(db)
    if (version >= target) return
    if (version > 0) {
      // Row changes this copy has not pushed go through the conflict rules first: the
      // connection below has none (it carries the schema change) and would send them as they are.
      await db.close()
      const record: PushRecord = { swaps: [], kv: [], freed: new Set(), kvTimes: new Map() }
      db = await open(conflictRules(record))
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
  // As AgentFS.open does for a path: the folder is made on demand.
  mkdirSync(dirname(resolve(options.path)), { recursive: true })
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

  let record: PushRecord = { swaps: [], kv: [], freed: new Set(), kvTimes: new Map() }
  const rules = conflictRules({
    get swaps() {
      return record.swaps
    },
    get kv() {
      return record.kv
    },
    get freed() {
      return record.freed
    },
    get kvTimes() {
      return record.kvTimes
    },
  })
  const database = await connect({
    path: options.path,
    url: remote.url,
    ...(remote.authToken === undefined ? {} : { authToken: remote.authToken }),
    ...(options.sync.clientName === undefined ? {} : { clientName: options.sync.clientName }),
    transform: rules,
  })
  const driver: TursoAsyncDriver = tursoAsyncDriver({
    database,
    name: 'turso-sync',
    sync: slotIds(slot),
  })
  const { sync: _sync, path: _path, ...sdkOptions } = options
  let agent: AgentFS
  try {
    agent = await AgentFS.open({ ...sdkOptions, driver, migrate: false })
  } catch (error) {
    await driver.close().catch(() => undefined)
    throw error
  }
  return withSync(agent, driver, database, { options, state, slot, remote }, (next) => {
    record = next
  })
}

interface Context {
  readonly options: OpenSyncedOptions
  readonly state: ClientState
  readonly slot: number
  readonly remote: SyncRemote
}

function withSync(
  agent: AgentFS,
  driver: TursoAsyncDriver,
  database: Database,
  { options, state, slot, remote }: Context,
  useRecord: (record: PushRecord) => void,
): SyncedAgentFS {
  const save = () => writeState(options.path, state)
  const report = (conflicts: readonly SyncConflict[]) => {
    for (const conflict of conflicts) options.sync.onConflict?.(conflict)
  }

  /** One push, holding the connection; what the rules saw is kept for reconciliation. */
  const pushOnce = () =>
    driver.exclusive(async () => {
      const record: PushRecord = { swaps: [], kv: [], freed: new Set(), kvTimes: new Map() }
      useRecord(record)
      try {
        await database.push()
      } finally {
        // Kept even when the push failed: the server may have applied part of it.
        state.swaps.push(...record.swaps)
        state.kv.push(...record.kv)
        save()
      }
      state.lastPushMs = Date.now()
      save()
    })

  const reconcileNow = async (): Promise<{ conflicts: SyncConflict[]; changed: boolean }> => {
    const swaps = state.swaps.length
    const kv = state.kv.length
    const result = await reconcile(agent.db, slot, {
      swaps: state.swaps.slice(0, swaps),
      kv: state.kv.slice(0, kv),
    })
    state.swaps.splice(0, swaps)
    state.kv.splice(0, kv)
    save()
    report(result.conflicts)
    return result
  }

  const pullNow = async (): Promise<PullReport> => {
    await pushOnce()
    let changed: boolean
    try {
      changed = await driver.exclusive(() => database.pull())
    } catch {
      // A local write between the push and the pull that the engine cannot replay over the
      // pulled state (a name taken meanwhile): push it through the rules, then pull again.
      await pushOnce()
      changed = await driver.exclusive(() => database.pull())
    }
    state.lastPullMs = Date.now()
    save()
    const result = await reconcileNow()
    if (result.changed) await pushOnce()
    return { changed, conflicts: result.conflicts }
  }

  /** One sync operation at a time (a background round and a caller's call take turns). */
  let chain: Promise<unknown> = Promise.resolve()
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = chain.then(fn, fn)
    chain = next.catch(() => undefined)
    return next
  }

  const push = () =>
    serial(async () => {
      try {
        await pushOnce()
      } catch (error) {
        let detail = (error as Error).message
        try {
          await pullNow()
          // What a partly applied push can leave behind that the rules do not cover: checked,
          // and the safe findings repaired (they are pushed with the next round).
          const check = await fsck(agent.db, { repair: true })
          const left = check.findings.length - check.repaired.length
          detail += `; pulled and reconciled; fsck: ${check.findings.length} finding(s), ${check.repaired.length} repaired${left > 0 ? `, ${left} left (run agentfs fsck)` : ''}`
        } catch (pullError) {
          detail += `; the pull after it failed too: ${(pullError as Error).message}`
        }
        const conflict: SyncConflict = {
          slot,
          atMs: Date.now(),
          kind: 'push-failed',
          path: '/',
          detail,
        }
        await agent.db
          .execute({
            sql: "INSERT INTO agentfs_sync_conflict (slot, seq, at_ms, kind, path, detail) SELECT ?, coalesce(max(seq), 0) + 1, ?, 'push-failed', '/', ? FROM agentfs_sync_conflict WHERE slot = ?",
            params: [slot, conflict.atMs, detail, slot],
          })
          .catch(() => undefined)
        report([conflict])
        throw new AgentFsError(
          'REMOTE',
          `push to ${remote.url} failed (${(error as Error).message}); the server may have applied part of it, so this client pulled and reconciled: see agent.sync.conflicts()`,
          { cause: error },
        )
      }
    })

  let timer: NodeJS.Timeout | undefined
  let running: Promise<unknown> = Promise.resolve()
  let active = false
  const schedule = (intervalMs: number) => {
    const delay = intervalMs * (0.75 + Math.random() * 0.5)
    timer = setTimeout(() => {
      running = serial(pullNow)
        .catch((error: unknown) => options.sync.onError?.(error))
        .finally(() => {
          if (active) schedule(intervalMs)
        })
    }, delay)
    timer.unref()
  }

  const sync: AgentSync = {
    push,
    pull: () => serial(pullNow),
    async status() {
      const stats = await driver.exclusive(() => database.stats())
      return {
        url: remote.url,
        clientId: state.clientId,
        slot,
        lastPushMs: state.lastPushMs,
        lastPullMs: state.lastPullMs,
        unreconciled: state.swaps.length + state.kv.length,
        networkSentBytes: stats.networkSentBytes,
        networkReceivedBytes: stats.networkReceivedBytes,
        background: active,
      }
    },
    async conflicts() {
      const { rows } = await agent.db.execute<{
        slot: number
        at_ms: number
        kind: SyncConflict['kind']
        path: string
        detail: string
      }>({
        sql: 'SELECT slot, at_ms, kind, path, detail FROM agentfs_sync_conflict ORDER BY at_ms, slot, seq',
      })
      return rows.map((row) => ({
        slot: row.slot,
        atMs: row.at_ms,
        kind: row.kind,
        path: row.path,
        detail: row.detail,
      }))
    },
    start(intervalMs = options.sync.intervalMs ?? 2000) {
      if (active) return
      if (!(intervalMs > 0))
        throw new AgentFsError('INVALID_ARGUMENT', `sync interval ${intervalMs} ms is not positive`)
      active = true
      schedule(intervalMs)
    },
    async stop() {
      active = false
      if (timer !== undefined) clearTimeout(timer)
      await running
    },
  }
  const close = agent.close.bind(agent)
  Object.defineProperty(agent, 'sync', { value: sync, enumerable: true })
  Object.defineProperty(agent, 'path', { value: options.path, enumerable: true })
  Object.defineProperty(agent, 'close', {
    value: async () => {
      await sync.stop()
      await chain
      await close()
      await driver.close()
    },
  })
  if (options.sync.intervalMs !== undefined) sync.start(options.sync.intervalMs)
  return agent as SyncedAgentFS
}
