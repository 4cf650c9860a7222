import {
  AgentFsError,
  type Driver,
  type Executor,
  mapSqliteError,
  type QueryResult,
  type SqlValue,
  type Statement,
} from '@agentfs/core'
import { FileLock, keyBytes, lazyConnection, Mutex, retryBusy } from '@agentfs/core/driver-kit'
import { bindArgs, type LibsqlClient, toResult } from './client.js'
import { clientTransaction, type TransactionContext } from './client-transaction.js'
import { localEngineDriver } from './local-engine.js'
import { isIdempotentRead, retryNetwork } from './network.js'

/** Options of {@link libsqlDriver}. Give exactly one of `url` and `client`. */
export interface LibsqlDriverConfig {
  /**
   * `file:path.db`, `:memory:`, or a remote `libsql://`, `http(s)://` or `ws(s)://` URL. The
   * client is created on first use with `intMode: 'bigint'`.
   */
  readonly url?: string
  /** Auth token for remote URLs. */
  readonly authToken?: string
  /**
   * An open client, or a (lazy) factory. It MUST use `intMode: 'bigint'` (the driver narrows safe
   * integers back to numbers). The driver closes it on `close()`.
   */
  readonly client?: LibsqlClient | (() => LibsqlClient | Promise<LibsqlClient>)
  /**
   * With a `client` factory: whether the client it makes talks to a server (default false). The
   * driver's capabilities must be right before the client exists: a remote client runs
   * transactions concurrently, a local one is serialised by the core.
   */
  readonly remote?: boolean
  /** How long to wait for another connection's write lock, in ms (default 5000). */
  readonly busyTimeoutMs?: number
  /** Local files: `PRAGMA synchronous` (default `NORMAL`). */
  readonly synchronous?: 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA'
  /** Local files: WAL size kept after checkpoints, in bytes (default 64 MiB). */
  readonly journalSizeLimit?: number
  /**
   * Local files: encrypt the database at rest with this key (libSQL's AES-256-CBC, the format
   * `better-sqlite3-multiple-ciphers` reads with `cipher: 'aes256cbc'`). A new file is created
   * encrypted; an existing one must have been encrypted with this key (else `WRONG_KEY`).
   */
  readonly encryptionKey?: string
}

/** The file behind a local `file:` URL, or undefined for memory and remote URLs. */
function localFilePath(url: string): string | undefined {
  if (!url.startsWith('file:')) return undefined
  const path = decodeURIComponent(
    url
      .slice('file:'.length)
      .replace(/^\/\/(?=\/)/, '')
      .split('?')[0]!,
  )
  return path === ':memory:' || path === '' ? undefined : path
}

const isLocalUrl = (url: string) => url === ':memory:' || url.startsWith('file:')

/**
 * A {@link Driver} for libSQL. Local URLs (`file:`, `:memory:`) run on the `libsql` engine
 * directly, through the core driver kit (statement cache, WAL, asynchronous busy wait), as fast
 * as the better-sqlite3 driver. Remote URLs (`libsql://`, `http(s)://`, `ws(s)://`) and a given
 * `client` go through `@libsql/client`: transactions are the client's interactive
 * `transaction('write')`; remote ones get a server stream each, reads run concurrently, this
 * driver's write transactions take turns, and BUSY is retried asynchronously. A local `client`
 * gets one connection, serialised by the core mutex, so per-connection pragmas hold.
 *
 * @example
 * const driver = libsqlDriver({ url: 'file:agent.db' })
 * const db = await openDatabase({ driver })
 */
