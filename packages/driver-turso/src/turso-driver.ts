import { createRequire } from 'node:module'
import { AgentFsError, type DatabaseKey, type Driver, mapSqliteError } from '@agentfs/core'
import {
  connectionOver,
  createSyncDriver,
  keyBytes,
  type LocalDriverConfig,
  localSource,
  type SyncConnection,
  type SyncStatement,
  wrongKeyError,
} from '@agentfs/core/driver-kit'
import { HexVariants, hexParams } from './blob-binding.js'
import { engineError, PRAGMA_FUNCTION, RETURNING, rethrow } from './engine.js'

/** The parts of a Turso `Statement` (`@tursodatabase/database/compat`) this driver uses. */
export interface TursoStatement {
  readonly reader: boolean
  all(params: readonly unknown[]): unknown[]
  run(params: readonly unknown[]): { changes: number; lastInsertRowid: number }
  safeIntegers(toggle?: boolean): unknown
  close(): void
}

/** The parts of a Turso `Database` (`@tursodatabase/database/compat`) this driver uses. */
export interface TursoDatabase {
  readonly open: boolean
  readonly inTransaction: boolean
  prepare(sql: string): TursoStatement
  exec(sql: string): void
  close(): void
}

/** The Turso engine's ciphers, with the size of their keys in bytes. */
export const TURSO_CIPHERS = {
  aegis256: 32,
  aegis256x2: 32,
  aegis128l: 16,
  aegis128x2: 16,
  aegis128x4: 16,
  aes256gcm: 32,
  aes128gcm: 16,
} as const
export type TursoCipher = keyof typeof TURSO_CIPHERS

/**
 * Options of {@link tursoDriver}: a `path`, or a `database` from `@tursodatabase/database/compat`
 * (the synchronous API). Give exactly one.
 */
export interface TursoDriverConfig extends LocalDriverConfig<TursoDatabase> {
  /**
   * Encrypt the database at rest with the engine's own encryption (only with `path`): a raw key
   * of the cipher's size, as hex digits (`openssl rand -hex 32` for a 256-bit cipher) or bytes
   * — the key the `agentfs` CLI of the Turso project takes. A new file is created encrypted; an
   * existing one must have been encrypted with this key and cipher (else `WRONG_KEY`).
   */
  readonly key?: DatabaseKey
  /** The cipher of `key` (default `aegis256`); see {@link TURSO_CIPHERS}. */
  readonly cipher?: TursoCipher
}

interface TursoEncryption {
  readonly cipher: TursoCipher
  readonly hexkey: string
}

function encryptionOf(config: TursoDriverConfig): TursoEncryption | undefined {
  if (config.key === undefined) {
    if (config.cipher !== undefined)
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        'tursoDriver: cipher without key; give the key too, or neither',
      )
    return undefined
  }
  if (config.database !== undefined)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'tursoDriver: key goes with path; a database handed in open is keyed by whoever opened it',
    )
  const cipher = config.cipher ?? 'aegis256'
  const size = Object.hasOwn(TURSO_CIPHERS, cipher) ? TURSO_CIPHERS[cipher] : undefined
  if (size === undefined)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `tursoDriver: unknown cipher ${JSON.stringify(cipher)}; one of ${Object.keys(TURSO_CIPHERS).join(', ')}`,
    )
  const key = config.key
  const bytes =
    typeof key === 'string'
      ? /^(?:[0-9a-fA-F]{2})+$/.test(key.trim())
        ? Buffer.from(key.trim(), 'hex')
        : undefined
      : keyBytes(key, 'tursoDriver')
  if (bytes === undefined || bytes.length !== size)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `tursoDriver: ${cipher} takes a raw key of ${size} bytes (${size * 2} hex digits, e.g. from openssl rand -hex ${size}), not a passphrase`,
    )
  return { cipher, hexkey: bytes.toString('hex') }
}

type TursoConstructor = new (
  path: string,
  options?: {
    timeout?: number
    encryption?: TursoEncryption
    experimental?: string[]
  },
) => TursoDatabase

