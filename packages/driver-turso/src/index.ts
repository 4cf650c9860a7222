export type { TursoDatabase, TursoDriverConfig, TursoStatement } from './turso-driver.js'
export { tursoDriver } from './turso-driver.js'
