import { createRequire } from 'node:module'
import { AgentFsError, type Driver, mapSqliteError } from '@agentfs/core'
import {
  connectionOver,
  createSyncDriver,
  type LocalDriverConfig,
  localSource,
  type SyncConnection,
  type SyncStatement,
  statementOver,
} from '@agentfs/core/driver-kit'

/** The parts of a better-sqlite3 `Statement` this driver uses (structural: no type dependency). */
export interface BetterSqlite3Statement {
  readonly reader: boolean
  readonly readonly: boolean
  all(...params: unknown[]): unknown[]
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint }
  safeIntegers(toggle?: boolean): this
  raw(toggle?: boolean): this
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

/** Options of {@link betterSqlite3Driver}. Give exactly one of `path` and `database`. */
export interface BetterSqlite3DriverConfig extends LocalDriverConfig<BetterSqlite3Database> {
  /** Open the file read-only (only with `path`). */
  readonly readonly?: boolean
}

/**
 * Refuses a better-sqlite3 build that crashes this Node.js: 12.x aborts on Node 24
 * (`Statement::~Statement` assertion) and 13.x needs Node 22 (it crashes on Node 20). A clear
 * error naming the version to install beats a SIGABRT or a segfault later.
 */
export function checkEngineVersion(
  node = process.versions.node,
  engine = betterSqlite3Version(),
): void {
  if (engine === undefined) return
  const nodeMajor = Number(node.split('.')[0])
  const engineMajor = Number(engine.split('.')[0])
  if (engineMajor >= 13 && nodeMajor < 22)
    throw new AgentFsError(
      'CANT_OPEN',
      `better-sqlite3 ${engine} needs Node.js 22 or newer, and this is Node.js ${node}: install better-sqlite3 12 (npm install better-sqlite3@12.6.2) or use a newer Node.js`,
    )
  if (engineMajor <= 12 && nodeMajor >= 24)
    throw new AgentFsError(
      'CANT_OPEN',
      `better-sqlite3 ${engine} crashes on Node.js ${node}: install better-sqlite3 13 (npm install better-sqlite3@13.2.0)`,
    )
}

function betterSqlite3Version(): string | undefined {
  try {
    return (createRequire(import.meta.url)('better-sqlite3/package.json') as { version: string })
      .version
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

/** Opens a file with better-sqlite3, with errors that say what to install or build. */
async function openFile(path: string, readonly: boolean): Promise<BetterSqlite3Database> {
  checkEngineVersion()
  const { default: Database } = await import('better-sqlite3').catch((error: unknown) => {
    throw new AgentFsError(
      'CANT_OPEN',
      'better-sqlite3 is not installed: npm install better-sqlite3 (it is a peer dependency of @agentfs/driver-better-sqlite3)',
      { cause: error },
    )
  })
  try {
    return new Database(path, {
      readonly,
      fileMustExist: readonly,
      timeout: 0,
    }) as unknown as BetterSqlite3Database
  } catch (error) {
    if (isUnbuiltBinding(error))
      throw new AgentFsError(
        'CANT_OPEN',
        "better-sqlite3's native module is not built (pnpm 10 skips dependency build scripts until they are approved): run pnpm approve-builds, or npm rebuild better-sqlite3",
        { cause: error },
      )
    throw mapSqliteError(error)
  }
}

/** A prepared better-sqlite3 statement as the kit's {@link SyncStatement}. */
function syncStatement(statement: BetterSqlite3Statement): SyncStatement {
  return statementOver(
    {
      all: (params) => statement.all(...params),
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
  const given = localSource('betterSqlite3Driver', config, (path) =>
    openFile(path, config.readonly ?? false),
  )
  return createSyncDriver({
    ...config,
    name: 'better-sqlite3',
    target: config.path ?? 'database',
    memory: given.memory,
    reopenable: given.reopenable,
    open: async () => connection(await given.open()),
    blob: toBuffer,
  })
}
