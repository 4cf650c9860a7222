import type { AgentFS, AgentFSOptions } from '@agentfs/sdk'
import type { SyncConflict } from './reconcile.js'
import type { SyncRemote } from './server.js'

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
  /** Why the last background round failed; absent once a round succeeds (or none failed). */
  readonly lastError?: { readonly atMs: number; readonly message: string }
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