function openFile(path: string, encryption: TursoEncryption | undefined): TursoDatabase {
  let Database: TursoConstructor
  try {
    const compat = createRequire(import.meta.url)('@tursodatabase/database/compat') as {
      Database: TursoConstructor
    }
    Database = compat.Database
  } catch (error) {
    throw new AgentFsError(
      'CANT_OPEN',
      'the Turso engine is not installed: npm install @tursodatabase/database (a dependency of @agentfs/driver-turso)',
      { cause: error },
    )
  }
  try {
    if (encryption === undefined) return new Database(path)
    const db = new Database(path, { encryption, experimental: ['encryption'] })
    // Sorts and temporary tables that spill go to memory, never to a plaintext temp file.
    db.exec('PRAGMA temp_store = MEMORY')
    return db
  } catch (error) {
    // A wrong key fails page 1's decryption; no key on an encrypted file reads no header.
    if (/Decryption failed|not a database/i.test(String((error as Error)?.message)))
      throw wrongKeyError(path, encryption !== undefined, error)
    throw error
  }
}

function statementOf(db: TursoDatabase, sql: string): SyncStatement {
  if (PRAGMA_FUNCTION.test(sql)) {
    const probe = rethrow(() => db.prepare(sql))
    const reader = probe.reader
    probe.close()
    const once = <T>(fn: (statement: TursoStatement) => T): T =>
      rethrow(() => {
        // Outside a transaction it runs inside one of its own: run bare, it leaves the
        // connection in a state where the next autocommitted writes are undone by a later
        // ROLLBACK.
        const own = !db.inTransaction
        if (own) db.exec('BEGIN')
        const statement = db.prepare(sql)
        try {
          statement.safeIntegers(true)
          return fn(statement)
        } finally {
          statement.close()
          if (own && db.inTransaction) db.exec('COMMIT')
        }
      })
    return {
      reader,
      readonly: !RETURNING.test(sql),
      all: (params) => once((s) => s.all(params)),
      run: (params) => once((s) => s.run(params)),
    }
  }
  const statement = rethrow(() => db.prepare(sql))
  const reader = statement.reader
  if (reader) statement.safeIntegers(true)
  const hex = new HexVariants<TursoStatement>(sql)
  /** The statement and parameters to run: long BLOBs go as hex text where the SQL allows. */
  const pick = (params: readonly unknown[]): [TursoStatement, readonly unknown[]] => {
    const plan = hex.plan(params)
    if (plan === undefined) return [statement, params]
    let variant = hex.get(plan.key)
    if (variant === undefined) {
      variant = db.prepare(hex.sqlFor(plan.blobs))
      if (reader) variant.safeIntegers(true)
      hex.keep(plan.key, variant)
    }
    return [variant, hexParams(params, plan.blobs)]
  }
  return {
    reader,
    readonly: reader && !RETURNING.test(sql),
    all: (params) =>
      rethrow(() => {
        const [chosen, values] = pick(params)
        return chosen.all(values)
      }),
    run: (params) =>
      rethrow(() => {
        const [chosen, values] = pick(params)
        return chosen.run(values)
      }),
  }
}

function connection(db: TursoDatabase, file: string | undefined): SyncConnection {
  return connectionOver(db, {
    file,
    readonly: false,
    prepare: (sql) => statementOf(db, sql),
    guard: rethrow,
  })
}

/**
 * A {@link Driver} on the Turso engine (`@tursodatabase/database`, its synchronous
 * better-sqlite3-compatible API), built with the core driver kit: WAL, an asynchronous busy
 * wait, a per-file lock between the connections of a process, a statement cache. The engine has
 * no `WITH RECURSIVE`; the driver says so (`capabilities.recursiveQueries: false`) and the
 * filesystem walks trees with plain statements instead.
 *
 * @example
 * const driver = tursoDriver({ path: 'agent.db' })
 * const db = await openDatabase({ driver })
 */
export function tursoDriver(config: TursoDriverConfig): Driver {
  const encryption = encryptionOf(config)
  const given = localSource('tursoDriver', config, (path) => openFile(path, encryption))
  const memory = given.memory
  return createSyncDriver({
    ...config,
    name: 'turso',
    target: config.path ?? 'database',
    memory,
    reopenable: given.reopenable,
    // The binding frees the buffers of rows it returned in finalizers that run when the event
    // loop turns; reading 64 KiB chunks in a loop of awaited calls otherwise grows by hundreds
    // of MiB before they run.
    turnEventLoopEvery: 100,
    recursiveQueries: false,
    // No FTS5 in the 0.7 engine: the full-text index keeps its words in a table.
    fullTextSearch: false,
    // The engine has no pragma_data_version table: nothing is cached across statements.
    snapshotTokens: false,
    ...(encryption && !memory ? { encrypted: true } : {}),
    open: async () => {
      let db: TursoDatabase
      try {
        db = await given.open()
      } catch (error) {
        throw mapSqliteError(engineError(error))
      }
      return connection(db, memory ? undefined : config.path)
    },
  })
}
