import { createRequire } from 'node:module'
import { AgentFsError, type DatabaseKey, type Driver, mapSqliteError } from '@agentfs/core'
import {
  connectionOver,
  createSyncDriver,
  keyBytes,
  type LocalDriverConfig,
  localSource,
  proveOpens,
  type SyncConnection,
  type SyncStatement,
  statementOver,
} from '@agentfs/core/driver-kit'

/** The parts of a better-sqlite3 `Statement` this driver uses (structural: no type dependency). */
export interface BetterSqlite3Statement {
  readonly reader: boolean
  readonly readonly: boolean
  all(...params: unknown[]): unknown[]
  get(...params: unknown[]): unknown
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint }
  safeIntegers(toggle?: boolean): this
  raw(toggle?: boolean): this
  pluck(toggle?: boolean): this
}

/** The parts of a better-sqlite3 `Database` this driver uses. */
export interface BetterSqlite3Database {
  /** The path the database was opened with. */
  readonly name: string
  readonly open: boolean
  readonly inTransaction: boolean
  readonly memory: boolean
  readonly readonly: boolean
  prepare(source: string): BetterSqlite3Statement
  exec(source: string): this
  close(): this
}

/**
 * The ciphers of SQLite3 Multiple Ciphers (`better-sqlite3-multiple-ciphers`) a key can use:
 * `sqlcipher` (the default: SQLCipher 4's format, AES-256-CBC with an HMAC-SHA512 on every
 * page), `chacha20` (ChaCha20-Poly1305, the
 * library's own default), `aes256cbc` (the format of libSQL's `encryptionKey`: a file both open;
 * no page authentication), `ascon128` and `aegis`.
 */
export const BETTER_SQLITE3_CIPHERS = [
  'sqlcipher',
  'chacha20',
  'aes256cbc',
  'ascon128',
  'aegis',
] as const
export type BetterSqlite3Cipher = (typeof BETTER_SQLITE3_CIPHERS)[number]

/** Options of {@link betterSqlite3Driver}. Give exactly one of `path` and `database`. */
export interface BetterSqlite3DriverConfig extends LocalDriverConfig<BetterSqlite3Database> {
  /** Open the file read-only (only with `path`). */
  readonly readonly?: boolean
  /**
   * Encrypt the database at rest (only with `path`): a passphrase, or bytes. The file, its WAL
   * and its journal are encrypted page by page; temporary tables stay in memory. A new file is
   * created encrypted; an existing one must have been encrypted with this key and `cipher`
   * (else `WRONG_KEY`). Needs `better-sqlite3-multiple-ciphers` installed (it replaces
   * better-sqlite3 for this database).
   */
  readonly key?: DatabaseKey
  /** The cipher of `key` (default `sqlcipher`); see {@link BETTER_SQLITE3_CIPHERS}. */
  readonly cipher?: BetterSqlite3Cipher
}

/** The encrypting build's extra methods (better-sqlite3-multiple-ciphers). */
interface CipherDatabase extends BetterSqlite3Database {
  key(key: Buffer): unknown
}

/**
 * Refuses a better-sqlite3 build that crashes this Node.js: 12.x aborts on Node 24
 * (`Statement::~Statement` assertion) and 13.x needs Node 22 (it crashes on Node 20). A clear
 * error naming the version to install beats a SIGABRT or a segfault later.
 */
export function checkEngineVersion(
  node = process.versions.node,
  engine = engineVersion('better-sqlite3'),
  name: 'better-sqlite3' | 'better-sqlite3-multiple-ciphers' = 'better-sqlite3',
): void {
  if (engine === undefined) return
  const nodeMajor = Number(node.split('.')[0])
  const engineMajor = Number(engine.split('.')[0])
  const [old, current] = name === 'better-sqlite3' ? ['12.6.2', '13.2.0'] : ['12.6.2', '13.0.3']
  if (engineMajor >= 13 && nodeMajor < 22)
    throw new AgentFsError(
      'CANT_OPEN',
      `${name} ${engine} needs Node.js 22 or newer, and this is Node.js ${node}: install ${name} 12 (npm install ${name}@${old}) or use a newer Node.js`,
    )
  if (engineMajor <= 12 && nodeMajor >= 24)
    throw new AgentFsError(
      'CANT_OPEN',
      `${name} ${engine} crashes on Node.js ${node}: install ${name} 13 (npm install ${name}@${current})`,
    )
}

