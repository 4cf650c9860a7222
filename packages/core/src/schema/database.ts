import type { AuditKey } from '../audit/audit-chain.js'
import { setIntegrityKeys } from '../audit/integrity-keys.js'
import { type Clock, type IdSource, randomIds, systemClock } from '../clock.js'
import {
  type ChunkFormat,
  type Compression,
  checkCompression,
  loadCompressor,
} from '../content/chunk-codec.js'
import { freeDeadOrphans } from '../content/orphans.js'
import type { Driver, QueryResult, SqlValue, Statement } from '../driver/driver.js'
import {
  type GuardedDriver,
  guardDriver,
  type Queryable,
  type Transaction,
} from '../driver/guard-driver.js'
import { AgentFsError } from '../errors.js'
import { hiddenFtsPages } from '../fsck/fsck.js'
import { inspectLayout } from './layout.js'
import { readChunkFormat } from './meta.js'
import { checkChunkSize, type MigrationPlan, migrate, planFromReport } from './migrate.js'

/** Options of {@link openDatabase}. */
export interface OpenDatabaseOptions {
  /** The engine. Its lifetime passes to the returned database: closing one closes the other. */
  readonly driver: Driver | GuardedDriver
  /** Where time comes from (default: the wall clock with nanoseconds). */
  readonly clock?: Clock
  /** Where ids come from (default: random UUIDs). */
  readonly ids?: IdSource
  /**
   * `fs_config.chunk_size` for a new database (default 4096). Fixed at creation: passing a
   * different value for an existing database is an error.
   */
  readonly chunkSize?: number
  /**
   * Compress file content (`fs_data` chunks) of a new database with zstd; see the README's
   * "Compression". Fixed at creation: passing it for an existing database that is not
   * compressed the same way is an error.
   */
  readonly compression?: Compression
  /** Run migrations on open (default true). With false, an out-of-date database is refused. */
  readonly migrate?: boolean
  /**
   * HMAC-SHA256 keys that seal idempotency records (the first seals; all are accepted, so a key
   * can rotate). With keys, a record none of them verifies is refused instead of replayed. Keep
   * them outside the database; see `setIntegrityKeys`.
   */
  readonly integrityKeys?: readonly AuditKey[]
}

/** An open AgentFS database: the guarded driver plus what every domain package needs. */
export interface AgentDatabase extends Queryable {
  readonly driver: GuardedDriver
  readonly clock: Clock
  readonly ids: IdSource
  /** `fs_config.chunk_size` as stored in the database. */
  readonly chunkSize: number
  /** How `fs_data` chunks are stored: the chunk size and the compression (null: none). */
  readonly chunks: ChunkFormat
  /** True when `tool_calls` has the reference SDK's extra `status` column. */
  readonly referenceToolCalls: boolean
  /** What the migration on open did (an empty `steps` when nothing). */
  readonly migration: MigrationPlan
  /** The driver's generation (see `GuardedDriver.generation`). */
  readonly generation: number
  /** Closes the driver after running calls finish. Idempotent. */
  close(): Promise<void>
}

function compressionMismatch(stored: unknown): AgentFsError {
  return new AgentFsError(
    'INVALID_ARGUMENT',
    `This database was created ${stored ? `with ${String(stored)} compression` : 'without compression'}; compression is chosen at creation. Omit compression, or copy the files into a new database created with it`,
  )
}

function isGuarded(driver: Driver | GuardedDriver): driver is GuardedDriver {
  return (
    'driver' in driver &&
    typeof (driver as GuardedDriver).close === 'function' &&
    'inTransaction' in driver
  )
}

/**
 * Opens a database through any driver: migrates it to the current layout (one transaction),
 * reads its chunk size, and returns the handle domain packages take.
 *
 * @example
 * const db = await openDatabase({ driver: betterSqlite3Driver({ path: 'agent.db' }) })
 */
