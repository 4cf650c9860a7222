import type { Transaction } from './guard-driver.js'

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
    description:
      'kv versions (agentfs_kv_version, kept by triggers) and tool-call metadata (agentfs_tool_call_meta)',
    statements: [
      `CREATE TABLE agentfs_counter (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
)`,
      `CREATE TABLE agentfs_kv_version (
  key TEXT PRIMARY KEY,
  version INTEGER NOT NULL
)`,
      // Every write to kv_store, by this library or any other, takes the next global version.
      `CREATE TRIGGER agentfs_kv_version_insert AFTER INSERT ON kv_store BEGIN
  UPDATE agentfs_counter SET value = value + 1 WHERE name = 'kv_version';
  DELETE FROM agentfs_kv_version WHERE key = NEW.key;
  INSERT INTO agentfs_kv_version (key, version) SELECT NEW.key, value FROM agentfs_counter WHERE name = 'kv_version';
END`,
      `CREATE TRIGGER agentfs_kv_version_update AFTER UPDATE ON kv_store BEGIN
  UPDATE agentfs_counter SET value = value + 1 WHERE name = 'kv_version';
  DELETE FROM agentfs_kv_version WHERE key = OLD.key OR key = NEW.key;
  INSERT INTO agentfs_kv_version (key, version) SELECT NEW.key, value FROM agentfs_counter WHERE name = 'kv_version';
END`,
      `CREATE TRIGGER agentfs_kv_version_delete AFTER DELETE ON kv_store BEGIN
  DELETE FROM agentfs_kv_version WHERE key = OLD.key;
END`,
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
      // Existing keys get versions 1..n in key order; the counter continues from n.
      await tx.execute({
        sql: 'INSERT INTO agentfs_kv_version (key, version) SELECT key, ROW_NUMBER() OVER (ORDER BY key) FROM kv_store',
      })
      await tx.execute({
        sql: "INSERT INTO agentfs_counter (name, value) VALUES ('kv_version', (SELECT COUNT(*) FROM kv_store))",
      })
    },
  },
]

/** The `PRAGMA user_version` a database has after migrating with this version of the library. */
export const SCHEMA_VERSION: number = EXTENSION_MIGRATIONS.at(-1)?.version ?? 0
