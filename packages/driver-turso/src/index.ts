export type {
  TursoAsyncDatabase,
  TursoAsyncDriver,
  TursoAsyncDriverOptions,
  TursoAsyncStatement,
} from './async-driver.js'
export { tursoAsyncDriver } from './async-driver.js'
export type {
  TursoCipher,
  TursoDatabase,
  TursoDriverConfig,
  TursoStatement,
} from './turso-driver.js'
export { TURSO_CIPHERS, tursoDriver } from './turso-driver.js'
