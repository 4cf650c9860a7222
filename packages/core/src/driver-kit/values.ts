import { fromSqlInteger } from '../driver.js'

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

/** Rows read with bigint integers, narrowed: safe integers become numbers (in place). */
export function convertRows<Row>(rows: unknown[]): Row[] {
  if (rows.length === 0) return rows as Row[]
  if (Array.isArray(rows[0])) {
    for (let r = 0; r < rows.length; r++) {
      const row = rows[r] as unknown[]
      for (let k = 0; k < row.length; k++) {
        const value = row[k]
        if (typeof value === 'bigint') row[k] = fromSqlInteger(value)
        else if (value instanceof ArrayBuffer) row[k] = new Uint8Array(value)
      }
    }
    return rows as Row[]
  }
  // Every row of a statement has the same columns: list them once (a `for…in` per row costs
  // more than the statement's own row building on wide rows).
  const keys = Object.keys(rows[0] as object)
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r] as Record<string, unknown>
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k]!
      const value = row[key]
      if (typeof value === 'bigint') row[key] = fromSqlInteger(value)
      // Engines that hand blobs out as ArrayBuffer (libsql): a view, no copy.
      else if (value instanceof ArrayBuffer) row[key] = new Uint8Array(value)
    }
  }
  return rows as Row[]
}

/** 2^53: every int64 below it in magnitude is exact as a double; every one above reads as ≥ it. */
const EXACT_LIMIT = 9007199254740992

/**
 * Rows read with integers as JS numbers, checked: true when every number is below 2^53 in
 * magnitude, so no integer can have been rounded (a larger one, or NaN, returns false and the
 * caller reads the rows again with bigint integers). Blobs handed out as ArrayBuffer become
 * views, as in {@link convertRows}.
 */
export function exactNumberRows(rows: unknown[]): boolean {
  if (rows.length === 0) return true
  if (Array.isArray(rows[0])) {
    for (let r = 0; r < rows.length; r++) {
      const row = rows[r] as unknown[]
      for (let k = 0; k < row.length; k++) {
        const value = row[k]
        if (typeof value === 'number') {
          if (!(value < EXACT_LIMIT && value > -EXACT_LIMIT)) return false
        } else if (value instanceof ArrayBuffer) row[k] = new Uint8Array(value)
      }
    }
    return true
  }
  const keys = Object.keys(rows[0] as object)
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r] as Record<string, unknown>
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k]!
      const value = row[key]
      if (typeof value === 'number') {
        if (!(value < EXACT_LIMIT && value > -EXACT_LIMIT)) return false
      } else if (value instanceof ArrayBuffer) row[key] = new Uint8Array(value)
    }
  }
  return true
}
