export type { DatabaseKey } from '@agentfs/core'
export type { SynchronousMode } from '@agentfs/core/driver-kit'
export type {
  BetterSqlite3Cipher,
  BetterSqlite3Database,
  BetterSqlite3DriverConfig,
  BetterSqlite3Statement,
} from './better-sqlite3-driver.js'
export {
  BETTER_SQLITE3_CIPHERS,
  betterSqlite3Driver,
  checkEngineVersion,
} from './better-sqlite3-driver.js'
export type { KeySpec, RekeyOptions } from './rekey.js'
export { rekeyDatabase } from './rekey.js'
