export { ErrorCode, AgentFsError, FsError, POSIX_ERRORS, fsError, isAgentFsError } from './errors.js'
export type { AgentFsErrorOptions, FsErrorInit, PosixCode } from './errors.js'
export type {
  Driver,
  DriverCapabilities,
  Executor,
  QueryResult,
  SqlValue,
  Statement,
} from './driver.js'
export { classifySqliteCode, mapSqliteError } from './map-error.js'
export { Mutex } from './mutex.js'
export { guardDriver } from './guard-driver.js'
export type { GuardedDriver, Queryable, Transaction } from './guard-driver.js'
export { fixedClock, randomIds, seededIds, systemClock, toMillis } from './clock.js'
export type { Clock, IdSource, Timestamp } from './clock.js'
export {
  DEFAULT_CHUNK_SIZE,
  MAX_CHUNK_SIZE,
  MIN_CHUNK_SIZE,
  MODE_PERMISSION_MASK,
  ROOT_INO,
  SPEC_INDEXES,
  SPEC_TABLES,
  SPEC_VERSION,
  S_IFBLK,
  S_IFCHR,
  S_IFDIR,
  S_IFIFO,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
  S_IFSOCK,
  normalizeDdl,
} from './schema.js'
export type { SchemaObject } from './schema.js'
export { EXTENSION_MIGRATIONS, SCHEMA_VERSION } from './extensions.js'
export type { ExtensionMigration } from './extensions.js'
export { inspectLayout } from './layout.js'
export type { FoundObject, LayoutReport, SpecLayout } from './layout.js'
export { checkChunkSize, migrate, planFromReport, planMigration } from './migrate.js'
export type { MigrateOptions, MigrationPlan, MigrationStep } from './migrate.js'
export { openDatabase } from './database.js'
export type { AgentDatabase, OpenDatabaseOptions } from './database.js'
export {
  NAME_MAX,
  PATH_MAX,
  baseName,
  isWithin,
  joinPath,
  normalizePath,
  parentPath,
  parsePath,
  pathToString,
} from './path.js'
export type { ParsedPath, PathLike } from './path.js'
