/**
 * A value crossing the driver seam. Drivers MUST map: INTEGER → number (bigint when outside
 * ±(2^53−1)), REAL → number, TEXT → string, BLOB → Uint8Array, NULL → null.
 */
export type SqlValue = null | number | bigint | string | Uint8Array

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER)

/**
 * An INTEGER the engine returned as a bigint, as {@link SqlValue} wants it: a number when it
 * fits in ±(2^53−1), the bigint itself otherwise. For driver authors.
 */
export function fromSqlInteger(value: bigint): number | bigint {
  return value <= MAX_SAFE && value >= MIN_SAFE ? Number(value) : value
}

/** Rows as arrays of their values in column order (see `Statement.arrays`); arrays stay. */
export function arrayRowsOf(rows: readonly unknown[]): unknown[] {
  return rows.map((row) => (Array.isArray(row) ? row : Object.values(row as object)))
}

/** Each row's first value (see `Statement.pluck`), from object or array rows. */
export function pluckedRowsOf(rows: readonly unknown[]): unknown[] {
  return rows.map((row) => (Array.isArray(row) ? row[0] : Object.values(row as object)[0]))
}

/** One SQL statement with positional (`?`) parameters. */
export interface Statement {
  readonly sql: string
  readonly params?: readonly SqlValue[]
  /**
   * Rows as arrays of the select list's values in its order, instead of objects (cheaper on
   * wide rows). Drivers whose capabilities say `arrayRows` build them; for the others the
   * guarded handle converts each object, so give the columns distinct, non-numeric names.
   */
  readonly arrays?: boolean
  /**
   * The rows are the values of the statement's one column, not objects or arrays
   * (better-sqlite3's `pluck`): no container per row, which on short rows is much of a row's
   * cost. Drivers whose capabilities say `pluckRows` return them so; for the others the guarded
   * handle takes each row's first value. Select one column.
   */
  readonly pluck?: boolean
  /**
   * Only the first row is wanted (a lookup by a unique key, a one-row aggregate): a driver may
   * stop after it (callers read `rows[0]` alone). In-process drivers then step the statement once
   * (better-sqlite3's and `node:sqlite`'s `get`) instead of collecting every row.
   */
  readonly first?: boolean
}

/** The result of one statement. */
export interface QueryResult<Row = Record<string, SqlValue>> {
  /** Rows in engine order; empty for statements that return none. */
  readonly rows: Row[]
  /** Rows changed by INSERT/UPDATE/DELETE (`sqlite3_changes`); 0 for reads. */
  readonly changes: number
  /** `sqlite3_last_insert_rowid` after an INSERT, when the engine reports it. */
  readonly lastInsertRowid?: bigint
}

/** Something that runs statements: a driver, or a transaction handle. */
export interface Executor {
  /**
   * Runs one statement. MUST reject with an AgentFsError (see `mapSqliteError`) on failure.
   * MUST NOT keep a reference to `statement.params` after the promise settles.
   */
  execute<Row = Record<string, SqlValue>>(statement: Statement): Promise<QueryResult<Row>>
  /**
   * Optional, inside a transaction only: queues a statement whose result the caller does not
   * need, so that a remote driver can send it with the transaction's next statement or with its
   * COMMIT, in one round trip. A driver that offers it MUST run queued statements in order,
   * before any later statement of the transaction and before COMMIT. If a queued statement
   * fails, the call that sent it rejects with its error and so does every later call, and the
   * transaction rolls back whatever its callback returns. Callers use {@link executeDeferred}.
   */
  defer?(statement: Statement): void
  /**
   * Optional: runs `statement` at once, synchronously, when it can run without waiting (an
   * in-process engine whose connection is free), and returns its result; returns undefined,
   * having done nothing, when it would have to wait (a lock, a busy database, a turn of the event
   * loop), and the caller then uses {@link Executor.execute}. Throws what `execute` rejects
   * with. It saves the promises of a call that never waits; callers need not use it.
   */
  executeNow?<Row = Record<string, SqlValue>>(statement: Statement): QueryResult<Row> | undefined
  /**
   * Optional, outside a transaction only: runs the read-only statement `read`, then the
   * statement `next` returns for its result (if any) in the same transaction, which takes the
   * write lock only when that second statement runs (SQLite's `BEGIN DEFERRED`): a read that
   * sometimes writes (an access time) in one lock cycle instead of two. `next` runs
   * synchronously between the two and MUST NOT run statements itself. A failure of the second
   * statement rolls it back, leaves the read standing and is returned as `followError`.
   * Callers use {@link readThen}, which runs the two apart where a driver has no such method.
   */
  readThen?<Row = Record<string, SqlValue>>(
    read: Statement,
    next: (result: QueryResult<Row>) => Statement | undefined,
  ): Promise<ReadThen<Row>>
}