function engineVersion(name: string): string | undefined {
  try {
    return (createRequire(import.meta.url)(`${name}/package.json`) as { version?: string }).version
  } catch {
    return undefined
  }
}

/** The errors `bindings` and `node-gyp-build` throw when no compiled module exists. */
function isUnbuiltBinding(error: unknown): boolean {
  const message = error instanceof Error ? error.message : ''
  // 12.x (bindings), node-gyp-build, and 13.x (a direct require of build/Release).
  return /Could not locate the bindings file|No native build was found|Cannot find module '[^']*better_sqlite3\.node'/.test(
    message,
  )
}

type DatabaseConstructor = new (
  path: string,
  options: { readonly: boolean; fileMustExist: boolean; timeout: number },
) => BetterSqlite3Database

async function loadEngine(encrypting: boolean): Promise<DatabaseConstructor> {
  if (!encrypting) {
    checkEngineVersion()
    const loaded = await import('better-sqlite3').catch((error: unknown) => {
      throw new AgentFsError(
        'CANT_OPEN',
        'better-sqlite3 is not installed: npm install better-sqlite3 (it is a peer dependency of @agentfs/driver-better-sqlite3)',
        { cause: error },
      )
    })
    return loaded.default as unknown as DatabaseConstructor
  }
  return cipherEngine<DatabaseConstructor>()
}

/**
 * The encrypting engine, `better-sqlite3-multiple-ciphers` (loaded synchronously), with errors
 * that say what to install or build. @internal Shared with `rekeyDatabase`.
 */
export function cipherEngine<Constructor>(): Constructor {
  const name = 'better-sqlite3-multiple-ciphers'
  checkEngineVersion(process.versions.node, engineVersion(name), name)
  try {
    return createRequire(import.meta.url)(name) as Constructor
  } catch (error) {
    if (isUnbuiltBinding(error)) throw unbuilt(name, error)
    throw new AgentFsError(
      'CANT_OPEN',
      `an encrypted database needs ${name}: npm install ${name} (an optional peer dependency of @agentfs/driver-better-sqlite3)`,
      { cause: error },
    )
  }
}

/** `cipher` (default `sqlcipher`), refused when it is not one of {@link BETTER_SQLITE3_CIPHERS}. */
export function checkCipher(cipher: string | undefined, who: string): BetterSqlite3Cipher {
  const chosen = cipher ?? 'sqlcipher'
  if (!(BETTER_SQLITE3_CIPHERS as readonly string[]).includes(chosen))
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `${who}unknown cipher ${JSON.stringify(chosen)}; one of ${BETTER_SQLITE3_CIPHERS.join(', ')}`,
    )
  return chosen as BetterSqlite3Cipher
}

/**
 * Sets a connection's cipher before its key is given; `sqlcipher` with SQLCipher 4's parameters
 * (page size 4096, 256,000 PBKDF2-HMAC-SHA512 rounds).
 */
export function useCipher(
  db: { prepare(sql: string): { all(): unknown } },
  cipher: BetterSqlite3Cipher,
): void {
  db.prepare(`PRAGMA cipher = '${cipher}'`).all()
  if (cipher === 'sqlcipher') db.prepare('PRAGMA legacy = 4').all()
}

const unbuilt = (name: string, cause: unknown) =>
  new AgentFsError(
    'CANT_OPEN',
    `${name}'s native module is not built (pnpm 10 skips dependency build scripts until they are approved): run pnpm approve-builds, or npm rebuild ${name}`,
    { cause },
  )

interface Encryption {
  readonly key: Buffer
  readonly cipher: BetterSqlite3Cipher
}