export async function openDatabase(options: OpenDatabaseOptions): Promise<AgentDatabase> {
  const driver = isGuarded(options.driver) ? options.driver : guardDriver(options.driver)
  if (options.integrityKeys !== undefined) setIntegrityKeys(driver, options.integrityKeys)
  const clock = options.clock ?? systemClock()
  const ids = options.ids ?? randomIds()
  if (options.chunkSize !== undefined) checkChunkSize(options.chunkSize)
  if (options.compression !== undefined) {
    checkCompression(options.compression)
    await loadCompressor()
  }

  // The Turso engine 0.7 cannot load a schema holding FTS5 tables: its upserts then fail on
  // every table. Refused here with what to do, before any statement could half-work.
  if (await hiddenFtsPages(driver)) {
    await driver.close().catch(() => {})
    throw new AgentFsError(
      'UNSUPPORTED_LAYOUT',
      'This database keeps its full-text index in FTS5 tables, which this engine cannot open; switch the index to the portable store first with a driver that has FTS5 (better-sqlite3, libSQL): "agentfs search DB --settings --store postings"',
    )
  }

  // Compression is chosen at creation: asking for it on a database that exists without it is
  // refused here, before a migration could change anything.
  if (options.compression !== undefined) {
    const report = await inspectLayout(driver)
    if (report.layout !== 'empty') {
      const stored = await driver
        .execute<{ value: unknown }>({
          sql: "SELECT value FROM fs_config WHERE key = 'compression'",
        })
        .then((r) => r.rows[0]?.value)
        .catch(() => undefined)
      if (stored !== options.compression) throw compressionMismatch(stored)
    }
  }

  let migration: MigrationPlan
  if (options.migrate === false) {
    migration = planFromReport(await inspectLayout(driver))
    if (migration.steps.length > 0) {
      throw new AgentFsError(
        'UNSUPPORTED_LAYOUT',
        `The database needs migration (${migration.steps.map((s) => s.description).join('; ')}); open it with migrate: true or run "agentfs migrate"`,
      )
    }
  } else {
    migration = await migrate(driver, {
      clock,
      ...(options.chunkSize === undefined ? {} : { chunkSize: options.chunkSize }),
      ...(options.compression === undefined ? {} : { compression: options.compression }),
    })
  }

  const chunks = await readChunkFormat(driver)
  if (chunks.codec) await loadCompressor()
  const stored = chunks.size
  if (options.chunkSize !== undefined && options.chunkSize !== stored) {
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `This database was created with chunk_size ${stored}; the chunk size cannot change after creation. Omit chunkSize or pass ${stored}`,
    )
  }
  if (options.compression !== undefined && chunks.codec?.name !== options.compression)
    throw compressionMismatch(chunks.codec?.name)
  const columns = await driver.execute<{ name: string }>({
    sql: "SELECT name FROM pragma_table_info('tool_calls') WHERE name = 'status'",
  })
  // Files a process unlinked while open and never closed (it was killed): freed now. Best
  // effort: a read-only or busy database opens all the same, and `fsck --repair` frees them too.
  await freeDeadOrphans(driver).catch(() => 0)

  return {
    driver,
    clock,
    ids,
    chunkSize: stored,
    chunks,
    referenceToolCalls: columns.rows.length > 0,
    migration,
    inTransaction: false,
    get capabilities() {
      return driver.capabilities
    },
    get generation() {
      return driver.generation
    },
    execute: <Row = Record<string, SqlValue>>(statement: Statement): Promise<QueryResult<Row>> =>
      driver.execute<Row>(statement),
    ...(driver.readThen !== undefined && {
      readThen: <Row = Record<string, SqlValue>>(
        read: Statement,
        next: (result: QueryResult<Row>) => Statement | undefined,
      ) => driver.readThen!<Row>(read, next),
    }),
    transaction: <T>(fn: (tx: Transaction) => Promise<T>) => driver.transaction(fn),
    close: () => driver.close(),
  }
}
