import type { Queryable } from '../driver/guard-driver.js'

/** A row that breaks a rule: `ino` and `detail` describe it. */
export interface FindRow {
  ino: number | null
  detail: string | number | null
}

/** One consistency rule: how to find what breaks it, and (for safe ones) how to fix it. */
export interface Check {
  readonly rule: string
  readonly repairable: boolean
  /**
   * Rows that break the rule; `ino` and `detail` describe each. A function runs where one
   * statement cannot do it on every engine.
   */
  readonly find: string | ((q: Queryable) => Promise<FindRow[]>)
  readonly message: (row: { ino: number | null; detail: string | number | null }) => string
  /** Statements (separated by `;\n`) that fix every broken row at once (safe repairs only). */
  readonly repair?: string
  /** A fix that needs more than statements (runs after `repair`, in the same transaction). */
  readonly fix?: (q: Queryable) => Promise<void>
}