/** What {@link readThen} did: the read's result, and whether the second statement ran. */
export interface ReadThen<Row> {
  readonly result: QueryResult<Row>
  /** The second statement ran and committed. */
  readonly followed: boolean
  /** Why the second statement did not commit, when it was asked for and failed. */
  readonly followError?: unknown
}

/**
 * Runs `statement` and maps its result with `then`: at once when `q` can run it without waiting
 * ({@link Executor.executeNow}), so the answer costs one promise, else through `execute`. Errors,
 * including `then`'s, reject the promise. Give `then` as a function made once (a module-level
 * one), not a closure per call, on hot paths.
 */
export function executeThen<Row, T>(
  q: Executor,
  statement: Statement,
  then: (result: QueryResult<Row>) => T,
): Promise<T> {
  try {
    const result = q.executeNow?.<Row>(statement)
    if (result !== undefined) return Promise.resolve(then(result))
  } catch (error) {
    return Promise.reject(error)
  }
  return q.execute<Row>(statement).then(then)
}

/**
 * `now(statement)` as a settled promise (a throw as a rejection), or undefined when it could not
 * run now: the fast path of an `execute` built on its own {@link Executor.executeNow}.
 */
export function settledNow<Row>(
  now: NonNullable<Executor['executeNow']>,
  statement: Statement,
): Promise<QueryResult<Row>> | undefined {
  try {
    const result = now<Row>(statement)
    return result === undefined ? undefined : Promise.resolve(result)
  } catch (error) {
    return Promise.reject(error)
  }
}

/**
 * Runs `read`, then the statement `next` returns for its result, if any: in one transaction on
 * executors that offer {@link Executor.readThen}, otherwise as two statements. The second
 * statement's failure is returned (`followError`), not thrown: the read stands.
 */
export async function readThen<Row = Record<string, SqlValue>>(
  executor: Executor,
  read: Statement,
  next: (result: QueryResult<Row>) => Statement | undefined,
): Promise<ReadThen<Row>> {
  if (executor.readThen !== undefined) return executor.readThen(read, next)
  const result = await executor.execute<Row>(read)
  const follow = next(result)
  if (follow === undefined) return { result, followed: false }
  try {
    await executor.execute(follow)
    return { result, followed: true }
  } catch (followError) {
    return { result, followed: false, followError }
  }
}

/** `?, ?, …`: the parameter list of `count` values (an `IN (…)` or a `VALUES (…)`). */
export function placeholders(count: number): string {
  return count <= 0 ? '' : `?${', ?'.repeat(count - 1)}`
}

/**
 * Runs a statement whose result is not needed: queued with `defer` where the executor offers
 * it (a remote transaction sends it with the next statement), else executed and awaited. Use it
 * only where the statement's own failure needs no handling of its own: the error may surface
 * from a later statement of the transaction.
 */
export function executeDeferred(executor: Executor, statement: Statement): Promise<void> {
  if (executor.defer === undefined) return executor.execute(statement).then(() => undefined)
  try {
    executor.defer(statement)
  } catch (error) {
    return Promise.reject(error)
  }
  return Promise.resolve()
}

/**
 * Runs `statements` in order inside a transaction and gives the last one's result: at once, as a
 * value, while the executor's `executeNow` runs them (an in-process engine); the rest one after
 * another, the ones before the last queued where the executor can (`defer`: a remote driver
 * sends them with the last). Used by writes whose statements are known before the first runs.
 */
export function runInOrder<Row = Record<string, SqlValue>>(
  tx: Executor,
  statements: readonly Statement[],
): QueryResult<Row> | Promise<QueryResult<Row>> {
  const last = statements.length - 1
  let i = 0
  if (tx.defer === undefined && tx.executeNow !== undefined) {
    for (; i < last; i++) if (tx.executeNow(statements[i]!) === undefined) break
    if (i === last) {
      const result = tx.executeNow<Row>(statements[last]!)
      if (result !== undefined) return result
    }
  }
  return (async () => {
    for (; i < last; i++) await executeDeferred(tx, statements[i]!)
    return tx.execute<Row>(statements[last]!)
  })()
}

/**
 * The rowid an INSERT just made: its `lastInsertRowid` where the driver reports one, else asked
 * of the engine. Cheaper than `RETURNING` on some engines (the Turso engine spends about 0.2 ms
 * on any statement with it).
 */
