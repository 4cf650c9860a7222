export { MAX_FILE_SIZE, MAX_READ_FILE } from './chunks.js'
export { ConflictError } from './conflict.js'
export { EMPTY_SHA256, REHASH_MAX } from './content-hash.js'
export type { FileSystemOptions } from './context.js'
export { toBytes, writeFileOptions } from './context.js'
export { copyTree } from './copy-tree.js'
export { createFileSystem } from './create-file-system.js'
export { Dir, dirClosedError } from './dir.js'
export type { HandleWriteOptions } from './file-handle.js'
export { FileHandle } from './file-handle.js'
export type { FileHash, HashOptions } from './hash.js'
export { canonicalText, hashFile, MAX_CANONICAL_BYTES } from './hash.js'
export type { InodeRow } from './inode.js'
export { versionOf } from './inode.js'
export type { InodeReads } from './inode-reads.js'
export type { GlobMatchOptions, LineMatcher, RegexOptions } from './matchers.js'
export {
  compileGlob,
  compileRegex,
  MAX_GLOB_ALTERNATIVES,
  MAX_GLOB_LENGTH,
  MAX_REGEX_LENGTH,
} from './matchers.js'
export { rmDirectoryError } from './namespace-ops.js'
export { fsMode, mkdirOptions, mkdtemp, modeArg, pathArg, requiredMode } from './node-args.js'
export type { NodeFs, NodeFsOptions, SyncBridge } from './node-fs.js'
export { toNodeFs } from './node-fs.js'
export type { FsOperation, FsPolicy } from './policy.js'
export type { GlobMatch, GlobOptions, GrepMatch, GrepOptions } from './search.js'
export { GREP_MAX_BYTES, GREP_TIMEOUT_MS, LineSplitter, SearchBudget } from './search.js'
export { SqlFileSystem } from './sql-file-system.js'
export { Dirent, Stats } from './stats.js'
export type { ReadStreamOptions, WriteStreamOptions } from './streams.js'
export { ReadStream, WriteStream } from './streams.js'
export type { SyncBridgeOptions, SyncTarget } from './sync-bridge.js'
export {
  portSyncBridge,
  SYNC_FD_BASE,
  SYNC_SHARED_BYTES,
  SYNC_TIMEOUT_MS,
  SYNC_TRANSACTIONAL,
  serveSync,
} from './sync-bridge.js'
export type {
  AtimeMode,
  CpOptions,
  Encoding,
  FileSystem,
  FsDir,
  FsFileHandle,
  MkdirOptions,
  Mode,
  ReaddirOptions,
  ReadFileOptions,
  RmOptions,
  StatFs,
  TimeLike,
  WriteData,
  WriteFileOptions,
} from './types.js'
export type { FileVersion, HistoryOptions } from './versions-ops.js'
export type { TreeEntry, WalkOptions } from './walk.js'
export { compareCodePoints, MAX_TREE_DEPTH, walkTree } from './walk.js'
export type { WatchEvent, WatchOptions } from './watch.js'
export type { UnkeyedWriteOptions } from './write-once.js'
export { writeOnce } from './write-once.js'
