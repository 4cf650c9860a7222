import { AgentFsError } from '@agentfs/core'

/** A compare-and-set found another version than expected. Read the entry again, then decide. */
export class KvConflictError extends AgentFsError<'CONFLICT'> {
  readonly key: string
  /** The version the caller expected (`null`: expected the key to be absent). */
  readonly expectedVersion: number | null
  /** The version now (`null`: the key does not exist). */
  readonly currentVersion: number | null

  constructor(key: string, expected: number | null, current: number | null) {
    super(
      'CONFLICT',
      `Key '${key}' is at version ${current ?? '(absent)'}, not ${expected ?? '(absent)'}: it changed since it was read; read it again before writing`,
    )
    this.key = key
    this.expectedVersion = expected
    this.currentVersion = current
  }

  override get name(): string {
    return 'KvConflictError'
  }
}
