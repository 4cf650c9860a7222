import type { Queryable } from './guard-driver.js'

/**
 * The key under which a store (a filesystem, a kv store, an audit log) tells which database it
 * runs its statements on. One symbol per process, even when two copies of this package are
 * loaded.
 */
export const STORE_DATABASE: unique symbol = Symbol.for('agentfs.store-database') as never

/**
 * The database `store` runs on, or undefined for anything that is not a database store. Two
 * stores can share one transaction (`bind`) only when this is the same object for both.
 */
export function databaseOf(store: unknown): Queryable | undefined {
  if (store === null || (typeof store !== 'object' && typeof store !== 'function')) return undefined
  let db: unknown
  try {
    db = (store as { [STORE_DATABASE]?: unknown })[STORE_DATABASE]
  } catch {
    // A wrapper (a Proxy) that does not pass the store's own fields through is not one.
    return undefined
  }
  return db !== null && typeof db === 'object' && 'transaction' in db
    ? (db as Queryable)
    : undefined
}
