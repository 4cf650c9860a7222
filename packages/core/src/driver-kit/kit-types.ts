// The shapes a binding adapter gives the driver kit (see `createSyncDriver`).

/** A prepared statement of a synchronous, in-process SQLite binding. */
export interface SyncStatement {
  /** True when the statement returns rows (SELECT, PRAGMA, … RETURNING). */
  readonly reader: boolean
  /** True when the statement cannot change the database. */
  readonly readonly: boolean
  /** Runs a reader; integers come back as bigint (the kit narrows safe ones to numbers). */
  all(params: readonly unknown[]): unknown[]
  /**
   * Optional, for read-only statements: runs it with integers as JS numbers (cheaper than
   * bigints; exact below 2^53). Returns undefined when the binding refuses an integer it cannot
   * represent. The kit checks the rows and, when any number reaches 2^53 in magnitude (an
   * integer may have been rounded) or undefined came back, runs {@link all} instead.
   */
  allNumbers?(params: readonly unknown[]): unknown[] | undefined
  /**
   * Optional, for read-only statements: {@link allNumbers} for the first row alone (a
   * statement run with `first`): one row or none; undefined when the binding refuses an
   * integer (the kit then reads the rows again, as bigints where needed).
   */
  firstNumbers?(params: readonly unknown[]): unknown[] | undefined
  /** Runs a writer. */
  run(params: readonly unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint }
}

/**
 * A connection of a synchronous, in-process SQLite binding (better-sqlite3, `node:sqlite`): all
 * a driver written with {@link createSyncDriver} must supply. Errors are thrown as the binding
 * throws them; the kit maps them with `mapSqliteError`.
 */
export interface SyncConnection {
  /** The file, or undefined for an in-memory database. */
  readonly file: string | undefined
  readonly readonly: boolean
  readonly isOpen: boolean
  readonly inTransaction: boolean
  prepare(sql: string): SyncStatement
  /**
   * Optional: prepares `sql` so that its readers return rows as arrays of the select list's
   * values (see `Statement.arrays`). Without it the kit converts the object rows.
   */
  prepareArrays?(sql: string): SyncStatement
  /**
   * Optional: prepares `sql` so that its readers return each row's one value (see
   * `Statement.pluck`). Without it the kit takes the first value of each row.
   */
  preparePluck?(sql: string): SyncStatement
  exec(sql: string): void
  close(): void
}

/** `PRAGMA synchronous` levels. */
export type SynchronousMode = 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA'

/** The options every local driver written with the kit offers its users. */
export interface SyncDriverOptions {
  /** `PRAGMA synchronous` (default `NORMAL`; `FULL` fsyncs every commit). */
  readonly synchronous?: SynchronousMode
  /**
   * How long to wait for another connection's write lock, in ms (default 5000). The wait is
   * asynchronous (see `retryBusy`), so connections in the same process do not deadlock.
   */
  readonly busyTimeoutMs?: number
  /** WAL file size kept after checkpoints, in bytes (default 4 MiB). */
  readonly journalSizeLimit?: number
  /**
   * A transaction that binds more than this many bytes is followed by
   * `PRAGMA wal_checkpoint(TRUNCATE)`, so one large write does not leave a WAL of its size on
   * disk (default 8 MiB; `Infinity` turns it off). Best effort: skipped while readers block it.
   */
  readonly truncateWalAfterBytes?: number
  /** Prepared statements kept (first in, first out), default 256. */
  readonly statementCacheSize?: number
}

/** What a binding adapter gives {@link createSyncDriver}. */
export interface SyncDriverSpec extends SyncDriverOptions {
  /** The driver's name (`Driver.name`). */
  readonly name: string
  /** What is opened, for errors (a path; default `database`). */
  readonly target?: string
  /** True for an in-memory database (known before it is opened). */
  readonly memory: boolean
  /**
   * Opens the connection, on first use. Called again after a failed ROLLBACK closed the
   * connection, unless `reopenable` is false.
   */
  readonly open: () => SyncConnection | Promise<SyncConnection>
  /** False when the connection was handed in open and cannot be opened again. */
  readonly reopenable: boolean
  /** How a byte array is bound (default: as it is). */
  readonly blob?: (value: Uint8Array) => unknown
  /**
   * For bindings that free a result set's native memory in a finalizer Node runs only when the
   * event loop turns (N-API finalizers that may call JavaScript are deferred to `setImmediate`):
   * after this many row-returning statements, the next call first waits one event-loop turn.
   * Without it, a caller that awaits call after call never yields to the event loop and the
   * unreleased memory grows with every read. Default: never.
   */
  readonly turnEventLoopEvery?: number
  /** False when the engine has no `WITH RECURSIVE` (see `DriverCapabilities.recursiveQueries`). */
  readonly recursiveQueries?: boolean
  /** False when the engine has no FTS5 (see `DriverCapabilities.fullTextSearch`). */
  readonly fullTextSearch?: boolean
  /**
   * False when the engine lacks `pragma_data_version` or `total_changes()` (see
   * `DriverCapabilities.snapshotTokens`). Default true: SQLite's.
   */
  readonly snapshotTokens?: boolean
  /** True when the binding opens the file with a key (see `DriverCapabilities.encrypted`). */
  readonly encrypted?: boolean
}
