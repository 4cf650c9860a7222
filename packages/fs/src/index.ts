export type { Blame, BlameChange, BlameLine, BlameOptions } from './history/blame.js'
export type { DeletedEntry, Undeleted } from './history/undelete.js'
export type { FileVersion, HistoryOptions } from './history/versions.js'
export { fsMode, mkdirOptions, mkdtemp, modeArg, pathArg, requiredMode } from './node/node-args.js'
export type { NodeFs, NodeFsOptions, SyncBridge } from './node/node-fs.js'
export { toNodeFs } from './node/node-fs.js'
export type { SyncBridgeOptions, SyncTarget } from './node/sync-bridge.js'
export {
  portSyncBridge,
  SYNC_FD_BASE,
  SYNC_SHARED_BYTES,
  SYNC_TIMEOUT_MS,
  SYNC_TRANSACTIONAL,
  serveSync,
} from './node/sync-bridge.js'
export type { ContentChange, ContentRule, FsOperation, FsPolicy } from './policy/policy.js'
export { CONTENT_RULE_MAX_BYTES, policyReadable } from './policy/policy.js'
export type {
  SearchHit,
  SearchLine,
  SearchMode,
  SearchOptions,
  SearchResult,
} from './search/fulltext/full-text.js'
export { MAX_CANDIDATES } from './search/fulltext/full-text.js'
export type { ResolvedSearchSettings, SearchSettings } from './search/fulltext/settings.js'
export {
  clearIndex,
  DEFAULT_MAX_FILE_SIZE,
  MAX_MAX_FILE_SIZE,
  META_SEARCH_SETTINGS,
  readSettings as readSearchSettings,
} from './search/fulltext/settings.js'
export { FTS_TABLE, hasFts5, MAX_POSTINGS, META_SEARCH_STORE } from './search/fulltext/store.js'
export type { Upkeep as SearchIndexUpdate } from './search/fulltext/upkeep.js'
export type { GlobMatchOptions, LineMatcher, RegexOptions } from './search/matchers.js'
export {
  compileGlob,
  compileRegex,
  MAX_GLOB_ALTERNATIVES,
  MAX_GLOB_LENGTH,
  MAX_REGEX_LENGTH,
} from './search/matchers.js'
export type { GlobMatch, GlobOptions, GrepMatch, GrepOptions } from './search/search.js'
export { GREP_MAX_BYTES, GREP_TIMEOUT_MS, LineSplitter, SearchBudget } from './search/search.js'
export type { TextChunk } from './search/semantic/chunks.js'
export { CHUNK_CHARS, chunkText, MAX_CHUNKS } from './search/semantic/chunks.js'
export type { Embedder } from './search/semantic/embedder.js'
export { checkEmbedder, MAX_DIMENSIONS } from './search/semantic/embedder.js'
export { MAX_VECTORS } from './search/semantic/rank.js'
export type { EmbeddingUpdate } from './search/semantic/upkeep.js'
export { embeddingBacklog, updateEmbeddings } from './search/semantic/upkeep.js'
export type { TreeEntry, WalkOptions } from './search/walk.js'
export { compareCodePoints, MAX_TREE_DEPTH, walkTree } from './search/walk.js'
export { ConflictError } from './sql/conflict.js'
export { EMPTY_SHA256, REHASH_MAX } from './sql/content-hash.js'
export type { FileSystemOptions } from './sql/context.js'
export { toBytes, writeFileOptions } from './sql/context.js'
export { copyTree } from './sql/copy-tree.js'
export { createFileSystem } from './sql/create-file-system.js'
export { Dir, dirClosedError } from './sql/dir.js'
export type { HandleWriteOptions } from './sql/file-handle.js'
export { FileHandle } from './sql/file-handle.js'
export type { FileHash, HashOptions } from './sql/hash.js'
export { canonicalText, hashFile, MAX_CANONICAL_BYTES } from './sql/hash.js'
export type { InodeReads } from './sql/inode-reads.js'
export {
  checkMimeType,
  contentTypeOf,
  deriveMimeType,
  isMimeType,
  type MimeInfo,
  sniffMimeType,
} from './sql/mime.js'
export { rmDirectoryError } from './sql/namespace-ops.js'
export { SqlFileSystem } from './sql/sql-file-system.js'
export type { ReadStreamOptions, WriteStreamOptions } from './sql/streams.js'
export { ReadStream, WriteStream } from './sql/streams.js'
export {
  applyTextPatch,
  MAX_TEXT_PATCH_CHARS,
  MAX_TEXT_PATCHES,
  type TextPatchOptions,
  type TextPatchResult,
} from './sql/text-patch.js'
export type { WatchEvent, WatchOptions } from './sql/watch.js'
export type { UnkeyedWriteOptions } from './sql/write-once.js'
export { writeOnce } from './sql/write-once.js'
export { Dirent, Stats } from './stats.js'
export { MAX_FILE_SIZE, MAX_READ_FILE } from './storage/chunks.js'
export type { InodeRow } from './storage/inode.js'
export { versionOf } from './storage/inode.js'
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
