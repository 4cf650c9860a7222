import { existsSync, mkdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import {
  type AgentDatabase,
  AgentFsError,
  type AuditKey,
  type AuditReport,
  applyOnce,
  auditHead,
  type Clock,
  type Compression,
  type DatabaseKey,
  type Driver,
  type GroupCommitOptions,
  type GroupedDatabase,
  type GuardedDriver,
  groupCommits,
  type IdSource,
  isAgentFsError,
  micros,
  openDatabase,
  type Queryable,
  type SealResult,
  sealAudit,
  storedVersions,
  type VerifyOptions,
  type VersionRetention,
  verifyAudit,
} from '@agentfs/core'
import {
  checkEmbedder,
  createFileSystem,
  type Embedder,
  type EmbeddingUpdate,
  embeddingBacklog,
  type FileSystemOptions,
  type FsPolicy,
  type NodeFs,
  type SqlFileSystem,
  updateEmbeddings,
} from '@agentfs/fs'
import {
  Branch,
  ChangeLog,
  History,
  type SnapshotInfo,
  type SnapshotOptions,
} from '@agentfs/history'
import { createKvStore, type KvStore } from '@agentfs/kv'
import { pendingCommit } from '@agentfs/overlay'
import { createToolCalls, type ToolCalls } from '@agentfs/tool-calls'
import { EmbedLoop } from './embed-loop.js'
import { type SyncNodeFs, syncNodeFs } from './sync-fs.js'

/** Options of {@link AgentFS.open}. With none, the database is `.agentfs/default.db`. */
export interface AgentFSOptions {
  /** Agent id: the database is `<dir>/<id>.db`. Letters, digits, `-` and `_`. */
  readonly id?: string
  /** Database file (or `:memory:`); its folder must exist. Takes precedence over `id`. */
  readonly path?: string
  /** Folder of id-based databases (default `.agentfs` in the working directory). */
  readonly dir?: string
  /** Any driver (e.g. `libsqlDriver(...)`); takes precedence over `path` and `id`. */
  readonly driver?: Driver | GuardedDriver
  /** `fs_config.chunk_size` for a new database (default 4096). */
  readonly chunkSize?: number
  /**
   * Compress file content of a new database with zstd (`'zstd'`): smaller files for text, at
   * some write cost; see the README's "Compression". Chosen at creation: for an existing
   * database, omit it (it is read from the database) or pass what the database has.
   */
  readonly compression?: Compression
  /** Migrate older layouts on open (default true). */
  readonly migrate?: boolean
  readonly clock?: Clock
  readonly ids?: IdSource
  /** Filesystem options (atime policy, umask, owner, policy). */
  readonly fs?: FileSystemOptions
  /**
   * What the filesystem allows (roots, read-only and protected paths, denied operations,
   * quotas), enforced inside `agent.fs` — so every tool, adapter and mount built on it obeys.
   * Shorthand for `fs: { policy }`.
   */
  readonly policy?: FsPolicy
  /** Session recorded on every tool call and change that does not name one. */
  readonly sessionId?: string
  /**
   * Record every change of files and kv in the change feed (`agent.changes`), which `fs.watch`,
   * file histories and cheap snapshots read. Default true; about one row per change.
   */
  readonly feed?: boolean
  /**
   * Keep past contents of files so `fs.readFile(path, { version })` reads them: `true` for the
   * default retention (20 per file, 30 days, 256 MiB, files up to 8 MiB) or your limits. When
   * not given, the database's own setting holds (`storeVersions`, `agentfs versions DB on`);
   * without one, off: each write then also stores the file's chunks (deduplicated).
   */
  readonly versions?: boolean | VersionRetention
  /**
   * Default driver only: encrypt the database at rest with this key (a passphrase, or bytes).
   * A new database is created encrypted; an existing one opens only with the key it was
   * encrypted with (else `WRONG_KEY`). Needs `@agentfs/driver-better-sqlite3` and
   * `better-sqlite3-multiple-ciphers`, or for the Turso engine's ciphers `@agentfs/driver-turso`.
   * Keep the key outside the database's folder (a file only you can read, or a secret
   * manager). With your own driver, give the key to it (`libsqlDriver({ encryptionKey })`,
   * `tursoDriver({ key })`).
   */
  readonly key?: DatabaseKey
  /**
   * The cipher of `key` (default `sqlcipher`: SQLCipher 4's format); see the README. The Turso
   * engine's ciphers (`aegis256`, `aes256gcm`, …: the format of the Turso project's `agentfs`
   * CLI and `tursodb`, a raw key as hex) open the file with `@agentfs/driver-turso`.
   */
  readonly cipher?: BetterSqlite3CipherName | TursoCipherName
  /**
   * Semantic search with your embedding model (`{ model, dimensions, embed(texts) }`; no model
   * is bundled): `agent.fs.search(query)` then ranks by words and by meaning (`hybrid`). The
   * vectors are made off the write path, in the background every `embedIntervalMs` while files
   * change, and by {@link AgentFS.updateEmbeddings}; a search's `behind` counts the files still
   * waiting. A failing model is reported through `onWarning` and retried.
   */
  readonly embed?: Embedder
  /** How often the background makes vectors, in ms (default 1000; 0: only `updateEmbeddings()`). */
  readonly embedIntervalMs?: number
  /** Default driver only: `PRAGMA synchronous` (`NORMAL`, or `FULL` to fsync every commit). */
  readonly synchronous?: 'NORMAL' | 'FULL'
  /** Default driver only: how long to wait for another process's write lock (default 5000 ms). */
  readonly busyTimeoutMs?: number
  /**
   * Commit in groups (`groupCommits` of `@agentfs/core`): every call still happens whole or not
   * at all, in a savepoint of its own, but the calls of `maxDelayMs` (default 20) share one
   * commit — for bulk work, a third of the SQLite cost per small file. Other connections see a
   * change, and a crash can lose it, up to `maxDelayMs` after the call returned;
   * {@link AgentFS.flush} commits at once, and `close()` does first. Off by default.
   */
  readonly groupCommits?: GroupCommitOptions
  /**
   * Told what needs the user's attention when the database opens (an interrupted overlay
   * commit: its target is half-applied until the commit is finished). Default:
   * `process.emitWarning` with code `AGENTFS_INTERRUPTED_COMMIT`.
   */
  readonly onWarning?: (message: string) => void
  /**
   * The audit chain over tool calls and changes (`agent.seal()`, `agent.verify()`): `key` seals
   * it with HMAC-SHA256 (keep the key outside the database; with none, plain SHA-256, which
   * proves only against a head kept elsewhere); `sealOnClose` (default true) seals what is new
   * when an agent that changed the database closes (an agent that only read leaves the sealing,
   * a write of its own, to the writers: it would hold their write lock for every row they made).
   * The same keys seal idempotency records: with `key`, a record it (or
   * one of `previousKeys`, kept while a key rotates) did not seal is refused rather than
   * replayed (`IDEMPOTENCY_UNTRUSTED`); `verify()` accepts rows sealed with any of them.
   */
  readonly audit?: {
    readonly key?: AuditKey
    readonly previousKeys?: readonly AuditKey[]
    readonly sealOnClose?: boolean
  }
}

/** Options of `agent.transaction`. */
export interface TransactionOptions {
  /**
   * Apply the transaction once per key: its result is stored (as JSON) with the key in the same
   * transaction, and a retry with the same key and `arguments` returns that result without
   * running `fn`; the same key with other `arguments` is refused (`IDEMPOTENCY_MISMATCH`).
   */
  readonly idempotencyKey?: string
  /** What the request is, compared on a retry (JSON; default none: the key alone). */
  readonly arguments?: unknown
  /** The namespace keys are unique in (default `sdk:transaction`). */
  readonly scope?: string
  /** How long the key is remembered (default 48 hours). */
  readonly idempotencyTtlMs?: number
}

/** The three stores, as `agent` and inside `agent.transaction(tx => …)`. */
export interface AgentScope {
  readonly fs: SqlFileSystem
  readonly kv: KvStore
  readonly tools: ToolCalls
}

const ID = /^[a-zA-Z0-9_-]+$/

/**
 * An agent's filesystem, key-value store and tool-call log in one SQLite database.
 *
 * @example
 * const agent = await AgentFS.open({ id: 'my-agent' })
 * await agent.fs.writeFile('/notes.md', '# Notes\n')
 * await agent.kv.set('user:prefs', { theme: 'dark' })
 * await agent.tools.track('search', { q: 'x' }, () => search('x'))
 * await agent.close()
 */
/** The audit keys given at open: the current one first, then those it replaced. */
function auditKeys(audit: NonNullable<AgentFSOptions['audit']>): AuditKey[] {
  return audit.key === undefined ? [] : [audit.key, ...(audit.previousKeys ?? [])]
}

export class AgentFS implements AgentScope {
  readonly db: AgentDatabase
  readonly fs: SqlFileSystem
  readonly kv: KvStore
  readonly tools: ToolCalls
  /** The change feed: what changed, when, and through which session and tool call. */
  readonly changes: ChangeLog
  /** Snapshots of files and kv: take, list, diff, read from, restore, delete. */
  readonly history: History
  /** The database file, when the SDK opened one by id or path. */
  readonly path: string | undefined
  readonly #options: AgentFSOptions
  #nodeFs: SyncNodeFs | undefined
  #embedLoop: EmbedLoop | undefined
  /** Transactions the database handle had begun when this agent opened (see `close`). */
  readonly #transactionsAtOpen: number

  private constructor(db: AgentDatabase, options: AgentFSOptions, path: string | undefined) {
    this.db = db
    this.path = path
    this.#options = options
    this.#transactionsAtOpen = db.driver.transactions
    const feed = {
      enabled: options.feed ?? true,
      ...(options.versions === undefined ? {} : { versions: options.versions }),
      ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
    }
    this.fs = createFileSystem(db, {
      feed,
      ...options.fs,
      ...(options.embed ? { embed: options.embed } : {}),
      ...(options.policy ? { policy: options.policy } : {}),
    })
    this.kv = createKvStore(db, { feed })
    this.changes = new ChangeLog(db, {
      clock: db.clock,
      ...(options.audit?.key === undefined ? {} : { auditKey: options.audit.key }),
    })
    this.history = new History(db, {
      clock: db.clock,
      chunks: db.chunks,
      ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
    })
    this.tools = createToolCalls(
      db,
      options.sessionId === undefined ? {} : { sessionId: options.sessionId },
    )
  }

  /** Opens (creating and migrating as needed) an agent database. */
  static async open(options: AgentFSOptions = {}): Promise<AgentFS> {
    let driver: Driver | GuardedDriver
    let path: string | undefined
    if (options.audit?.previousKeys !== undefined && options.audit.key === undefined)
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        'audit.previousKeys needs audit.key: pass the current key as key and the replaced ones as previousKeys',
      )
    // Checked before anything opens: a bad embedder is one clear error, nothing created.
    if (options.embed !== undefined) checkEmbedder(options.embed)
    const interval = options.embedIntervalMs ?? 1000
    if (!(interval >= 0) || !Number.isFinite(interval))
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        'embedIntervalMs must be a number of milliseconds (0: no background embedding)',
      )
    const owned = options.driver === undefined
    if (options.driver !== undefined && (options.key !== undefined || options.cipher !== undefined))
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        'key and cipher are for the default driver; give the key to your driver instead (betterSqlite3Driver({ path, key }), libsqlDriver({ url, encryptionKey }), tursoDriver({ path, key }))',
      )
    if (options.driver !== undefined) {
      driver = options.driver
    } else {
      path = options.path
      if (path === undefined) {
        const id = options.id ?? 'default'
        if (!ID.test(id)) {
          throw new AgentFsError(
            'INVALID_ARGUMENT',
            `Agent id '${id}' may only contain letters, digits, '-' and '_'; pass { path } for any other file name`,
          )
        }
        path = resolve(options.dir ?? '.agentfs', `${id}.db`)
      }
      // The driver loads before anything is created: a missing one leaves no folder behind.
      const local = await localDriver(options.key !== undefined, options.cipher)
      // An id's folder (.agentfs/, or `dir`) is made on demand; a path's folder must exist, so a
      // mistyped path fails instead of planting folders.
      if (options.path === undefined) mkdirSync(dirname(path), { recursive: true })
      else if (path !== ':memory:' && !existsSync(dirname(resolve(path))))
        throw new AgentFsError(
          'CANT_OPEN',
          `the folder ${dirname(resolve(path))} does not exist; create it first (AgentFS.open makes folders only for { id, dir })`,
        )
      driver = local({
        path,
        ...(options.synchronous === undefined ? {} : { synchronous: options.synchronous }),
        ...(options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }),
        ...(options.key === undefined ? {} : { key: options.key }),
      })
    }
    let db: AgentDatabase
    try {
      db = await openDatabase({
        driver,
        ...(options.clock === undefined ? {} : { clock: options.clock }),
        ...(options.ids === undefined ? {} : { ids: options.ids }),
        ...(options.chunkSize === undefined ? {} : { chunkSize: options.chunkSize }),
        ...(options.compression === undefined ? {} : { compression: options.compression }),
        ...(options.migrate === undefined ? {} : { migrate: options.migrate }),
        ...(options.audit?.key === undefined ? {} : { integrityKeys: auditKeys(options.audit) }),
      })
    } catch (error) {
      // A driver we created is ours to close; a caller's driver stays theirs.
      if (owned) await driver.close().catch(() => undefined)
      throw error
    }
    // A commit killed part-way leaves its target half-applied: impossible to miss.
    const pending = await pendingCommit(db).catch(() => undefined)
    if (pending) {
      const message = `${path ?? 'the database'} holds an interrupted commit (${pending.steps - pending.done} of ${pending.steps} steps left, first: ${pending.pending[0] ?? '-'}): its target is half-applied until it is finished; run the commit again (overlay.commit(), or "agentfs commit")`
      if (options.onWarning) options.onWarning(message)
      else process.emitWarning(message, { code: 'AGENTFS_INTERRUPTED_COMMIT' })
    }
    // Without the option, the database's own setting (storeVersions, agentfs versions) holds.
    let opened = options
    if (options.versions === undefined) {
      try {
        const stored = await storedVersions(db)
        if (stored !== undefined) opened = { ...options, versions: stored }
      } catch (error) {
        // A setting this library never wrote: versions stay off, and the user is told how to
        // set it again (the database itself still opens).
        const message = (error as Error).message
        if (options.onWarning) options.onWarning(message)
        else process.emitWarning(message, { code: 'AGENTFS_BAD_SETTING' })
      }
    }
    const agent = new AgentFS(
      options.groupCommits === undefined ? db : groupCommits(db, options.groupCommits),
      opened,
      path,
    )
    if (options.embed !== undefined && interval > 0)
      agent.#embedLoop = new EmbedLoop(
        agent.db,
        options.embed,
        interval,
        (message) =>
          options.onWarning
            ? options.onWarning(message)
            : process.emitWarning(message, { code: 'AGENTFS_EMBED_FAILED' }),
        options.feed !== false,
      )
    return agent
  }

  /**
   * Commits the changes made so far (with `groupCommits`; otherwise every change is committed
   * already). Rejects, once, when a group of them could not be committed (disk full).
   */
  async flush(): Promise<void> {
    await (this.db as Partial<GroupedDatabase>).flush?.()
  }

  /**
   * Runs `fn` in one transaction: what it does through `tx.fs`, `tx.kv` and `tx.tools` commits
   * together, or nothing does when it throws. Nested calls become savepoints.
   */
  transaction<T>(fn: (tx: AgentScope) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    const run = (q: Queryable) =>
      fn({ fs: this.fs.bind(q), kv: this.kv.bind(q), tools: this.tools.bind(q) })
    if (options.idempotencyKey === undefined) return this.db.transaction(run)
    const clock = this.tools.clock
    return applyOnce(
      this.db,
      {
        scope: options.scope ?? 'sdk:transaction',
        key: options.idempotencyKey,
        args: options.arguments ?? null,
        nowUs: () => micros(clock.now()),
        ...(options.idempotencyTtlMs === undefined ? {} : { ttlMs: options.idempotencyTtlMs }),
      },
      run,
    ).then((once) => once.value as T)
  }

  /** Records the whole state (files, kv) as a snapshot; cost is proportional to what changed. */
  snapshot(name?: string, options?: SnapshotOptions): Promise<SnapshotInfo> {
    return this.history.snapshot(name, options)
  }

  /** Makes files and kv what a snapshot holds (one transaction; undo with `before`). */
  restore(name: string): Promise<{ restored: SnapshotInfo; before: SnapshotInfo }> {
    return this.history.restore(name)
  }

  /**
   * A writable view of snapshot `name` (an overlay over its tree, in memory) whose changes can
   * be diffed, committed onto the live tree (refused on conflicts) or discarded.
   */
  async branch(name: string): Promise<Branch> {
    const local = await localDriver()
    const memory = () =>
      openDatabase({
        driver: local({ path: ':memory:' }),
        chunkSize: this.db.chunkSize,
        clock: this.db.clock,
      })
    const base = await memory()
    const delta = await memory().catch(async (error: unknown) => {
      await base.close()
      throw error
    })
    return Branch.open({
      history: this.history,
      live: this.fs,
      q: this.db,
      name,
      base,
      delta,
    }).catch(async (error: unknown) => {
      await delta.close()
      await base.close()
      throw error
    })
  }

  /**
   * The filesystem as a `node:fs`-shaped object (`promises`, callbacks, streams, `Stats`, …)
   * for libraries that take an `fs`, with the `…Sync` calls too when the database is a file:
   * those run on a worker thread with its own connection, opened with this agent's options and
   * policy, while the caller waits. One per agent (the options of the first call hold);
   * closed with it. A `…Sync` call while this agent has a transaction open fails at once with
   * EDEADLK (it would wait on the caller itself); one that waits past `syncTimeoutMs` (60 s)
   * fails with ETIMEDOUT and says whether it took effect (a change by path never does).
   *
   * @example
   * const fs = agent.nodeFs()
   * fs.writeFileSync('/a.txt', 'hi')
   * await git.init({ fs, dir: '/repo' })
   */
  nodeFs(options: { syncTimeoutMs?: number } = {}): NodeFs {
    this.#nodeFs ??= syncNodeFs(this.fs, this.path, this.#options, {
      transactionOpen: () => this.db.driver.transactionOpen,
      ...(options.syncTimeoutMs === undefined ? {} : { timeoutMs: options.syncTimeoutMs }),
    })
    return this.#nodeFs.nodeFs
  }

  /**
   * Seals the tool calls and changes recorded since the last seal into the audit chain (with
   * `key`, or the `audit.key` given at open); returns how many and the new head. Keep the head
   * where the agent cannot write, to check later with `verify({ expectHead })`.
   */
  async seal(options: { key?: AuditKey } = {}): Promise<SealResult> {
    await this.flush()
    const key = options.key ?? this.#options.audit?.key
    return sealAudit(this.db, {
      nowUs: micros(this.db.clock.now()),
      ...(key === undefined ? {} : { key }),
    })
  }

  /**
   * Walks the audit chain and names every tool call or change altered, inserted or removed since
   * it was sealed, and whether the chain still reaches `expectHead`. The `audit.key` given at
   * open is used unless `keys` are passed.
   */
  async verify(options: VerifyOptions = {}): Promise<AuditReport> {
    await this.flush()
    const audit = this.#options.audit
    return verifyAudit(this.db, {
      ...(audit?.key === undefined ? {} : { keys: auditKeys(audit) }),
      ...options,
    })
  }

  /**
   * Serves the inspector over this database: a web app and JSON API on 127.0.0.1 (a free
   * port), behind a random token, read-only unless `allowWrites`. Needs `@agentfs/inspector`
   * installed next to the SDK or in the application (`npm install @agentfs/inspector`).
   *
   * @example
   * const inspector = await agent.serveInspector()
   * console.log(`open ${inspector.url}`)
   * // … later: await inspector.close()
   */
  async serveInspector(options: InspectorOptions = {}): Promise<InspectorHandle> {
    const inspector = await loadInspector()
    return inspector.serveInspector(this, options)
  }

  /**
   * Makes the vectors semantic search compares, now (the background does it too): every text
   * file whose vectors are missing or older than the file, until none is left, `maxFiles` are
   * done or `timeoutMs` runs out. MISUSE when the agent was opened without `embed`.
   */
  updateEmbeddings(options?: { maxFiles?: number; timeoutMs?: number }): Promise<EmbeddingUpdate> {
    if (!this.#options.embed)
      throw new AgentFsError(
        'MISUSE',
        'updateEmbeddings needs an embedder: AgentFS.open({ embed: { model, dimensions, embed } })',
      )
    return updateEmbeddings(this.db, this.#options.embed, options)
  }

  /** Files whose vectors are missing or older than the file (0 without `embed`). */
  async embeddingBacklog(): Promise<number> {
    return this.#options.embed ? embeddingBacklog(this.db, this.#options.embed.model) : 0
  }

  /** The audit chain's head now (see {@link AgentFS.seal}). */
  auditHead(): Promise<string> {
    return auditHead(this.db)
  }

  /**
   * Closes the database after running calls finish, sealing the audit first when this agent
   * changed the database (unless `audit.sealOnClose` is false). Idempotent.
   */
  async close(): Promise<void> {
    const loop = this.#embedLoop
    this.#embedLoop = undefined
    await loop?.stop()
    const nodeFs = this.#nodeFs
    this.#nodeFs = undefined
    await nodeFs?.close()
    if (
      this.#options.audit?.sealOnClose !== false &&
      !this.db.driver.closed &&
      // Every write of rows the chain seals runs in a transaction; a read (and the access time
      // it may update, a lone statement) does not.
      this.db.driver.transactions !== this.#transactionsAtOpen
    )
      await this.seal().catch((error: unknown) => {
        // Nothing is lost: what stays unsealed is sealed by the next seal. A read-only
        // database is not sealed at all.
        if (isAgentFsError(error, 'READONLY')) return
        const message = `the audit was not sealed at close (${error instanceof Error ? error.message : String(error)}); the next seal or close seals it`
        if (this.#options.onWarning) this.#options.onWarning(message)
        else process.emitWarning(message, { code: 'AGENTFS_AUDIT_NOT_SEALED' })
      })
    await this.db.close()
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }
}

/** Options of {@link AgentFS.serveInspector} (those of `serveInspector` in `@agentfs/inspector`). */
export interface InspectorOptions {
  readonly host?: string
  readonly port?: number
  readonly token?: string
  readonly allowWrites?: boolean
  readonly policy?: FsPolicy
}

/** A running inspector (see `InspectorServer` of `@agentfs/inspector`). */
export interface InspectorHandle {
  /** The address to open; it carries the token once, then a cookie does. */
  readonly url: string
  readonly origin: string
  readonly token: string
  readonly port: number
  close(): Promise<void>
}

interface InspectorModule {
  serveInspector(agent: AgentFS, options: InspectorOptions): Promise<InspectorHandle>
}

/**
 * `@agentfs/inspector`, an optional package: found next to the SDK, else among the
 * application's own dependencies (its working directory); neither: an error saying what to
 * install.
 */
async function loadInspector(): Promise<InspectorModule> {
  const name = '@agentfs/inspector'
  for (const from of [import.meta.url, pathToFileURL(resolve('package.json')).href]) {
    let found: string
    try {
      found = createRequire(from).resolve(name)
    } catch {
      continue
    }
    return (await import(pathToFileURL(found).href)) as InspectorModule
  }
  throw new AgentFsError(
    'MISUSE',
    `agent.serveInspector() needs ${name}, which is not installed: npm install ${name}`,
  )
}

/**
 * The ciphers of `better-sqlite3-multiple-ciphers` (the default driver's; its
 * `BETTER_SQLITE3_CIPHERS`, repeated here because that driver is an optional peer).
 */
const BETTER_SQLITE3_CIPHER_NAMES = [
  'sqlcipher',
  'chacha20',
  'aes256cbc',
  'ascon128',
  'aegis',
] as const
type BetterSqlite3CipherName = (typeof BETTER_SQLITE3_CIPHER_NAMES)[number]
/** The Turso engine's ciphers (`@agentfs/driver-turso`'s `TURSO_CIPHERS`). */
type TursoCipherName =
  | 'aegis256'
  | 'aegis256x2'
  | 'aegis128l'
  | 'aegis128x2'
  | 'aegis128x4'
  | 'aes256gcm'
  | 'aes128gcm'
const isBetterSqlite3Cipher = (cipher: string): cipher is BetterSqlite3CipherName =>
  (BETTER_SQLITE3_CIPHER_NAMES as readonly string[]).includes(cipher)

type LocalDriver = (config: {
  path: string
  synchronous?: 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA'
  busyTimeoutMs?: number
  key?: DatabaseKey
}) => Driver

/**
 * The driver for opening by path or id: better-sqlite3 when it is installed (the fastest), else
 * Node's built-in `node:sqlite` through `@agentfs/driver-node-sqlite` (Node.js 22.16+, nothing
 * native to build). Neither installed: an error naming what to install.
 */
async function localDriver(
  encrypted = false,
  cipher?: BetterSqlite3CipherName | TursoCipherName,
): Promise<LocalDriver> {
  const require = createRequire(import.meta.url)
  const installed = (name: string) => {
    try {
      require.resolve(name)
      return true
    } catch {
      return false
    }
  }
  if (encrypted) {
    if (cipher !== undefined && !isBetterSqlite3Cipher(cipher)) {
      // A cipher of the Turso engine: the file is the engine's own encrypted format.
      const turso = await import('@agentfs/driver-turso').catch(() => undefined)
      if (!turso)
        throw new AgentFsError(
          'CANT_OPEN',
          `the cipher ${JSON.stringify(cipher)} is the Turso engine's: npm install @agentfs/driver-turso`,
        )
      if (!(cipher in turso.TURSO_CIPHERS))
        throw new AgentFsError(
          'INVALID_ARGUMENT',
          `unknown cipher ${JSON.stringify(cipher)}; one of ${[...BETTER_SQLITE3_CIPHER_NAMES, ...Object.keys(turso.TURSO_CIPHERS)].join(', ')}`,
        )
      return ({ path, busyTimeoutMs, key }) =>
        turso.tursoDriver({
          path,
          ...(busyTimeoutMs === undefined ? {} : { busyTimeoutMs }),
          ...(key === undefined ? {} : { key }),
          cipher,
        })
    }
    // Otherwise only better-sqlite3-multiple-ciphers encrypts among the default drivers
    // (node:sqlite cannot); the driver itself says what to do when that engine is missing or
    // unbuilt.
    const better = await import('@agentfs/driver-better-sqlite3').catch(() => undefined)
    if (better && installed('better-sqlite3-multiple-ciphers'))
      return (config) =>
        better.betterSqlite3Driver({ ...config, ...(cipher === undefined ? {} : { cipher }) })
    throw new AgentFsError(
      'CANT_OPEN',
      'an encrypted database (the key option) needs @agentfs/driver-better-sqlite3 and better-sqlite3-multiple-ciphers: npm install @agentfs/driver-better-sqlite3 better-sqlite3-multiple-ciphers',
    )
  }
  const node = await import('@agentfs/driver-node-sqlite').catch(() => undefined)
  const nodeUsable = node !== undefined && node.nodeSqliteProblem() === undefined
  if (installed('better-sqlite3')) {
    const better = await import('@agentfs/driver-better-sqlite3').catch(() => undefined)
    if (better) {
      // A better-sqlite3 build that crashes this Node.js gives way to node:sqlite when it can.
      if (!nodeUsable) return better.betterSqlite3Driver
      try {
        better.checkEngineVersion()
        return better.betterSqlite3Driver
      } catch {}
    }
  }
  if (nodeUsable) return node.nodeSqliteDriver
  throw new AgentFsError(
    'CANT_OPEN',
    'Opening a database by path or id needs a local driver, and none is installed: npm install @agentfs/driver-better-sqlite3 better-sqlite3, or on Node.js 22.16+ npm install @agentfs/driver-node-sqlite (no native build), or pass { driver } (e.g. libsqlDriver from @agentfs/driver-libsql)',
  )
}
