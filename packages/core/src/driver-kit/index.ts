/**
 * The driver kit: what every AgentFS driver needs and none should write again. A driver over a
 * synchronous binding is an adapter to {@link SyncConnection} passed to
 * {@link createSyncDriver}; an asynchronous one (libSQL, a remote engine) uses the pieces:
 * `retryBusy`, the per-file `FileLock`, `lazyConnection` and the value helpers.
 */
export { isBusyError, retryBusy } from '../driver/busy-retry.js'
export { Mutex, sharedMutex } from '../driver/mutex.js'
export type { BetterSqliteLikeDatabase } from './connection.js'
export { connectionOver } from './connection.js'
export type { DatabaseKey } from './encryption.js'
export {
  fileHeader,
  isNotADatabase,
  keyBytes,
  proveOpens,
  wrongKeyError,
} from './encryption.js'
export type {
  SyncConnection,
  SyncDriverOptions,
  SyncDriverSpec,
  SynchronousMode,
  SyncStatement,
} from './kit-types.js'
export type { LocalDriverConfig } from './lazy.js'
export { FileLock, lazyConnection, localSource } from './lazy.js'
export type { ModalStatement } from './statement.js'
export { statementOver } from './statement.js'
export { createSyncDriver } from './sync-driver.js'
export { bindIntegers, convertRows } from './values.js'
