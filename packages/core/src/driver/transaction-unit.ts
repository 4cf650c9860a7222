/**
 * A transaction unit: what a caller sees as one transaction — a top-level `transaction()`, or
 * one call's savepoint in a group commit — with every savepoint nested in it. The change feed
 * gives all the changes of one unit one transaction id (`agentfs_change.txid`, the `seq` of
 * the unit's first change), so a multi-file edit, a restore or a commit reads as one unit.
 */
export interface TransactionUnit {
  /** Changes appended in the unit so far (savepoints rolled back are taken off again). */
  rows: number
  /** The unit's first change's `seq`, when it was chosen explicitly (slot ids). */
  first: number | undefined
}

/**
 * Where a handle keeps its unit: a property under this symbol, which a transaction handle
 * declares (a field, not a weak map: one per transaction, on the write path).
 */
export const UNIT: unique symbol = Symbol('agentfs.transactionUnit')
type Carrier = { [UNIT]?: TransactionUnit | undefined }

/** The unit a transaction handle belongs to; undefined outside a transaction. */
export function unitOf(handle: object): TransactionUnit | undefined {
  return (handle as Carrier)[UNIT]
}

/** Makes `handle` the start of a new unit (a top-level transaction, a group's call). */
export function beginUnit(handle: object): void {
  ;(handle as Carrier)[UNIT] = { rows: 0, first: undefined }
}

/** Makes `nested` (a savepoint) part of `parent`'s unit. */
export function joinUnit(parent: object, nested: object): void {
  const unit = (parent as Carrier)[UNIT]
  if (unit !== undefined) (nested as Carrier)[UNIT] = unit
}

/** What to restore when a savepoint of the unit rolls back. */
export function unitMark(handle: object): (() => void) | undefined {
  const unit = (handle as Carrier)[UNIT]
  if (unit === undefined) return undefined
  const { rows, first } = unit
  return () => {
    unit.rows = rows
    unit.first = first
  }
}
