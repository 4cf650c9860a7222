import { AgentFsError } from '@agentfs/core'

/** What went wrong in a memory tool. */
export type MemoryErrorCode =
  | 'INVALID_ARGUMENT'
  | 'NOT_FOUND'
  /** A hard block of seed 003: refused, nothing written. */
  | 'BLOCKED'
  /** `if_match` named another content than the file's. */
  | 'STALE'
  /** A lint cap was passed without an `override_rationale`. */
  | 'RATIONALE_REQUIRED'
  /** A patch's hunk does not apply. */
  | 'PATCH_FAILED'
  /** A request with the same idempotency key is under way. */
  | 'BUSY'
  /** The Postgres events store could not be reached or refused a statement. */
  | 'EVENTS_UNAVAILABLE'

/** An error of the memory toolbelt: one line, saying what to do. */
export class MemoryError extends AgentFsError<MemoryErrorCode> {
  override get name(): string {
    return 'MemoryError'
  }
}
