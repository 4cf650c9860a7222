export type { CommitOptions, CommitResult, FileMergeConflict, PendingCommit } from './commit.js'
export { MergeConflictError, OverlayConflictError, pendingCommit } from './commit.js'
export type { UndoCommitResult } from './commit-undo.js'
export {
  commitUndoable,
  rebaseOverlayTokens,
  UndoConflictError,
  undoCommit,
} from './commit-undo.js'
export type { CreateOverlayOptions, OpenOverlayOptions, OverlayBaseDescription } from './config.js'
export { createOverlay, openOverlay, readOverlayBase, saveOverlayBase } from './config.js'
export type { OverlayChange, OverlayDiffOptions } from './diff.js'
export { SPECIAL_BITS, specialBitNames } from './diff.js'
export { walkGlob, walkGrep } from './generic-search.js'
export type { HostFileSystemOptions } from './host-fs.js'
export { HostFileSystem, statsFromNode } from './host-fs.js'
export type { OverlayFsOptions } from './overlay-fs.js'
export { OverlayFs } from './overlay-fs.js'
