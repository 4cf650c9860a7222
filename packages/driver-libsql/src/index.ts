export type {
  LibsqlClient,
  LibsqlDriverConfig,
  LibsqlInStatement,
  LibsqlResultSet,
  LibsqlTransaction,
} from './libsql-driver.js'
export { libsqlDriver } from './libsql-driver.js'
