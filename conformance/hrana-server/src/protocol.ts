import type Database from 'better-sqlite3'

/**
 * Hrana (the libSQL remote protocol) JSON shapes, as the Hrana 2/3 specification defines them
 * for HTTP pipelines, and their execution on one SQLite connection (a stream).
 */

export type Value =
  | { type: 'null' }
  | { type: 'integer'; value: string }
  | { type: 'float'; value: number }
  | { type: 'text'; value: string }
  | { type: 'blob'; base64: string }

export interface Stmt {
  sql?: string
  sql_id?: number
  args?: Value[]
  named_args?: { name: string; value: Value }[]
  want_rows?: boolean
}

export type BatchCond =
  | { type: 'ok'; step: number }
  | { type: 'error'; step: number }
  | { type: 'not'; cond: BatchCond }
  | { type: 'and'; conds: BatchCond[] }
  | { type: 'or'; conds: BatchCond[] }
  | { type: 'is_autocommit' }

export interface StmtResult {
  cols: { name: string | null; decltype: string | null }[]
  rows: Value[][]
  affected_row_count: number
  last_insert_rowid: string | null
}

export interface ProtoError {
  message: string
  code?: string
}

/** An error a request answers with (not a transport failure). */
export class RequestError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message)
  }

  toProto(): ProtoError {
    return this.code === undefined
      ? { message: this.message }
      : { message: this.message, code: this.code }
  }
}

/** An error from SQLite as sqld reports it: the extended result code name in `code`. */
export function sqliteError(error: unknown): RequestError {
  if (error instanceof RequestError) return error
  const e = error as { code?: unknown; message?: unknown }
  const code = typeof e.code === 'string' && e.code.startsWith('SQLITE_') ? e.code : undefined
  return new RequestError(`SQLite error: ${String(e.message ?? error)}`, code ?? 'SQLITE_ERROR')
}

export function decodeValue(value: Value | undefined): unknown {
  if (value === undefined || value === null || typeof value !== 'object')
    throw new RequestError('a value must be an object with a type', 'HRANA_PROTO_ERROR')
  switch (value.type) {
    case 'null':
      return null
    case 'integer':
      if (typeof value.value !== 'string' || !/^-?\d+$/.test(value.value))
        throw new RequestError('an integer value must be a decimal string', 'HRANA_PROTO_ERROR')
      return BigInt(value.value)
    case 'float':
      return Number(value.value)
    case 'text':
      return String(value.value)
    case 'blob':
      return Buffer.from(String(value.base64), 'base64')
    default:
      throw new RequestError(
        `unknown value type ${JSON.stringify((value as { type: unknown }).type)}`,
        'HRANA_PROTO_ERROR',
      )
  }
}

export function encodeValue(value: unknown): Value {
  if (value === null || value === undefined) return { type: 'null' }
  if (typeof value === 'bigint') return { type: 'integer', value: value.toString() }
  if (typeof value === 'number') return { type: 'float', value }
  if (typeof value === 'string') return { type: 'text', value }
  if (value instanceof Uint8Array)
    return { type: 'blob', base64: Buffer.from(value).toString('base64') }
  throw new RequestError(`cannot encode a ${typeof value} value`)
}

/** One stream: its own connection, and the SQL texts stored on it by id. */
export class StreamState {
  /** The stream changed its connection's settings (a pragma, an attached database). */
  tainted = false
  #changes: Database.Statement | undefined

  /**
   * `sqls`: the SQL texts stored by id, the stream's own over HTTP, shared by the socket's
   * streams over WebSocket.
   */
  constructor(
    readonly db: Database.Database,
    readonly sqls: Map<number, string> = new Map(),
  ) {}

  #note(sql: string): void {
    if (!this.tainted && /\b(PRAGMA\s+[\w.]+\s*[=(]|ATTACH\b|DETACH\b)/i.test(sql))
      this.tainted = true
  }

  sqlOf(sql: string | undefined, sqlId: number | undefined): string {
    if (sql !== undefined && sqlId !== undefined)
      throw new RequestError('give sql or sql_id, not both', 'HRANA_PROTO_ERROR')
    if (sql !== undefined) return sql
    if (sqlId === undefined)
      throw new RequestError('sql or sql_id is required', 'HRANA_PROTO_ERROR')
    const stored = this.sqls.get(sqlId)
    if (stored === undefined)
      throw new RequestError(`no SQL is stored under id ${sqlId}`, 'SQL_NOT_FOUND')
    return stored
  }

