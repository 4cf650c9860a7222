export type {
  LibsqlClient,
  LibsqlInStatement,
  LibsqlResultSet,
  LibsqlTransaction,
} from './client.js'
export type { LibsqlDriverConfig } from './libsql-driver.js'
export { libsqlDriver } from './libsql-driver.js'
