export type { SynchronousMode } from '@agentfs/core/driver-kit'
export type {
  BetterSqlite3Database,
  BetterSqlite3DriverConfig,
  BetterSqlite3Statement,
} from './better-sqlite3-driver.js'
export { betterSqlite3Driver, checkEngineVersion } from './better-sqlite3-driver.js'
