import { fromSqlInteger } from '../driver/driver.js'

/**
 * Parameters as a synchronous binding needs them. better-sqlite3 and `node:sqlite` bind every JS
 * number as REAL; integral ones must be INTEGER, as in other engines, or `typeof()` and
 * expressions without column affinity disagree. `blob` converts byte arrays where the binding
 * wants another type (better-sqlite3 wants a Buffer).
 */
export function bindIntegers(
  params: readonly unknown[] | undefined,
  blob?: (value: Uint8Array) => unknown,
): unknown[] {
  if (!params || params.length === 0) return []
  const out = new Array<unknown>(params.length)
  for (let i = 0; i < params.length; i++) {
    const value = params[i]
    if (typeof value === 'number') out[i] = Number.isSafeInteger(value) ? BigInt(value) : value
    else if (blob !== undefined && value instanceof Uint8Array) out[i] = blob(value)
    else out[i] = value
  }
  return out
}

/** `[0, 1, …, n - 1]` by `n`: the columns of array rows, built once per width. */
const indices: number[][] = []

/**
 * The columns of a statement's rows, listed once from the first row (every row of a statement
 * has the same ones; a `for…in` per row costs more than the statement's own row building on
 * wide rows): the keys of object rows, the positions of array rows (`Statement.arrays`).
 */
function columnsOf(first: unknown): readonly (string | number)[] {
  if (!Array.isArray(first)) return Object.keys(first as object)
  const n = first.length
  let columns = indices[n]
  if (columns === undefined) {
    columns = Array.from({ length: n }, (_, i) => i)
    if (n <= 64) indices[n] = columns
  }
  return columns
}

/** 2^53: every int64 below it in magnitude is exact as a double; every one above reads as ≥ it. */
const EXACT_LIMIT = 9007199254740992

/**
 * One pass over rows, in place: bigints narrowed (safe ones become numbers), blobs handed out
 * as ArrayBuffer (libsql) made views, no copy; with `checkNumbers`, false at the first number
 * of 2^53 or more in magnitude (or NaN).
 */
function visitRows(rows: unknown[], checkNumbers: boolean): boolean {
  if (rows.length === 0) return true
  const columns = columnsOf(rows[0])
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r] as Record<string | number, unknown>
    for (let k = 0; k < columns.length; k++) {
      const column = columns[k]!
      const value = row[column]
      if (typeof value === 'number') {
        if (checkNumbers && !(value < EXACT_LIMIT && value > -EXACT_LIMIT)) return false
      } else if (typeof value === 'bigint') row[column] = fromSqlInteger(value)
      else if (value instanceof ArrayBuffer) row[column] = new Uint8Array(value)
    }
  }
  return true
}

/** Rows read with bigint integers, narrowed: safe integers become numbers (in place). */
export function convertRows<Row>(rows: unknown[]): Row[] {
  visitRows(rows, false)
  return rows as Row[]
}

/**
 * Rows read with integers as JS numbers, checked: true when every number is below 2^53 in
 * magnitude, so no integer can have been rounded (a larger one, or NaN, returns false and the
 * caller reads the rows again with bigint integers). Blobs become views, as in
 * {@link convertRows}.
 */
export function exactNumberRows(rows: unknown[]): boolean {
  return visitRows(rows, true)
}

/**
 * A one-column statement's values (`Statement.pluck`) read with integers as JS numbers, checked
 * and made over in place as {@link exactNumberRows} does rows: false at the first number of
 * 2^53 or more in magnitude (or NaN).
 */
export function exactNumberValues(values: unknown[]): boolean {
  return visitValues(values, true)
}

/** Values read with bigint integers, narrowed in place (see {@link convertRows}). */
export function convertValues(values: unknown[]): unknown[] {
  visitValues(values, false)
  return values
}

function visitValues(values: unknown[], checkNumbers: boolean): boolean {
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    if (typeof value === 'number') {
      if (checkNumbers && !(value < EXACT_LIMIT && value > -EXACT_LIMIT)) return false
    } else if (typeof value === 'bigint') values[i] = fromSqlInteger(value)
    else if (value instanceof ArrayBuffer) values[i] = new Uint8Array(value)
  }
  return true
}