export function libsqlDriver(config: LibsqlDriverConfig): Driver {
  if ((config.url === undefined) === (config.client === undefined)) {
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'libsqlDriver needs exactly one of `url` and `client`',
    )
  }
  if (config.url !== undefined && !/^(:memory:|[a-z][a-z0-9+.-]*:)/i.test(config.url))
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `libsqlDriver's url must be a URL: write \`file:${config.url}\` for a local file (or a libsql://, http(s):// or ws(s):// server URL)`,
    )
  const declaredLocal = config.url === undefined ? undefined : isLocalUrl(config.url)
  if (config.encryptionKey !== undefined) {
    if (!declaredLocal)
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        'libsqlDriver: encryptionKey is for local files (a file: url); a server encrypts its own databases',
      )
    if (typeof config.encryptionKey !== 'string')
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        'libsqlDriver: encryptionKey must be a string (libSQL takes a passphrase)',
      )
    keyBytes(config.encryptionKey, 'libsqlDriver')
  }
  if (declaredLocal)
    return localEngineDriver(
      localFilePath(config.url!) ?? ':memory:',
      {
        ...(config.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: config.busyTimeoutMs }),
        ...(config.synchronous === undefined ? {} : { synchronous: config.synchronous }),
        ...(config.journalSizeLimit === undefined
          ? {}
          : { journalSizeLimit: config.journalSizeLimit }),
      },
      config.encryptionKey,
    )
  let client: LibsqlClient | undefined
  let opening: Promise<LibsqlClient> | undefined
  let closed = false
  // A remote client must not be serialised behind the core mutex; decide as early as we can.
  const busyTimeout = config.busyTimeoutMs ?? 5000
  /** Shared with other connections of this process to the same file. */
  const fileLock = new FileLock(busyTimeout)
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => fileLock.exclusive(fn)
  /**
   * Remote write transactions of this driver take turns in order: the server grants one writer
   * at a time anyway, and a queue here spares it a storm of refused BEGINs (reads outside
   * transactions still run concurrently). Other clients are waited for with BUSY retries.
   */
  const writers = new Mutex()
  const given = config.client === undefined ? undefined : lazyConnection(config.client)
  const local =
    declaredLocal ??
    (typeof config.client === 'object'
      ? (config.client as LibsqlClient).protocol === 'file'
      : config.remote !== true)

  async function openClient(): Promise<LibsqlClient> {
    let handle: LibsqlClient
    if (given !== undefined) {
      handle = await given.open()
    } else {
      const { createClient } = await import('@libsql/client')
      try {
        handle = createClient({
          url: config.url!,
          intMode: 'bigint',
          // One local connection: per-connection pragmas hold, and the core mutex serialises use.
          ...(local ? { concurrency: 1 } : {}),
          ...(config.authToken === undefined ? {} : { authToken: config.authToken }),
        }) as unknown as LibsqlClient
      } catch (error) {
        throw mapSqliteError(error)
      }
    }
    if ((handle.protocol === 'file') !== local)
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        `libsqlDriver's client factory made a ${handle.protocol} client, but the driver was configured for a ${local ? 'local' : 'remote'} one: set \`remote: ${local}\``,
      )
    // Local URLs never get here (they run on the engine): a local client is one passed in, its
    // file unknown, so it shares no per-file lock.
    await exclusive(() => configure(handle))
    return handle
  }

  async function configure(handle: LibsqlClient): Promise<void> {
    if (local) {
      await retryBusy(
        () => handle.execute({ sql: 'PRAGMA journal_mode = WAL', args: [] }),
        busyTimeout,
      )
      await handle.execute({
        sql: `PRAGMA journal_size_limit = ${Math.trunc(config.journalSizeLimit ?? 64 * 1024 * 1024)}`,
        args: [],
      })
      // Busy waits happen asynchronously in retryBusy: a blocking wait inside the engine would
      // stall the event loop that another connection of this process needs to release its lock.
      await handle.execute({ sql: 'PRAGMA busy_timeout = 0', args: [] })
      await handle.execute({
        sql: `PRAGMA synchronous = ${config.synchronous ?? 'NORMAL'}`,
        args: [],
      })
    }
  }

  async function current(): Promise<LibsqlClient> {
    if (closed) throw new AgentFsError('CLOSED', 'The libsql driver is closed')
    if (client) return client
    opening ??= openClient().then((handle) => {
      client = handle
      return handle
    })
    return opening
  }

  /** Maps an error; an unclassified failure of a remote client is a network/server problem. */
  function remoteAware(error: unknown, sql?: string): AgentFsError {
    const mapped = mapSqliteError(error, sql === undefined ? {} : { sql })
    if (local || mapped.code !== 'UNKNOWN') return mapped
    return new AgentFsError(
      'REMOTE',
      `The libSQL server at ${config.url ?? '(client)'} failed: ${mapped.message}. Check the URL, the auth token and the network`,
      { cause: error },
    )
  }

  const context: TransactionContext = { busyTimeout, mapError: remoteAware }

  /**
   * Outside a transaction a BUSY statement is retried asynchronously until the timeout, and a
   * remote read that failed in transport is tried again (a write is not: it may have run).
   */
  async function runRetrying<Row>(
    handle: LibsqlClient,
    statement: Statement,
  ): Promise<QueryResult<Row>> {
    const args = bindArgs(statement.params)
    const once = () => retryBusy(() => handle.execute({ sql: statement.sql, args }), busyTimeout)
    try {
      return toResult<Row>(await retryNetwork(once, !local && isIdempotentRead(statement.sql)))
    } catch (error) {
      throw remoteAware(error, statement.sql)
    }
  }

  return {
    name: 'libsql',
    get capabilities() {
      return {
        concurrentTransactions: !local,
        // A remote database, or a local client passed in (whose file this driver cannot see).
        inMemory: false,
        remote: !local,
        // Each remote call runs on a server stream of its own.
        connectionPragmas: local,
      }
    },
    async execute<Row = Record<string, SqlValue>>(statement: Statement): Promise<QueryResult<Row>> {
      const handle = client ?? (await current())
      return fileLock.contended
        ? exclusive(() => runRetrying<Row>(handle, statement))
        : runRetrying<Row>(handle, statement)
    },
    async transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
      const handle = client ?? (await current())
      if (!local) return writers.run(() => clientTransaction(handle, fn, context))
      return exclusive(() => clientTransaction(handle, fn, context))
    },
    async executeScript(sql: string): Promise<void> {
      const handle = client ?? (await current())
      await exclusive(async () => {
        try {
          await handle.executeMultiple(sql)
        } catch (error) {
          throw mapSqliteError(error)
        }
      })
    },
    async close(): Promise<void> {
      if (closed) return
      closed = true
      const handle = client ?? (opening ? await opening.catch(() => undefined) : undefined)
      if (handle && !handle.closed) handle.close()
      fileLock.release()
    },
  }
}
