/**
 * The Agent Filesystem Specification v0.4 schema, statement for statement as the spec writes it.
 * `sqlite_schema.sql` of a fresh database holds exactly these texts.
 */

/** One table or index of the spec. */
export interface SchemaObject {
  readonly type: 'table' | 'index'
  readonly name: string
  /** For indexes, the table they belong to. */
  readonly table: string
  readonly sql: string
}

const table = (name: string, sql: string): SchemaObject => ({
  type: 'table',
  name,
  table: name,
  sql,
})
const index = (name: string, on: string, sql: string): SchemaObject => ({
  type: 'index',
  name,
  table: on,
  sql,
})

/** Tables of spec v0.4, in creation order. */
export const SPEC_TABLES: readonly SchemaObject[] = [
  table(
    'tool_calls',
    `CREATE TABLE tool_calls (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  parameters TEXT,
  result TEXT,
  error TEXT,
  started_at INTEGER NOT NULL,
  completed_at INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL
)`,
  ),
  table(
    'fs_config',
    `CREATE TABLE fs_config (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
)`,
  ),
  table(
    'fs_inode',
    `CREATE TABLE fs_inode (
  ino INTEGER PRIMARY KEY AUTOINCREMENT,
  mode INTEGER NOT NULL,
  nlink INTEGER NOT NULL DEFAULT 0,
  uid INTEGER NOT NULL DEFAULT 0,
  gid INTEGER NOT NULL DEFAULT 0,
  size INTEGER NOT NULL DEFAULT 0,
  atime INTEGER NOT NULL,
  mtime INTEGER NOT NULL,
  ctime INTEGER NOT NULL,
  rdev INTEGER NOT NULL DEFAULT 0,
  atime_nsec INTEGER NOT NULL DEFAULT 0,
  mtime_nsec INTEGER NOT NULL DEFAULT 0,
  ctime_nsec INTEGER NOT NULL DEFAULT 0
)`,
  ),
  table(
    'fs_dentry',
    `CREATE TABLE fs_dentry (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  parent_ino INTEGER NOT NULL,
  ino INTEGER NOT NULL,
  UNIQUE(parent_ino, name)
)`,
  ),
  table(
    'fs_data',
    `CREATE TABLE fs_data (
  ino INTEGER NOT NULL,
  chunk_index INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (ino, chunk_index)
)`,
  ),
  table(
    'fs_symlink',
    `CREATE TABLE fs_symlink (
  ino INTEGER PRIMARY KEY,
  target TEXT NOT NULL
)`,
  ),
  table(
    'fs_whiteout',
    `CREATE TABLE fs_whiteout (
  path TEXT PRIMARY KEY,
  parent_path TEXT NOT NULL,
  created_at INTEGER NOT NULL
)`,
  ),
  table(
    'fs_origin',
    `CREATE TABLE fs_origin (
  delta_ino INTEGER PRIMARY KEY,
  base_ino INTEGER NOT NULL
)`,
  ),
  table(
    'kv_store',
    `CREATE TABLE kv_store (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  created_at INTEGER DEFAULT (unixepoch()),
  updated_at INTEGER DEFAULT (unixepoch())
)`,
  ),
]

/** Indexes of spec v0.4. */
export const SPEC_INDEXES: readonly SchemaObject[] = [
  index(
    'idx_tool_calls_name',
    'tool_calls',
    'CREATE INDEX idx_tool_calls_name ON tool_calls(name)',
  ),
  index(
    'idx_tool_calls_started_at',
    'tool_calls',
    'CREATE INDEX idx_tool_calls_started_at ON tool_calls(started_at)',
  ),
  index(
    'idx_fs_dentry_parent',
    'fs_dentry',
    'CREATE INDEX idx_fs_dentry_parent ON fs_dentry(parent_ino, name)',
  ),
  index(
    'idx_fs_whiteout_parent',
    'fs_whiteout',
    'CREATE INDEX idx_fs_whiteout_parent ON fs_whiteout(parent_path)',
  ),
  index(
    'idx_kv_store_created_at',
    'kv_store',
    'CREATE INDEX idx_kv_store_created_at ON kv_store(created_at)',
  ),
]

/** The columns of `fs_inode` after `ino`, in the spec's order. */
export const FS_INODE_COLUMNS = [
  'mode',
  'nlink',
  'uid',
  'gid',
  'size',
  'atime',
  'mtime',
  'ctime',
  'rdev',
  'atime_nsec',
  'mtime_nsec',
  'ctime_nsec',
] as const

/** Inode number of the root directory (spec: MUST be 1). */
export const ROOT_INO = 1
/** Spec default of `fs_config.chunk_size`. */
export const DEFAULT_CHUNK_SIZE = 4096
/** Smallest and largest chunk size accepted at creation. */
export const MIN_CHUNK_SIZE = 64
export const MAX_CHUNK_SIZE = 1 << 24
/** Spec version this package writes; also stored as `fs_config.schema_version` for interop. */
export const SPEC_VERSION = '0.4'

/** File type and permission bits of `fs_inode.mode`. */
export const S_IFMT = 0o170000
export const S_IFREG = 0o100000
export const S_IFDIR = 0o040000
export const S_IFLNK = 0o120000
export const S_IFIFO = 0o010000
export const S_IFCHR = 0o020000
export const S_IFBLK = 0o060000
export const S_IFSOCK = 0o140000
/** Permission bits plus setuid, setgid and sticky. */
export const MODE_PERMISSION_MASK = 0o7777

/**
 * Canonical form of a CREATE statement for comparisons: case-folded keywords aside, two texts
 * that differ only in white space or `IF NOT EXISTS` compare equal.
 */
export function normalizeDdl(sql: string): string {
  return sql
    .replace(/\s+/g, ' ')
    .replace(/\s*([(),])\s*/g, '$1')
    .replace(/\bIF NOT EXISTS\b\s*/i, '')
    .replace(/"(\w+)"/g, '$1')
    .trim()
    .toLowerCase()
}
