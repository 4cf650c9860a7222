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