export async function insertedRowid(
  executor: Executor,
  result: QueryResult<unknown>,
): Promise<number> {
  if (result.lastInsertRowid !== undefined) return Number(result.lastInsertRowid)
  const { rows } = await executor.execute<{ id: number }>({
    sql: 'SELECT last_insert_rowid() AS id',
  })
  return Number(rows[0]!.id)
}

/** What a driver can do; the core adapts to it. */
export interface DriverCapabilities {
  /**
   * True when the engine isolates concurrent transactions itself (a remote server that gives
   * each transaction its own stream). False for one local connection: the core then serialises
   * every call through a mutex so two async callers never interleave inside one BEGIN…COMMIT.
   */
  readonly concurrentTransactions: boolean
  /** True when the database lives in this process's memory and vanishes on close. */
  readonly inMemory: boolean
  /** True when the database is reached over the network. */
  readonly remote: boolean
  /**
   * False when each call or transaction may run on a connection of its own (a remote server's
   * streams), so a pragma set by one `execute` does not hold for the next; true or absent for
   * one connection.
   */
  readonly connectionPragmas?: boolean
  /**
   * False when the engine has no `WITH RECURSIVE` (the Turso engine 0.7): callers then use
   * their non-recursive path (a loop of plain statements). True or absent: SQLite's.
   */
  readonly recursiveQueries?: boolean
  /**
   * False when the engine has no FTS5 (the Turso engine 0.7): the full-text index then keeps
   * its words in a table of its own (`agentfs_search_posting`), with the same results. True:
   * FTS5 is there. Absent: the index asks the engine (`pragma_module_list`).
   */
  readonly fullTextSearch?: boolean
  /**
   * True when the engine has libSQL's vector functions (`vector32`, `vector_distance_cos`):
   * semantic search then ranks in SQL. False or absent: in JavaScript, with the same results.
   */
  readonly vectors?: boolean
  /**
   * True when the database file (and its WAL) is encrypted at rest with a key the driver was
   * given. Absent or false: stored as SQLite stores it, readable by anyone who can read the file.
   */
  readonly encrypted?: boolean
  /**
   * True when every statement of the top-level handle runs on one connection where
   * `pragma_data_version` and `total_changes()` behave as SQLite's: the core may then keep
   * caches of what the database said, validated per statement (see `snapshotSource`). Absent:
   * no such caches (remote streams, engines without the pragma, clients that swap connections).
   */
  readonly snapshotTokens?: boolean
  /** The driver returns rows as arrays for a statement with `arrays` (else the guard converts). */
  readonly arrayRows?: boolean
  /** The driver returns values for a statement with `pluck` (else the guard converts). */
  readonly pluckRows?: boolean
  /**
   * Present on a database several clients sync (`@agentfs/sync`): rows get ids no other client
   * can choose, and whole-file writes replace the inode so concurrent rewrites cannot interleave
   * their chunks.
   */
  readonly sync?: SyncCapabilities
}

/** The tables whose rows a synced database gives explicit, client-unique ids. */
export type IdTable = 'fs_inode' | 'fs_dentry' | 'tool_calls' | 'agentfs_change'

/** How a synced database chooses ids and writes files (see `DriverCapabilities.sync`). */
export interface SyncCapabilities {
  /**
   * The id for a new row of `table`, unique among every client of the database. Called inside
   * the transaction that inserts the row, on its executor.
   */
  nextId(table: IdTable, executor: Executor): Promise<number>
  /**
   * True: a whole-file write (`writeFile`, truncating rewrites) of a file with one link writes a
   * new inode and points the entry at it, in the same transaction; the sync layer applies that
   * swap only if nobody swapped first.
   */
  readonly replaceOnRewrite: boolean
  /** The client's slot: whose rows this client seals in the audit chain (see `sealAudit`). */
  readonly slot?: number
}

/**
 * The seam between AgentFS and a SQLite-compatible engine. Small on purpose: everything else
 * (mutex, closed checks, savepoints, migrations) lives in the core wrapper, `guardDriver`.
 *
 * A driver MUST pass `runConformance` from `@agentfs/conformance`.
 */
export interface Driver extends Executor {
  /** Short name for messages and reports, e.g. `better-sqlite3`. */
  readonly name: string
  readonly capabilities: DriverCapabilities
  /**
   * Runs `fn` inside BEGIN IMMEDIATE … COMMIT. If `fn` rejects, the driver MUST roll back and
   * rethrow the same error. `tx` MUST run statements inside that transaction only.
   */
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T>
  /** Runs a multi-statement script (DDL, migrations). MUST stop at the first failing statement. */
  executeScript(sql: string): Promise<void>
  /** Releases the connection. MUST be idempotent. */
  close(): Promise<void>
}
