// How the Turso engine (0.7.2) reports errors and which statements need care, for both drivers.

/**
 * The engine throws every error with `code: 'GenericFailure'` and the condition in the message
 * (`step failed: Runtime error: UNIQUE constraint failed: kv.key (19)`). This gives it the
 * SQLite code that condition has, so the core maps it as it maps SQLite's.
 */
const CONDITIONS: ReadonlyArray<[RegExp, string]> = [
  [/PRIMARY KEY constraint failed/i, 'SQLITE_CONSTRAINT_PRIMARYKEY'],
  [/UNIQUE constraint failed/i, 'SQLITE_CONSTRAINT_UNIQUE'],
  [/NOT NULL constraint failed/i, 'SQLITE_CONSTRAINT_NOTNULL'],
  [/CHECK constraint failed/i, 'SQLITE_CONSTRAINT_CHECK'],
  [/FOREIGN KEY constraint failed/i, 'SQLITE_CONSTRAINT_FOREIGNKEY'],
  [/failed to open database.*locked by another process/i, 'SQLITE_CANTOPEN'],
  [/database is locked|database is busy|locked by another process/i, 'SQLITE_BUSY'],
  [/disk is full/i, 'SQLITE_FULL'],
  [/readonly database|read-only|query_only mode/i, 'SQLITE_READONLY'],
  [/not a database|file is encrypted|malformed|corrupt/i, 'SQLITE_CORRUPT'],
  [/unable to open|cannot open/i, 'SQLITE_CANTOPEN'],
  [/^prepare failed:|syntax error|no such (table|column)|Parse error/i, 'SQLITE_ERROR'],
]

export function engineError(error: unknown): unknown {
  if (!(error instanceof Error) || (error as { code?: unknown }).code !== 'GenericFailure')
    return error
  const code = CONDITIONS.find(([pattern]) => pattern.test(error.message))?.[1]
  if (code === undefined) return error
  if (code === 'SQLITE_CANTOPEN' && /locked by another process/i.test(error.message)) {
    const file = /failed to open database (.*?): Locking error/i.exec(error.message)?.[1]
    return Object.assign(
      new Error(
        `${file ?? 'the database'} is open in another process, and the Turso engine allows one process per file: close it there, or use another driver (better-sqlite3 shares files between processes)`,
        { cause: error },
      ),
      { code },
    )
  }
  // One line, without the engine's step prefix and trailing primary code.
  const message = error.message
    .replace(
      /^((prepare|step) failed|failed to consume stmt): (Runtime error: |Parse error: )?/,
      '',
    )
    .replace(/ \(\d+\)$/, '')
  return Object.assign(new Error(message, { cause: error }), { code })
}

export const rethrow = <T>(fn: () => T): T => {
  try {
    return fn()
  } catch (error) {
    throw engineError(error)
  }
}

/** `… RETURNING` is the only reader that writes (the engine does not say which are read-only). */
export const RETURNING = /\bRETURNING\b/i

/**
 * Table-valued pragma functions (`pragma_table_info(…)`): a statement of them left prepared
 * keeps a read transaction, and a later schema change then aborts the process inside the
 * engine (0.7.2). They are prepared for each run and closed at once.
 */
export const PRAGMA_FUNCTION = /\bpragma_\w+\s*\(/i
