export type {
  AuditIssue,
  AuditKey,
  AuditReport,
  AuditStream,
  SealOptions,
  SealResult,
  VerifyOptions,
} from './audit/audit-chain.js'
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
} from './audit/audit-chain.js'
export type { Change, ChangePage, ChangeQuery, FollowOptions } from './audit/change-feed.js'
export { followChanges, lastChange, readChanges } from './audit/change-feed.js'
export type { Actor, ChangeOp, ChangeRecord, FeedOptions } from './audit/changes.js'
export {
  appendChange,
  CONTENT_OPS,
  changeStatement,
  checkMessage,
  currentActor,
  MAX_MESSAGE,
  micros,
  withActor,
  withMessage,
} from './audit/changes.js'
export type {
  ArgumentsDigest,
  IdempotencyRecord,
  IdempotencyRequest,
  IdempotentReplay,
  Once,
  OnceRequest,
} from './audit/idempotency.js'
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
} from './audit/idempotency.js'
export type { IntegrityKey } from './audit/integrity-keys.js'
export { integrityKeysOf, setIntegrityKeys } from './audit/integrity-keys.js'
export type { PayloadColumn, PayloadRefs, PayloadUsage } from './audit/payload-store.js'
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
} from './audit/payload-store.js'
export type { Clock, IdSource, Timestamp } from './clock.js'
export { fixedClock, randomIds, seededIds, systemClock, toMillis } from './clock.js'
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
} from './content/blob-store.js'
export type { ChunkCodec, ChunkFormat, Compression } from './content/chunk-codec.js'
export {
  COMPRESSION_GUARD,
  COMPRESSIONS,
  canCompress,
  checkCompression,
  loadCompressor,
  plainChunks,
  zstdCodec,
} from './content/chunk-codec.js'
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
} from './content/orphans.js'
export type { QueryPhrase } from './content/search-tokens.js'
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
} from './content/search-tokens.js'
export type {
  Driver,
  DriverCapabilities,
  Executor,
  IdTable,
  QueryResult,
  SqlValue,
  Statement,
  SyncCapabilities,
} from './driver/driver.js'
export {
  executeDeferred,
  executeThen,
  fromSqlInteger,
  insertedRowid,
  placeholders,
  type ReadThen,
  readThen,
  runInOrder,
} from './driver/driver.js'
export type { GroupCommitOptions, GroupedDatabase } from './driver/group-commit.js'
export { groupCommits } from './driver/group-commit.js'
export type { GuardedDriver, Queryable, Transaction } from './driver/guard-driver.js'
export {
  explicitId,
  explicitIds,
  fullTextSearch,
  guardDriver,
  recursiveQueries,
  replaceOnRewrite,
} from './driver/guard-driver.js'
export { classifySqliteCode, mapSqliteError } from './driver/map-error.js'
export type { SlotAllocator } from './driver/slot-ids.js'
export { ID_TABLES, idColumn, MAX_SLOT, SLOT_SPAN, slotIds } from './driver/slot-ids.js'
export type { SnapshotSource, SnapshotToken } from './driver/snapshot.js'
export { SNAPSHOT_COLUMNS, sameSnapshot, snapshotSource, tokenOf } from './driver/snapshot.js'
export { databaseOf, STORE_DATABASE } from './driver/store-database.js'
export { viaSubqueries } from './driver/via-subqueries.js'
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
export type { FsckFinding, FsckReport } from './fsck/fsck.js'
export {
  countBadNames,
  fsck,
  hiddenFtsPages,
  integrityLines,
  SQLITE_INTEGRITY_RULE,
  unreachableInodes,
} from './fsck/fsck.js'
export type { ExpansionLimit } from './history/snapshot-expansion.js'
export {
  checkExpansion,
  EXPANSION_LIMIT,
  overExpansion,
  snapshotExpansion,
} from './history/snapshot-expansion.js'
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
} from './history/snapshot-view.js'
export type { BoundedDiff, DiffBudget, DiffMethod } from './history/text-diff.js'
export { DIFF_BUDGET, DIFF_TEXT_BUDGET, diffTextBudget, unifiedDiff } from './history/text-diff.js'
export {
  MERGE_LIMITS,
  type MergeHunk,
  mergeableText,
  mergeText,
  type TextMerge,
} from './history/text-merge.js'
export type { VersionRetention } from './history/versions.js'
export {
  captureVersion,
  META_VERSIONS,
  storedVersions,
  storeVersions,
  VERSION_DEFAULTS,
  versionRetention,
} from './history/versions.js'
export type { MkdirParentsSteps } from './paths/mkdir-parents.js'
export { mkdirParents } from './paths/mkdir-parents.js'
export type { ParsedPath, PathLike } from './paths/path.js'
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
} from './paths/path.js'
export type { PathStep, PathSteps, Resolution, ResolveOptions } from './paths/resolve.js'
export { MAX_SYMLINK_HOPS, resolvePath } from './paths/resolve.js'
export type { AgentDatabase, OpenDatabaseOptions } from './schema/database.js'
export { openDatabase } from './schema/database.js'
export type { DatabaseDescription } from './schema/describe.js'
export { describeDatabase } from './schema/describe.js'
export type { ExtensionMigration } from './schema/extensions.js'
export { EXTENSION_MIGRATIONS, SCHEMA_VERSION } from './schema/extensions.js'
export type { FoundObject, LayoutReport, SpecLayout } from './schema/layout.js'
export { inspectLayout } from './schema/layout.js'
export {
  META_HISTORY_TIP,
  META_HISTORY_TRIMMED,
  readChunkFormat,
  readChunkSize,
  readMeta,
  writeMeta,
} from './schema/meta.js'
export type { MigrateOptions, MigrationPlan, MigrationStep } from './schema/migrate.js'
export { checkChunkSize, migrate, planFromReport, planMigration } from './schema/migrate.js'
export type { SchemaObject } from './schema/schema.js'
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
} from './schema/schema.js'
