export type {
  TursoAsyncDatabase,
  TursoAsyncDriver,
  TursoAsyncDriverOptions,
  TursoAsyncStatement,
} from './async-driver.js'
export { tursoAsyncDriver } from './async-driver.js'
export type { TursoDatabase, TursoDriverConfig, TursoStatement } from './turso-driver.js'
export { tursoDriver } from './turso-driver.js'
