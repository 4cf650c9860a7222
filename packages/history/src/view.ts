// The snapshot view lives in core (the filesystem's undelete reads snapshots too).
export {
  contentOf,
  entriesAt,
  entryAt,
  MAX_SNAPSHOT_READ,
  resolveAt,
  walkAt,
} from '@agentfs/core'
