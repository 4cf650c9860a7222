export type { SynchronousMode } from '@agentfs/core/driver-kit'
export type {
  NodeSqliteDatabase,
  NodeSqliteDriverConfig,
  NodeSqliteStatement,
} from './node-sqlite-driver.js'
export { nodeSqliteDriver, nodeSqliteProblem } from './node-sqlite-driver.js'
