export type {
  Change,
  ChangePage,
  ChangeQuery,
  Compression,
  FollowOptions,
  VersionRetention,
} from '@agentfs/core'
export {
  AgentFsError,
  FsError,
  IdempotencyMismatchError,
  isAgentFsError,
  storedVersions,
  storeVersions,
  withMessage,
} from '@agentfs/core'
export type {
  Blame,
  BlameChange,
  BlameLine,
  BlameOptions,
  Embedder,
  EmbeddingUpdate,
  FileSystem,
  FileSystemOptions,
  FileVersion,
  FsOperation,
  FsPolicy,
  ResolvedSearchSettings,
  SearchHit,
  SearchLine,
  SearchMode,
  SearchOptions,
  SearchResult,
  SearchSettings,
  SqlFileSystem,
  Stats,
} from '@agentfs/fs'
export { ConflictError } from '@agentfs/fs'
export type {
  ChangeLog,
  History,
  SnapshotChange,
  SnapshotInfo,
  SnapshotOptions,
} from '@agentfs/history'
export type { KvEntry, KvStore } from '@agentfs/kv'
export { KvConflictError } from '@agentfs/kv'
export type { ToolCall, ToolCalls, ToolStats } from '@agentfs/tool-calls'
export type {
  AgentFSOptions,
  AgentScope,
  InspectorHandle,
  InspectorOptions,
  TransactionOptions,
} from './agentfs.js'
export { AgentFS } from './agentfs.js'
