import type { SyncStatement } from './kit-types.js'

/**
 * A binding's prepared statement as {@link statementOver} needs it: rows in the statement's
 * current integer mode, a run, the switch between bigint and number integers (better-sqlite3's
 * `safeIntegers`, `node:sqlite`'s `setReadBigInts`), and, for a binding that refuses an integer
 * beyond 2^53 as a number instead of rounding it (`node:sqlite`), which error says so.
 */
export interface ModalStatement {
  all(params: readonly unknown[]): unknown[]
  /** The first row in the current integer mode, or undefined when there is none. */
  get?(params: readonly unknown[]): unknown
  run(params: readonly unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint }
  readBigInts(on: boolean): void
  refusesNumber?(error: unknown): boolean
}

/**
 * The kit's {@link SyncStatement} over a binding's statement. A read-only reader reads numbers
 * (no bigint per integer) and offers bigints when the kit asks again (`all`), switching back
 * afterwards; any other reader always reads bigints.
 */
export function statementOver(
  statement: ModalStatement,
  reader: boolean,
  readonly: boolean,
): SyncStatement {
  const run = (params: readonly unknown[]) => statement.run(params)
  if (!reader || !readonly) {
    if (reader) statement.readBigInts(true)
    return { reader, readonly, all: (params) => statement.all(params), run }
  }
  statement.readBigInts(false)
  const refuses = statement.refusesNumber
  const get = statement.get?.bind(statement)
  return {
    reader,
    readonly,
    ...(get && {
      firstNumbers: (params: readonly unknown[]) => {
        try {
          const row = get(params)
          return row === undefined ? [] : [row]
        } catch (error) {
          if (refuses?.(error)) return undefined
          throw error
        }
      },
    }),
    allNumbers: (params) => {
      try {
        return statement.all(params)
      } catch (error) {
        if (refuses?.(error)) return undefined
        throw error
      }
    },
    all: (params) => {
      statement.readBigInts(true)
      try {
        return statement.all(params)
      } finally {
        statement.readBigInts(false)
      }
    },
    run,
  }
}
