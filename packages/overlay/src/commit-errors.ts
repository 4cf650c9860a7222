import { AgentFsError, type MergeHunk } from '@agentfs/core'

/** The base changed since the overlay copied or hid an entry; nothing was committed. */
export class OverlayConflictError extends AgentFsError<'CONFLICT'> {
  readonly conflicts: readonly { path: string; reason: string }[]

  constructor(conflicts: readonly { path: string; reason: string }[], message?: string) {
    super(
      'CONFLICT',
      message ??
        `The base changed under ${conflicts.length} overlay path(s) (${conflicts
          .slice(0, 5)
          .map((c) => `${c.path}: ${c.reason}`)
          .join('; ')}); nothing was committed. Review the base, then discard or redo the changes`,
    )
    this.conflicts = conflicts
  }

  override get name(): string {
    return 'OverlayConflictError'
  }
}

/** A file a merge could not merge: each conflicting region, or why the file could not be merged. */
export interface FileMergeConflict {
  readonly path: string
  readonly hunks: readonly MergeHunk[]
  /** The file with conflict markers (text files). */
  readonly text?: string
  readonly reason?: string
}

/** A commit with `merge` met changes it could not merge; nothing was committed. */
export class MergeConflictError extends OverlayConflictError {
  readonly merges: readonly FileMergeConflict[]

  constructor(
    conflicts: readonly { path: string; reason: string }[],
    merges: readonly FileMergeConflict[],
  ) {
    super(
      conflicts,
      `${merges.length} file(s) could not be merged (${merges
        .slice(0, 5)
        .map(
          (m) =>
            `${m.path}: ${m.hunks.length > 0 ? `${m.hunks.length} conflicting region(s)` : m.reason}`,
        )
        .join(
          '; ',
        )})${conflicts.length > merges.length ? ` and ${conflicts.length - merges.length} other path(s) conflict` : ''}; nothing was committed. Write each resolution in the overlay (each conflict holds both sides and the ancestor), mark it with resolve(path), then commit again`,
    )
    this.merges = merges
  }

  override get name(): string {
    return 'MergeConflictError'
  }
}
