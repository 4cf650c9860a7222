export { openSynced } from './open-synced.js'
export type { Reconciliation, SyncConflict } from './reconcile.js'
export { reconcile } from './reconcile.js'
export type { PushRecord } from './rules.js'
export { conflictName, conflictRules } from './rules.js'
export { ensureSchema } from './schema.js'
export type { SyncRemote } from './server.js'
export { serverExecute } from './server.js'
export { claimSlot, prepareServer } from './slots.js'
export type { ClientState } from './state.js'
export { readState as readSyncState, statePath as syncStatePath } from './state.js'
export type {
  AgentSync,
  OpenSyncedOptions,
  PullReport,
  SyncedAgentFS,
  SyncOptions,
  SyncStatus,
} from './types.js'
