export type {
  AgentSync,
  OpenSyncedOptions,
  PullReport,
  SyncedAgentFS,
  SyncOptions,
  SyncStatus,
} from './open-synced.js'
export { openSynced } from './open-synced.js'
export type { Reconciliation, SyncConflict } from './reconcile.js'
export { reconcile } from './reconcile.js'
export type { PushRecord } from './rules.js'
export { conflictName, conflictRules } from './rules.js'
export type { SyncRemote } from './server.js'
export { serverExecute } from './server.js'
export type { ClientState } from './state.js'
export { readState as readSyncState, statePath as syncStatePath } from './state.js'
