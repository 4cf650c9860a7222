import {
  AgentFsError,
  type Executor,
  type PayloadColumn,
  type PayloadRefs,
  parseRefs,
  readPayload,
} from '@agentfs/core'

/** How reads return a payload kept in the store (see `QueryOptions.payloads`). */
export type PayloadMode = 'whole' | 'stub'

/** A row whose `parameters`, `result` and `error` may be stubs named by its `payloads`. */
export interface PayloadRow {
  payloads: string | null
  parameters: string | null
  result?: string | null
  error?: string | null
}

/**
 * Puts back the whole texts of the columns `row.payloads` names (checked against their
 * SHA-256), unless `mode` is `stub`; returns the refs.
 */
export async function resolvePayloads(
  q: Executor,
  row: PayloadRow,
  mode: PayloadMode = 'whole',
): Promise<PayloadRefs> {
  const refs = parseRefs(row.payloads)
  if (mode === 'stub') return refs
  for (const [column, sha256] of Object.entries(refs) as Array<[PayloadColumn, string]>)
    row[column] = await readPayload(q, sha256)
  return refs
}

export function checkMode(mode: unknown): PayloadMode {
  if (mode === undefined || mode === 'whole' || mode === 'stub') return mode ?? 'whole'
  throw new AgentFsError(
    'INVALID_ARGUMENT',
    `payloads must be 'whole' or 'stub', got ${String(mode)}`,
  )
}

/**
 * The error of a call refused before it ran because the audit's payload store is full; the
 * refusal itself is recorded (`callId`).
 */
export class AuditFullError extends AgentFsError<'AUDIT_FULL'> {
  /** The `tool_calls` row recording the refusal. */
  readonly callId: number

  constructor(message: string, callId: number) {
    super('AUDIT_FULL', message)
    this.callId = callId
  }
}

/**
 * Whether the payload store has room for a call (the condition of `budgetRefusal` for a call
 * needing no bytes): no budget, or its size under the budget (the `agentfs_meta` row written as
 * a whole number, or the default without the row; anything else fails here, and the checked
 * path reads it). Parameters: the default budget, the budget's key.
 */
export const ROOM = `(SELECT CASE WHEN b.value = 'unlimited' THEN 1
  WHEN b.value IS NULL OR CAST(CAST(b.value AS INTEGER) AS TEXT) = b.value
  THEN (SELECT COALESCE(SUM(size), 0) FROM agentfs_payload) < COALESCE(CAST(b.value AS INTEGER), ?)
  ELSE 0 END
FROM (SELECT (SELECT value FROM agentfs_meta WHERE key = ?) AS value) b)`
