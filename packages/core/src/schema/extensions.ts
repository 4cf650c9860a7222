import type { Transaction } from '../driver/guard-driver.js'

/**
 * One step of our own schema (tables outside the spec, per its extension rule). Steps run in
 * order inside the migration transaction; `PRAGMA user_version` records the last one applied.
 * Every table a step creates is documented in SPEC-EXTENSIONS.md at the repository root.
 */
export interface ExtensionMigration {
  readonly version: number
  readonly description: string
  /** Statements to run; each MUST be safe on a database that has the spec v0.4 layout. */
  readonly statements: readonly string[]
  /** Optional back-fill after the statements. */
  readonly backfill?: (tx: Transaction) => Promise<void>
}

/**
 * Version 1 marks a database whose spec tables this library has verified or brought to the
 * v0.4 layout. Later versions add extension tables.
 */
export const EXTENSION_MIGRATIONS: readonly ExtensionMigration[] = [
  {
    version: 1,
    description: 'spec v0.4 layout verified (fs_config.schema_version = 0.4)',
    statements: [],
  },
  {
    version: 2,
    description: 'kv versions (agentfs_kv_version) and tool-call metadata (agentfs_tool_call_meta)',
    statements: [
      // One row per key ever written by AgentFS; it outlives a delete (a tombstone), so a
      // re-created key continues from the old version and versions never repeat.
      `CREATE TABLE agentfs_kv_version (
  key TEXT PRIMARY KEY,
  version INTEGER NOT NULL
)`,
      `CREATE TABLE agentfs_tool_call_meta (
  id INTEGER PRIMARY KEY,
  session_id TEXT,
  parent_id INTEGER,
  started_at_ns INTEGER NOT NULL,
  completed_at_ns INTEGER,
  metadata TEXT
)`,
      'CREATE INDEX agentfs_tool_call_meta_session ON agentfs_tool_call_meta(session_id)',
      'CREATE INDEX agentfs_tool_call_meta_parent ON agentfs_tool_call_meta(parent_id)',
    ],
    async backfill(tx) {
      await tx.execute({
        sql: 'INSERT INTO agentfs_kv_version (key, version) SELECT key, 1 FROM kv_store',
      })
    },
  },
  {
    version: 3,
    description: 'overlay base state (agentfs_overlay_base_state) for conflict checks at commit',
    statements: [
      // What a base entry looked like when the overlay first copied it up or hid it, so that
      // commit() can refuse to overwrite a base that changed since.
      `CREATE TABLE agentfs_overlay_base_state (
  path TEXT PRIMARY KEY,
  token TEXT NOT NULL
)`,
    ],
  },
  {
    version: 4,
    description: 'the schema version in a table (agentfs_meta), where copies of the rows carry it',
    statements: [
      // `PRAGMA user_version` lives in the file header: a sync engine that ships rows (Turso
      // sync) does not carry it, and a synced copy would look never migrated. The version is
      // kept here too; the larger of the two counts.
      `CREATE TABLE agentfs_meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
)`,
    ],
  },
  {
    version: 5,
    description: 'the precise time of each kv write (agentfs_kv_version.updated_us)',
    statements: [
      // kv_store.updated_at has whole seconds; synced clients order concurrent writes of a
      // key by this instead (microseconds since the epoch; NULL for writes before it existed).
      'ALTER TABLE agentfs_kv_version ADD COLUMN updated_us INTEGER',
    ],
  },
  {
    version: 6,
    description:
      'history: the change feed (agentfs_change), snapshots (agentfs_snapshot, agentfs_snap_*) and their chunk store (agentfs_blob)',
    statements: [
      // One row per change, appended in the transaction of the change. `seq` only grows:
      // rows are trimmed from the oldest end, never renumbered.
      `CREATE TABLE agentfs_change (
  seq INTEGER PRIMARY KEY,
  at_us INTEGER NOT NULL,
  op TEXT NOT NULL,
  path TEXT,
  path2 TEXT,
  ino INTEGER,
  dir_ino INTEGER,
  dir2_ino INTEGER,
  version TEXT,
  size INTEGER,
  session_id TEXT,
  call_token TEXT
)`,
      // No index: each would add a page to every write's commit (measured: a fifth of the cost
      // of creating a small file). Queries by path or inode scan newest first and stop at
      // their limit; trim() keeps the table as short as wanted.
      // The token a tool call's changes carry in agentfs_change.call_token.
      'ALTER TABLE agentfs_tool_call_meta ADD COLUMN call_token TEXT',
      'CREATE INDEX agentfs_tool_call_meta_token ON agentfs_tool_call_meta(call_token)',
      `CREATE TABLE agentfs_snapshot (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  created_us INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  reason TEXT,
  overlay TEXT
)`,
      // Each row holds one inode (or entry, or key) as it was for the snapshots from id
      // `since` up to, not including, `until` (NULL: still as it is at the newest snapshot).
      `CREATE TABLE agentfs_snap_inode (
  ino INTEGER NOT NULL,
  since INTEGER NOT NULL,
  until INTEGER,
  mode INTEGER NOT NULL,
  nlink INTEGER NOT NULL,
  uid INTEGER NOT NULL,
  gid INTEGER NOT NULL,
  size INTEGER NOT NULL,
  atime INTEGER NOT NULL,
  mtime INTEGER NOT NULL,
  ctime INTEGER NOT NULL,
  rdev INTEGER NOT NULL,
  atime_nsec INTEGER NOT NULL,
  mtime_nsec INTEGER NOT NULL,
  ctime_nsec INTEGER NOT NULL,
  target TEXT,
  chunks BLOB,
  PRIMARY KEY (ino, since)
)`,
      'CREATE INDEX agentfs_snap_inode_until ON agentfs_snap_inode(until)',
      `CREATE TABLE agentfs_snap_dentry (
  parent_ino INTEGER NOT NULL,
  name TEXT NOT NULL,
  ino INTEGER NOT NULL,
  since INTEGER NOT NULL,
  until INTEGER,
  PRIMARY KEY (parent_ino, name, since)
)`,
      'CREATE INDEX agentfs_snap_dentry_until ON agentfs_snap_dentry(until)',
      `CREATE TABLE agentfs_snap_kv (
  key TEXT NOT NULL,
  since INTEGER NOT NULL,
  until INTEGER,
  value TEXT NOT NULL,
  created_at INTEGER,
  updated_at INTEGER,
  PRIMARY KEY (key, since)
)`,
      'CREATE INDEX agentfs_snap_kv_until ON agentfs_snap_kv(until)',
      // Past versions of files (when versions are on): the content after a change, by chunk hash.
      `CREATE TABLE agentfs_file_version (
  id INTEGER PRIMARY KEY,
  ino INTEGER NOT NULL,
  version TEXT NOT NULL,
  path TEXT,
  at_us INTEGER NOT NULL,
  size INTEGER NOT NULL,
  chunks BLOB NOT NULL
)`,
      'CREATE INDEX agentfs_file_version_ino ON agentfs_file_version(ino, version)',
      'CREATE INDEX agentfs_file_version_at ON agentfs_file_version(at_us)',
      // Snapshot file contents, one row per distinct chunk (SHA-256 of its bytes); `refs`
      // counts the references of agentfs_snap_inode and agentfs_file_version rows to it.
      `CREATE TABLE agentfs_blob (
  hash BLOB PRIMARY KEY,
  data BLOB NOT NULL,
  refs INTEGER NOT NULL
)`,
    ],
  },
  {
    version: 7,
    description:
      'partial indexes on agentfs_tool_call_meta (session_id, parent_id, call_token): only rows that have one',
    statements: [
      // A call recorded without a session, parent or token touched three index pages for
      // nothing: each page is a WAL frame in the commit (measured: a record costs 1.7× the
      // spec's own insert with them, 1.2× without). `x = ?` implies `x IS NOT NULL`, so
      // look-ups by these columns still use the indexes.
      'DROP INDEX agentfs_tool_call_meta_session',
      'DROP INDEX agentfs_tool_call_meta_parent',
      'DROP INDEX agentfs_tool_call_meta_token',
      'CREATE INDEX agentfs_tool_call_meta_session ON agentfs_tool_call_meta(session_id) WHERE session_id IS NOT NULL',
      'CREATE INDEX agentfs_tool_call_meta_parent ON agentfs_tool_call_meta(parent_id) WHERE parent_id IS NOT NULL',
      'CREATE INDEX agentfs_tool_call_meta_token ON agentfs_tool_call_meta(call_token) WHERE call_token IS NOT NULL',
    ],
  },
  {
    version: 8,
    description:
      'the audit chain (agentfs_audit_chain, agentfs_audit_anchor): tamper evidence over tool calls and the change feed',
    statements: [
      // One row per sealed row of a stream ('call': tool_calls, 'change': agentfs_change),
      // written after the row (see audit-chain.ts); the digest covers the row and the
      // previous digest of the same slot.
      `CREATE TABLE agentfs_audit_chain (
  stream TEXT NOT NULL,
  seq INTEGER NOT NULL,
  digest BLOB NOT NULL,
  key_id TEXT,
  sealed_us INTEGER NOT NULL,
  PRIMARY KEY (stream, seq)
)`,
      // Where a slot's chain starts after a trim: the last trimmed row and its digest.
      `CREATE TABLE agentfs_audit_anchor (
  stream TEXT NOT NULL,
  slot INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  digest BLOB NOT NULL,
  PRIMARY KEY (stream, slot)
)`,
    ],
  },
  {
    version: 9,
    description:
      'content hashes in the change feed (agentfs_change.hash, prev_hash): the SHA-256 of a file after and before each content change',
    statements: [
      // 32 bytes each; NULL when the change is not of content or the hash was not known (see
      // SPEC-EXTENSIONS.md "Content hashes in the feed").
      'ALTER TABLE agentfs_change ADD COLUMN hash BLOB',
      'ALTER TABLE agentfs_change ADD COLUMN prev_hash BLOB',
    ],
  },
  {
    version: 10,
    description:
      'idempotency keys (agentfs_idempotency): a request carrying a key is applied once, its result kept for retries',
    statements: [
      // One row per key used in a scope, written in the transaction of the change it guards.
      // `args_sha256` is the SHA-256 of the request's canonical JSON arguments, `args_digests`
      // the digest of each top-level argument (to name what differs on a mismatch); `result`
      // its result as JSON; `call_id` the tool_calls row that recorded it (if any).
      `CREATE TABLE agentfs_idempotency (
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  args_sha256 BLOB NOT NULL,
  args_digests TEXT,
  result TEXT,
  call_id INTEGER,
  created_us INTEGER NOT NULL,
  expires_us INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
)`,
      // Expired rows are deleted a hundred at a time, oldest first, through this index.
      'CREATE INDEX agentfs_idempotency_expires ON agentfs_idempotency(expires_us)',
    ],
  },
  {
    version: 11,
    description:
      'two-phase tool calls (agentfs_tool_call_pending): a call is visible from its start, so a crash mid-call leaves a record; transaction ids in the feed (agentfs_change.txid)',
    statements: [
      // NULL for a transaction's first change (its id is its own seq); the first change's seq
      // for the others. Indexed only where set: most transactions make one change.
      'ALTER TABLE agentfs_change ADD COLUMN txid INTEGER',
      'CREATE INDEX agentfs_change_txid ON agentfs_change(txid) WHERE txid IS NOT NULL',
      // One row per call under way, committed when it starts and deleted in the transaction
      // that writes its tool_calls row (which stays insert-only, written at completion).
      // `token` is the call token its changes carry in the feed; `owner` is host:pid.
      `CREATE TABLE agentfs_tool_call_pending (
  token TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  parameters TEXT,
  session_id TEXT,
  parent_id INTEGER,
  started_at_ns INTEGER NOT NULL,
  owner TEXT
)`,
    ],
  },
  {
    version: 12,
    description:
      "audit payloads (agentfs_payload, agentfs_payload_chunk): tool-call parameters, results and errors over 64 KiB kept whole, content-addressed, within a budget; a call's changes by index",
    statements: [
      // One row per distinct payload: `sha256` (hex) of its UTF-8 bytes, `size` in bytes.
      `CREATE TABLE agentfs_payload (
  sha256 TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  chunk_size INTEGER NOT NULL,
  created_at_ns INTEGER NOT NULL
)`,
      // Its bytes in order, `chunk_size` each (the last one shorter).
      `CREATE TABLE agentfs_payload_chunk (
  sha256 TEXT NOT NULL,
  chunk_index INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (sha256, chunk_index)
)`,
      // JSON {column: sha256} of the columns moved to the store; NULL when none was.
      'ALTER TABLE agentfs_tool_call_meta ADD COLUMN payloads TEXT',
      'ALTER TABLE agentfs_tool_call_pending ADD COLUMN payloads TEXT',
      // What one tool call changed, without a scan of the feed (calls' changes only).
      'CREATE INDEX agentfs_change_call ON agentfs_change(call_token) WHERE call_token IS NOT NULL',
    ],
  },
  {
    version: 13,
    description:
      'sealed idempotency records (agentfs_idempotency.mac, key_id): with integrity keys, a record is trusted only when its HMAC verifies, so a planted one is refused',
    statements: [
      // HMAC-SHA256 of the record under the key `key_id` names; NULL when written without keys.
      'ALTER TABLE agentfs_idempotency ADD COLUMN mac BLOB',
      'ALTER TABLE agentfs_idempotency ADD COLUMN key_id TEXT',
    ],
  },
  {
    version: 14,
    description:
      'memory events (agentfs_memory_event): every write of the memory toolbelt (@agentfs/memory), with its hashes, lint, correlation ids, saga status and integrity HMAC',
    statements: [
      // One row per write of the memory toolbelt, inserted in the write's transaction.
      // `status`: pending → committed | failed (seed 003's saga); hashes are `sha256:` + hex of
      // the canonical text; `line_hash` the HMAC of the canonical content written,
      // `integrity_hmac` the HMAC of the row (see SPEC-EXTENSIONS.md), under the key named by
      // `integrity_salt_version`.
      `CREATE TABLE agentfs_memory_event (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  type TEXT NOT NULL,
  op TEXT NOT NULL,
  tool TEXT NOT NULL,
  file_path TEXT,
  section_anchor TEXT,
  rationale TEXT,
  override_rationale TEXT,
  evidence_refs TEXT,
  before_hash TEXT,
  after_hash TEXT,
  intended_hash TEXT,
  lint TEXT,
  tool_call_id TEXT,
  transaction_id INTEGER,
  agent_action_id TEXT,
  idempotency_key TEXT,
  status TEXT NOT NULL,
  error TEXT,
  line_hash BLOB,
  integrity_hmac BLOB,
  integrity_salt_version TEXT,
  created_us INTEGER NOT NULL,
  updated_us INTEGER NOT NULL
)`,
      'CREATE INDEX agentfs_memory_event_user ON agentfs_memory_event(user_id, created_us)',
      "CREATE INDEX agentfs_memory_event_pending ON agentfs_memory_event(status) WHERE status = 'pending'",
    ],
  },
  {
    version: 15,
    description:
      "stored MIME types (agentfs_mime): a file's media type when it was set (on create, or later), Stream-FS's mimeType; files without one have it derived from their name and content",
    statements: [
      // One row per regular file whose type was set; freed with its inode, copied by cp and
      // copyFile, moved with the file when a synced database's rewrite gives it a new inode.
      `CREATE TABLE agentfs_mime (
  ino INTEGER PRIMARY KEY,
  mime_type TEXT NOT NULL
)`,
    ],
  },
  {
    version: 16,
    description:
      "messages on changes (agentfs_change.message): why a change or a group of changes was made, as `writeFile(…, { message })`, a tool's `message` argument or `agentfs fs write -m` gave it",
    statements: [
      // NULL when none was given; covered by the audit chain where set (SPEC-EXTENSIONS.md).
      'ALTER TABLE agentfs_change ADD COLUMN message TEXT',
    ],
  },
  {
    version: 17,
    description:
      'overlay ancestors (agentfs_overlay_base_content): the text a copy-on-write overlay copied up from its base, so a commit can merge a file both sides changed',
    statements: [
      // One row per base version a copy-up read (text files of at most 8 MiB); the ancestor of
      // a path is the row whose token is the one agentfs_overlay_base_state holds for it.
      `CREATE TABLE agentfs_overlay_base_content (
  path TEXT NOT NULL,
  token TEXT NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (path, token)
)`,
    ],
  },
  {
    version: 18,
    description:
      'the full-text index (agentfs_search_doc, agentfs_search_posting): which version of each text file is indexed, and its words where the engine has no FTS5',
    statements: [
      // One row per regular file the index has looked at: the version (ctime in ns) it indexed,
      // its word count, -1 when it is not indexed (not text, or over the size limit).
      `CREATE TABLE agentfs_search_doc (
  ino INTEGER PRIMARY KEY,
  version INTEGER NOT NULL,
  words INTEGER NOT NULL
)`,
      // The postings store (engines without FTS5): one row per word of a file version, its
      // count and positions. Keyed by version, so rows of two synced clients that indexed
      // different versions of one file never mix: only rows of the doc row's version count.
      `CREATE TABLE agentfs_search_posting (
  term TEXT NOT NULL,
  ino INTEGER NOT NULL,
  version INTEGER NOT NULL,
  freq INTEGER NOT NULL,
  positions TEXT NOT NULL,
  PRIMARY KEY (term, ino, version)
)`,
      'CREATE INDEX agentfs_search_posting_ino ON agentfs_search_posting(ino)',
    ],
  },
  {
    version: 19,
    description:
      "semantic search (agentfs_embedding_doc, agentfs_embedding): which version of each text file a model's vectors describe, and the vector of each of its chunks",
    statements: [
      // One row per regular file and model the embedder has looked at: the version (ctime in
      // ns) embedded, its chunk count, -1 when it is not embedded (not text, or too large).
      `CREATE TABLE agentfs_embedding_doc (
  ino INTEGER NOT NULL,
  model TEXT NOT NULL,
  version INTEGER NOT NULL,
  chunks INTEGER NOT NULL,
  PRIMARY KEY (ino, model)
)`,
      // One row per chunk of a file version: the lines it spans and its vector (little-endian
      // float32s). Keyed by version: only rows of the doc row's version count.
      `CREATE TABLE agentfs_embedding (
  ino INTEGER NOT NULL,
  model TEXT NOT NULL,
  version INTEGER NOT NULL,
  chunk INTEGER NOT NULL,
  start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL,
  vector BLOB NOT NULL,
  PRIMARY KEY (ino, model, version, chunk)
)`,
    ],
  },
  {
    version: 20,
    description:
      'compressed chunks understood (fs_config.compression, zstd frames in fs_data); a compression a reader does not know is refused',
    // Nothing to create: a database is compressed from its creation on (migrate's init-config
    // step writes fs_config.compression and the guard trigger); this version marks readers
    // that look for the key.
    statements: [],
  },
]

/** The row of `agentfs_meta` that holds the schema version. */
export const META_SCHEMA_VERSION = 'schema_version'

/**
 * The schema version a database has after migrating with this version of the library, in
 * `PRAGMA user_version` and in `agentfs_meta`.
 */
export const SCHEMA_VERSION: number = EXTENSION_MIGRATIONS.at(-1)?.version ?? 0