function encryptionOf(config: BetterSqlite3DriverConfig): Encryption | undefined {
  if (config.key === undefined) {
    if (config.cipher !== undefined)
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        'betterSqlite3Driver: cipher without key; give the key too, or neither',
      )
    return undefined
  }
  if (config.database !== undefined)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'betterSqlite3Driver: key goes with path; a database handed in open is keyed by whoever opened it',
    )
  const cipher = checkCipher(config.cipher, 'betterSqlite3Driver: ')
  return { key: keyBytes(config.key, 'betterSqlite3Driver'), cipher }
}

/**
 * Keys a freshly opened encrypting connection, before anything reads the file, and proves the
 * key by reading the schema: a wrong key is `WRONG_KEY` here, not a "corrupt" file later.
 */
function applyKey(db: CipherDatabase, { key, cipher }: Encryption): void {
  useCipher(db, cipher)
  db.key(key)
  // Sorts and temporary tables that spill go to memory, never to a plaintext temp file.
  db.prepare('PRAGMA temp_store = MEMORY').run()
}

/** Opens a file with better-sqlite3, with errors that say what to install or build. */
async function openFile(
  path: string,
  readonly: boolean,
  encryption: Encryption | undefined,
): Promise<BetterSqlite3Database> {
  const Database = await loadEngine(encryption !== undefined)
  let db: BetterSqlite3Database
  try {
    db = new Database(path, { readonly, fileMustExist: readonly, timeout: 0 })
  } catch (error) {
    if (isUnbuiltBinding(error))
      throw unbuilt(encryption ? 'better-sqlite3-multiple-ciphers' : 'better-sqlite3', error)
    throw mapSqliteError(error)
  }
  const memory = path === ':memory:' || path === ''
  try {
    if (encryption && !memory) applyKey(db as CipherDatabase, encryption)
    // A wrong key is WRONG_KEY now, not a "corrupt" file later; a file without SQLite's header
    // opened without a key is said to be encrypted or damaged.
    proveOpens(path, encryption !== undefined, () =>
      db.prepare('SELECT count(*) FROM sqlite_schema').all(),
    )
  } catch (error) {
    db.close()
    throw error
  }
  return db
}

/** A prepared better-sqlite3 statement as the kit's {@link SyncStatement}. */
function syncStatement(statement: BetterSqlite3Statement): SyncStatement {
  return statementOver(
    {
      all: (params) => statement.all(...params),
      get: (params) => statement.get(...params),
      run: (params) => statement.run(...params),
      readBigInts: (on) => statement.safeIntegers(on),
    },
    statement.reader,
    statement.readonly,
  )
}

/** A better-sqlite3 database seen as the kit's {@link SyncConnection}. */
function connection(db: BetterSqlite3Database): SyncConnection {
  return connectionOver(db, {
    file: db.memory ? undefined : db.name,
    readonly: db.readonly,
    prepare: (sql) => syncStatement(db.prepare(sql)),
    prepareArrays(sql) {
      const statement = db.prepare(sql)
      if (statement.reader) statement.raw(true)
      return syncStatement(statement)
    },
    preparePluck(sql) {
      const statement = db.prepare(sql)
      if (statement.reader) statement.pluck(true)
      return syncStatement(statement)
    },
  })
}

/** better-sqlite3 binds Buffers as BLOBs; a plain Uint8Array gets a zero-copy Buffer view. */
const toBuffer = (value: Uint8Array): Buffer =>
  Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength)

/**
 * A {@link Driver} over better-sqlite3 (synchronous, in-process), built with the core driver
 * kit. File databases get WAL, an asynchronous busy wait and `synchronous = NORMAL` unless
 * configured otherwise.
 *
 * @example
 * const driver = betterSqlite3Driver({ path: 'agent.db' })
 * const db = await openDatabase({ driver })
 */
export function betterSqlite3Driver(config: BetterSqlite3DriverConfig): Driver {
  const encryption = encryptionOf(config)
  const given = localSource('betterSqlite3Driver', config, (path) =>
    openFile(path, config.readonly ?? false, encryption),
  )
  return createSyncDriver({
    ...config,
    name: 'better-sqlite3',
    target: config.path ?? 'database',
    memory: given.memory,
    reopenable: given.reopenable,
    open: async () => connection(await given.open()),
    blob: toBuffer,
    ...(encryption && !given.memory ? { encrypted: true } : {}),
  })
}
