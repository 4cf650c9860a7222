import type { SyncConnection, SyncStatement } from './kit-types.js'

/**
 * The database object of a binding with better-sqlite3's surface (better-sqlite3 itself, the
 * `libsql` engine, the Turso engine's compat API): what {@link connectionOver} reads.
 */
export interface BetterSqliteLikeDatabase {
  readonly open: boolean
  readonly inTransaction: boolean
  exec(sql: string): unknown
  close(): unknown
}

/**
 * A {@link SyncConnection} over such a database: its open and transaction state, `exec` and
 * `close` as they are, `prepare` from the adapter. `guard` wraps `exec`, for bindings whose
 * errors the adapter rewrites before the kit maps them.
 */
export function connectionOver(
  db: BetterSqliteLikeDatabase,
  parts: {
    readonly file: string | undefined
    readonly readonly: boolean
    prepare(sql: string): SyncStatement
    /** See `SyncConnection.prepareArrays`. */
    prepareArrays?(sql: string): SyncStatement
    /** See `SyncConnection.preparePluck`. */
    preparePluck?(sql: string): SyncStatement
    guard?<T>(fn: () => T): T
  },
): SyncConnection {
  const guard = parts.guard ?? (<T>(fn: () => T): T => fn())
  const prepareArrays = parts.prepareArrays
  const preparePluck = parts.preparePluck
  return {
    ...(prepareArrays ? { prepareArrays: (sql: string) => prepareArrays(sql) } : {}),
    ...(preparePluck ? { preparePluck: (sql: string) => preparePluck(sql) } : {}),
    file: parts.file,
    readonly: parts.readonly,
    get isOpen() {
      return db.open
    },
    get inTransaction() {
      return db.inTransaction
    },
    prepare: (sql) => parts.prepare(sql),
    exec(sql: string) {
      guard(() => db.exec(sql))
    },
    close() {
      db.close()
    },
  }
}
