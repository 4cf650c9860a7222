import type { Clock } from '../clock.js'
import type { Compression } from '../content/chunk-codec.js'
import type { Queryable } from '../driver/guard-driver.js'
import { AgentFsError } from '../errors.js'
import { EXTENSION_MIGRATIONS, SCHEMA_VERSION } from './extensions.js'
import { inspectLayout, type LayoutReport, type SpecLayout } from './layout.js'
import {
  MAX_CHUNK_SIZE,
  MIN_CHUNK_SIZE,
  normalizeDdl,
  ROOT_INO,
  type SchemaObject,
  SPEC_INDEXES,
  SPEC_TABLES,
} from './schema.js'

/** One planned change, described for humans (`agentfs migrate --dry-run`). */
export interface MigrationStep {
  readonly kind:
    | 'create-table'
    | 'rebuild-table'
    | 'add-columns'
    | 'recut-data'
    | 'create-index'
    | 'recreate-index'
    | 'init-config'
    | 'init-root'
    | 'extension'
  readonly target: string
  readonly description: string
}

/** What `migrate` will do (or did). */
export interface MigrationPlan {
  readonly from: SpecLayout
  readonly referenceToolCalls: boolean
  readonly fromVersion: number
  readonly toVersion: number
  readonly steps: readonly MigrationStep[]
}

export interface MigrateOptions {
  /** Chunk size for a database that has none yet (new, or v0.0). Ignored otherwise. */
  readonly chunkSize?: number
  /** Compression of `fs_data` chunks for a new (empty) database. Ignored otherwise. */
  readonly compression?: Compression
  readonly clock: Clock
}

export const OLD_SUFFIX = '__agentfs_old'

/** Derived values for columns an older layout lacks, as SQL over the old table. */
export const DERIVED: Record<string, Record<string, string>> = {
  fs_inode: {
    nlink: `(SELECT COUNT(*) FROM fs_dentry d WHERE d.ino = old.ino) + (CASE WHEN old.ino = ${ROOT_INO} THEN 1 ELSE 0 END)`,
  },
  fs_whiteout: {
    parent_path:
      "CASE WHEN instr(substr(old.path, 2), '/') = 0 THEN '/' ELSE substr(old.path, 1, length(rtrim(old.path, replace(old.path, '/', ''))) - 1) END",
  },
}

/** Column names of a canonical CREATE TABLE statement. */
export function canonicalColumns(spec: SchemaObject): string[] {
  const body = spec.sql.slice(spec.sql.indexOf('(') + 1, spec.sql.lastIndexOf(')'))
  return body
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !/^(UNIQUE|PRIMARY KEY)\s*\(/i.test(line))
    .map((line) => line.split(/\s+/)[0]!)
}

/** Works out the steps that bring a database to the current layout. Read-only. */
export function planFromReport(report: LayoutReport): MigrationPlan {
  const steps: MigrationStep[] = []
  const { objects, columns } = report
  for (const spec of SPEC_TABLES) {
    const found = objects.get(spec.name)
    const have = columns.get(spec.name)
    if (!found || !have) {
      steps.push({ kind: 'create-table', target: spec.name, description: `create ${spec.name}` })
      continue
    }
    if (spec.name === 'fs_data' && have.includes('offset')) {
      steps.push({
        kind: 'recut-data',
        target: 'fs_data',
        description: 're-cut v0.0 offset chunks into fixed chunk_size chunks',
      })
      continue
    }
    if (normalizeDdl(found.sql ?? '') === normalizeDdl(spec.sql)) continue
    const want = canonicalColumns(spec)
    const extra = have.filter((c) => !want.includes(c))
    const missing = want.filter((c) => !have.includes(c))
    if (extra.length > 0) {
      // Never drop a column someone else relies on (e.g. the reference SDK's tool_calls.status).
      if (missing.length > 0) {
        steps.push({
          kind: 'add-columns',
          target: spec.name,
          description: `add ${missing.join(', ')} to ${spec.name} (keeping its extra columns ${extra.join(', ')})`,
        })
      }
      continue
    }
    steps.push({
      kind: 'rebuild-table',
      target: spec.name,
      description: `rebuild ${spec.name} with the v0.4 definition${missing.length ? ` (adds ${missing.join(', ')})` : ''}`,
    })
  }
  const rebuilt = new Set(steps.filter((s) => s.kind !== 'add-columns').map((s) => s.target))
  for (const spec of SPEC_INDEXES) {
    const found = objects.get(spec.name)
    if (!found || rebuilt.has(spec.table)) {
      steps.push({
        kind: 'create-index',
        target: spec.name,
        description: `create index ${spec.name}`,
      })
    } else if (normalizeDdl(found.sql ?? '') !== normalizeDdl(spec.sql)) {
      steps.push({
        kind: 'recreate-index',
        target: spec.name,
        description: `recreate index ${spec.name}`,
      })
    }
  }
  if (report.layout === 'empty' || report.agentfsVersion < 1) {
    steps.push({
      kind: 'init-config',
      target: 'fs_config',
      description: 'ensure chunk_size and schema_version',
    })
    steps.push({
      kind: 'init-root',
      target: 'fs_inode',
      description: 'ensure the root directory (ino 1)',
    })
  }
  for (const ext of EXTENSION_MIGRATIONS) {
    if (ext.version > report.agentfsVersion) {
      steps.push({ kind: 'extension', target: `v${ext.version}`, description: ext.description })
    }
  }
  return {
    from: report.layout,
    referenceToolCalls: report.referenceToolCalls,
    fromVersion: report.agentfsVersion,
    toVersion: Math.max(SCHEMA_VERSION, report.agentfsVersion),
    steps,
  }
}

/** Plans the migration of the database behind `q` without changing it. */
export async function planMigration(q: Queryable): Promise<MigrationPlan> {
  return planFromReport(await inspectLayout(q))
}

/** Validates a chunk size given at creation. */
export function checkChunkSize(chunkSize: number): number {
  if (!Number.isInteger(chunkSize) || chunkSize < MIN_CHUNK_SIZE || chunkSize > MAX_CHUNK_SIZE) {
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `chunkSize must be an integer from ${MIN_CHUNK_SIZE} to ${MAX_CHUNK_SIZE} bytes, got ${chunkSize}`,
    )
  }
  return chunkSize
}
