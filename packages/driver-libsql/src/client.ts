import { fromSqlInteger, type QueryResult, type SqlValue } from '@agentfs/core'

/** The parts of a libSQL `ResultSet` this driver uses (structural: no type dependency). */
export interface LibsqlResultSet {
  readonly columns: readonly string[]
  readonly rows: ReadonlyArray<ArrayLike<unknown>>
  readonly rowsAffected: number
  readonly lastInsertRowid: bigint | undefined
}

/** A libSQL statement in the client's object form. */
export interface LibsqlInStatement {
  sql: string
  args: Array<null | string | number | bigint | Uint8Array>
}

/** The parts of a libSQL interactive `Transaction` this driver uses. */
export interface LibsqlTransaction {
  execute(statement: LibsqlInStatement): Promise<LibsqlResultSet>
  /**
   * Several statements in one request, each run only if the one before succeeded. Optional:
   * without it the driver sends every statement on its own.
   */
  batch?(statements: LibsqlInStatement[]): Promise<LibsqlResultSet[]>
  commit(): Promise<void>
  rollback(): Promise<void>
  close(): void
}

/** The parts of a libSQL `Client` this driver uses. */
export interface LibsqlClient {
  readonly closed: boolean
  readonly protocol: string
  execute(statement: LibsqlInStatement): Promise<LibsqlResultSet>
  executeMultiple(sql: string): Promise<void>
  transaction(mode: 'write'): Promise<LibsqlTransaction>
  close(): void
}

function toValue(value: unknown): SqlValue {
  if (typeof value === 'bigint') return fromSqlInteger(value)
  if (value instanceof ArrayBuffer) return new Uint8Array(value)
  return value as SqlValue
}

/**
 * The client binds every JS number as REAL; integral ones must be INTEGER, as in other engines,
 * or values in columns without affinity (sqlite_sequence, expressions) differ between drivers.
 */
export function bindArgs(params: readonly SqlValue[] | undefined): LibsqlInStatement['args'] {
  if (!params || params.length === 0) return []
  const out: LibsqlInStatement['args'] = new Array(params.length)
  for (let i = 0; i < params.length; i++) {
    const value = params[i] as SqlValue
    out[i] = typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : value
  }
  return out
}

export function toResult<Row>(result: LibsqlResultSet): QueryResult<Row> {
  const { columns } = result
  const rows = new Array<Row>(result.rows.length)
  for (let r = 0; r < result.rows.length; r++) {
    const source = result.rows[r]!
    const row: Record<string, SqlValue> = {}
    for (let c = 0; c < columns.length; c++) row[columns[c]!] = toValue(source[c])
    rows[r] = row as Row
  }
  const out: { rows: Row[]; changes: number; lastInsertRowid?: bigint } = {
    rows,
    changes: result.rowsAffected,
  }
  if (result.lastInsertRowid !== undefined) out.lastInsertRowid = result.lastInsertRowid
  return out
}
