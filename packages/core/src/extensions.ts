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
]

/** The `PRAGMA user_version` a database has after migrating with this version of the library. */
export const SCHEMA_VERSION: number = EXTENSION_MIGRATIONS.at(-1)?.version ?? 0