  execute(stmt: Stmt): StmtResult {
    const sql = this.sqlOf(stmt.sql, stmt.sql_id)
    this.#note(sql)
    let prepared: Database.Statement
    try {
      prepared = this.db.prepare(sql)
    } catch (error) {
      throw sqliteError(error)
    }
    prepared.safeIntegers(true)
    const positional = (stmt.args ?? []).map(decodeValue)
    const named: Record<string, unknown> = {}
    for (const arg of stmt.named_args ?? [])
      named[arg.name.replace(/^[:@$]/, '')] = decodeValue(arg.value)
    const params: unknown[] = stmt.named_args?.length ? [...positional, named] : positional
    try {
      if (prepared.reader) {
        prepared.raw(true)
        const rows = prepared.all(...params) as unknown[][]
        const cols = prepared.columns().map((c) => ({ name: c.name, decltype: c.type }))
        // A reader that writes (RETURNING) reports its changes; a pure read reports none.
        const changes = prepared.readonly ? undefined : this.#lastChange()
        return {
          cols,
          rows: stmt.want_rows === false ? [] : rows.map((row) => row.map(encodeValue)),
          affected_row_count: changes?.changes ?? 0,
          last_insert_rowid: changes?.rowid ?? null,
        }
      }
      const info = prepared.run(...params)
      return {
        cols: [],
        rows: [],
        affected_row_count: Number(info.changes),
        last_insert_rowid: String(info.lastInsertRowid),
      }
    } catch (error) {
      throw sqliteError(error)
    }
  }

  #lastChange(): { changes: number; rowid: string } {
    this.#changes ??= this.db
      .prepare('SELECT changes(), last_insert_rowid()')
      .raw(true)
      .safeIntegers(true)
    const [changes, rowid] = this.#changes.get() as [bigint, bigint]
    return { changes: Number(changes), rowid: String(rowid) }
  }

  batch(steps: { condition?: BatchCond; stmt: Stmt }[]): {
    step_results: (StmtResult | null)[]
    step_errors: (ProtoError | null)[]
  } {
    const results: (StmtResult | null)[] = []
    const errors: (ProtoError | null)[] = []
    const holds = (cond: BatchCond): boolean => {
      switch (cond.type) {
        case 'ok':
          return results[cond.step] != null
        case 'error':
          return errors[cond.step] != null
        case 'not':
          return !holds(cond.cond)
        case 'and':
          return cond.conds.every(holds)
        case 'or':
          return cond.conds.some(holds)
        case 'is_autocommit':
          return !this.db.inTransaction
        default:
          throw new RequestError('unknown batch condition', 'HRANA_PROTO_ERROR')
      }
    }
    for (const step of steps) {
      if (step.condition !== undefined && !holds(step.condition)) {
        results.push(null)
        errors.push(null)
        continue
      }
      try {
        results.push(this.execute(step.stmt))
        errors.push(null)
      } catch (error) {
        results.push(null)
        errors.push(sqliteError(error).toProto())
      }
    }
    return { step_results: results, step_errors: errors }
  }

  sequence(sql: string): void {
    this.#note(sql)
    try {
      this.db.exec(sql)
    } catch (error) {
      throw sqliteError(error)
    }
  }

  describe(sql: string) {
    let prepared: Database.Statement
    try {
      prepared = this.db.prepare(sql)
    } catch (error) {
      throw sqliteError(error)
    }
    return {
      params: parameterNames(sql).map((name) => ({ name })),
      cols: prepared.reader
        ? prepared.columns().map((c) => ({ name: c.name, decltype: c.type }))
        : [],
      is_explain: /^\s*explain\b/i.test(sql),
      is_readonly: prepared.readonly,
    }
  }
}

/**
 * The parameters of one statement in order, as SQLite numbers them: `?` takes the next index,
 * `?NNN` a given one, `:name`, `@name`, `$name` one each (repeats share one). Strings, quoted
 * identifiers and comments are skipped.
 */
export function parameterNames(sql: string): (string | null)[] {
  const names: (string | null)[] = []
  const byName = new Map<string, number>()
  let i = 0
  while (i < sql.length) {
    const c = sql[i]!
    if (c === "'" || c === '"' || c === '`' || c === '[') {
      const close = c === '[' ? ']' : c
      i = sql.indexOf(close, i + 1)
      if (i === -1) break
      i++
    } else if (c === '-' && sql[i + 1] === '-') {
      i = sql.indexOf('\n', i)
      if (i === -1) break
    } else if (c === '/' && sql[i + 1] === '*') {
      i = sql.indexOf('*/', i + 2)
      if (i === -1) break
      i += 2
    } else if (c === '?') {
      const digits = /^\d+/.exec(sql.slice(i + 1))?.[0]
      if (digits) {
        const index = Number(digits)
        while (names.length < index) names.push(null)
        i += 1 + digits.length
      } else {
        names.push(null)
        i++
      }
    } else if ((c === ':' || c === '@' || c === '$') && /[A-Za-z_]/.test(sql[i + 1] ?? '')) {
      const name = c + /^[A-Za-z0-9_]+/.exec(sql.slice(i + 1))![0]
      if (!byName.has(name)) {
        names.push(name)
        byName.set(name, names.length)
      }
      i += name.length
    } else i++
  }
  return names
}
