export type {
  AuditIssue,
  AuditKey,
  AuditReport,
  AuditStream,
  SealOptions,
  SealResult,
  VerifyOptions,
} from './audit-chain.js'
export {
  AUDIT_STREAMS,
  anchorTrim,
  auditDigest,
  auditHead,
  auditKeyId,
  checkAuditKey,
  encodeAuditRow,
  sealAudit,
  verifyAudit,
} from './audit-chain.js'
export {
  addRef,
  captureChunks,
  captureContent,
  chunkBytes,
  contentChunks,
  decodeChunk,
  dropRefs,
  encodeChunk,
  HASH_BYTES,
  hashChunks,
  hashesOf,
  readBlob,
  readChunks,
  readInode,
} from './blob-store.js'
export type { Change, ChangePage, ChangeQuery, FollowOptions } from './change-feed.js'
export { followChanges, lastChange, readChanges } from './change-feed.js'
export type { Actor, ChangeOp, ChangeRecord, FeedOptions } from './changes.js'
export {
  appendChange,
  CONTENT_OPS,
  checkMessage,
  currentActor,
  MAX_MESSAGE,
  micros,
  withActor,
  withMessage,
} from './changes.js'
export type { ChunkCodec, ChunkFormat, Compression } from './chunk-codec.js'
export {
  COMPRESSION_GUARD,
  COMPRESSIONS,
  canCompress,
  checkCompression,
  loadCompressor,
  plainChunks,
  zstdCodec,
} from './chunk-codec.js'
export type { Clock, IdSource, Timestamp } from './clock.js'
export { fixedClock, randomIds, seededIds, systemClock, toMillis } from './clock.js'
export type { AgentDatabase, OpenDatabaseOptions } from './database.js'
export { openDatabase } from './database.js'
export type { DatabaseDescription } from './describe.js'
export { describeDatabase } from './describe.js'
export type {
  Driver,
  DriverCapabilities,
  Executor,
  IdTable,
  QueryResult,
  SqlValue,
  Statement,
  SyncCapabilities,
} from './driver.js'
export {
  executeDeferred,
  executeThen,
  fromSqlInteger,
  insertedRowid,
  placeholders,
  type ReadThen,
  readThen,
} from './driver.js'
export type { DatabaseKey } from './driver-kit/encryption.js'
export type { AgentFsErrorOptions, FsErrorInit, PosixCode } from './errors.js'
export {
  AgentFsError,
  corruptError,
  ErrorCode,
  FsError,
  fsError,
  isAgentFsError,
  isFsError,
  POSIX_ERRORS,
  twoPathErrors,
  undefinedIfAbsent,
} from './errors.js'
export type { ExtensionMigration } from './extensions.js'
export { EXTENSION_MIGRATIONS, SCHEMA_VERSION } from './extensions.js'
export type { FsckFinding, FsckReport } from './fsck.js'
export {
  countBadNames,
  fsck,
  hiddenFtsPages,
  integrityLines,
  SQLITE_INTEGRITY_RULE,
  unreachableInodes,
} from './fsck.js'
export type { GroupCommitOptions, GroupedDatabase } from './group-commit.js'
export { groupCommits } from './group-commit.js'
export type { GuardedDriver, Queryable, Transaction } from './guard-driver.js'
export {
  explicitId,
  fullTextSearch,
  guardDriver,
  recursiveQueries,
  replaceOnRewrite,
} from './guard-driver.js'
export type {
  ArgumentsDigest,
  IdempotencyRecord,
  IdempotencyRequest,
  IdempotentReplay,
  Once,
  OnceRequest,
} from './idempotency.js'
export {
  applyOnce,
  argumentDifferences,
  argumentsHash,
  canonicalJson,
  checkIdempotencyKey,
  claimIdempotency,
  DEFAULT_IDEMPOTENCY_TTL_MS,
  digestArguments,
  EXPIRED_PER_CLAIM,
  IDEMPOTENCY_COLUMNS,
  IDEMPOTENCY_STORED_COLUMNS,
  IdempotencyMismatchError,
  IdempotencyUntrustedError,
  MAX_DIGESTED_MEMBERS,
  recordIdempotency,
  sealRecord,
} from './idempotency.js'
export type { IntegrityKey } from './integrity-keys.js'
export { integrityKeysOf, setIntegrityKeys } from './integrity-keys.js'
export type { FoundObject, LayoutReport, SpecLayout } from './layout.js'
export { inspectLayout } from './layout.js'
export { classifySqliteCode, mapSqliteError } from './map-error.js'
export {
  META_HISTORY_TIP,
  META_HISTORY_TRIMMED,
  readChunkFormat,
  readChunkSize,
  readMeta,
  writeMeta,
} from './meta.js'
export type { MigrateOptions, MigrationPlan, MigrationStep } from './migrate.js'
export { checkChunkSize, migrate, planFromReport, planMigration } from './migrate.js'
export type { MkdirParentsSteps } from './mkdir-parents.js'
export { mkdirParents } from './mkdir-parents.js'
export {
  FREED_WITH_INODE,
  freeDeadOrphans,
  freeInode,
  freeInodes,
  freeOrphans,
  holderAlive,
  INODE_BATCH,
  keepOrphan,
  listOrphans,
  META_ORPHAN,
  ORPHAN_LEASE_MS,
  ORPHAN_RENEW_MS,
  orphanHolder,
  renewOrphans,
  unlinkedOf,
} from './orphans.js'
export type { ParsedPath, PathLike } from './path.js'
export {
  badEntryName,
  baseName,
  hasLoneSurrogate,
  isWithin,
  joinPath,
  NAME_MAX,
  normalizePath,
  PATH_MAX,
  parentPath,
  parsePath,
  pathToString,
} from './path.js'
export type { PayloadColumn, PayloadRefs, PayloadUsage } from './payload-store.js'
export {
  budgetRefusal,
  checkPayload,
  DEFAULT_PAYLOAD_BUDGET,
  digestStub,
  exceedsInline,
  externalize,
  META_PAYLOAD_BUDGET,
  PAYLOAD_CHUNK_BYTES,
  PAYLOAD_INLINE_BYTES,
  PAYLOAD_ROOM_PARAMS,
  PAYLOAD_ROOM_SQL,
  parseRefs,
  payloadStub,
  payloadUsage,
  readPayload,
  setPayloadBudget,
  storePayload,
} from './payload-store.js'
export type { PathStep, PathSteps, Resolution, ResolveOptions } from './resolve.js'
export { MAX_SYMLINK_HOPS, resolvePath } from './resolve.js'
export type { SchemaObject } from './schema.js'
export {
  DEFAULT_CHUNK_SIZE,
  FS_INODE_COLUMNS,
  MAX_CHUNK_SIZE,
  MIN_CHUNK_SIZE,
  MODE_PERMISSION_MASK,
  normalizeDdl,
  ROOT_INO,
  S_IFBLK,
  S_IFCHR,
  S_IFDIR,
  S_IFIFO,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
  S_IFSOCK,
  SPEC_INDEXES,
  SPEC_TABLES,
  SPEC_VERSION,
} from './schema.js'
export type { QueryPhrase } from './search-tokens.js'
export {
  BM25_B,
  BM25_K1,
  bm25,
  fts5Expression,
  MAX_QUERY,
  MAX_QUERY_TERMS,
  MAX_TOKEN,
  parseQuery,
  phrasePositions,
  SEARCH_MAX_TOKENS,
  textOf,
  tokenize,
  wordMatches,
} from './search-tokens.js'
export type { SlotAllocator } from './slot-ids.js'
export { ID_TABLES, idColumn, MAX_SLOT, SLOT_SPAN, slotIds } from './slot-ids.js'
export type { SnapshotSource, SnapshotToken } from './snapshot.js'
export { SNAPSHOT_COLUMNS, sameSnapshot, snapshotSource, tokenOf } from './snapshot.js'
export type { ExpansionLimit } from './snapshot-expansion.js'
export {
  checkExpansion,
  EXPANSION_LIMIT,
  overExpansion,
  snapshotExpansion,
} from './snapshot-expansion.js'
export {
  contentOf,
  entriesAt,
  entryAt,
  inodeAt,
  isDirMode,
  isLinkMode,
  isRegMode,
  MAX_SNAPSHOT_READ,
  resolveAt,
  SELECT_SNAP,
  type SnapInode,
  visibleAt,
  walkAt,
} from './snapshot-view.js'
export { databaseOf, STORE_DATABASE } from './store-database.js'
export type { BoundedDiff, DiffBudget, DiffMethod } from './text-diff.js'
export { DIFF_BUDGET, DIFF_TEXT_BUDGET, diffTextBudget, unifiedDiff } from './text-diff.js'
export {
  MERGE_LIMITS,
  type MergeHunk,
  mergeableText,
  mergeText,
  type TextMerge,
} from './text-merge.js'
export type { VersionRetention } from './versions.js'
export {
  captureVersion,
  META_VERSIONS,
  storedVersions,
  storeVersions,
  VERSION_DEFAULTS,
  versionRetention,
} from './versions.js'
