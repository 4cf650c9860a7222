import { AgentFsError } from '@agentfs/core'

/**
 * A write carried `ifMatch` and the file had changed since that version was read. Read the
 * file again (its current version is `currentVersion`), then decide; never retry blindly.
 */
export class ConflictError extends AgentFsError<'CONFLICT'> {
  readonly path: string
  readonly expectedVersion: string
  /** The file's version now; undefined when the file no longer exists. */
  readonly currentVersion: string | undefined

  constructor(path: string, expected: string, current: string | undefined) {
    super(
      'CONFLICT',
      `CONFLICT: file has been modified since version ${expected} (now ${current ?? 'deleted'}), write '${path}'; read it again before writing`,
    )
    this.path = path
    this.expectedVersion = expected
    this.currentVersion = current
  }

  override get name(): string {
    return 'ConflictError'
  }
}
