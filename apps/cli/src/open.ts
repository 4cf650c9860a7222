import { randomUUID } from 'node:crypto'
import { accessSync, constants, existsSync, mkdirSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import {
  type AgentDatabase,
  AgentFsError,
  countBadNames,
  type Driver,
  followChanges,
  type GroupedDatabase,
  groupCommits,
  guardDriver,
  inspectLayout,
  planFromReport,
} from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import {
  createFileSystem,
  type FileSystem,
  type FileSystemOptions,
  type FsPolicy,
} from '@agentfs/fs'
import { snapshotBase } from '@agentfs/history'
import {
  HostFileSystem,
  type OverlayBaseDescription,
  openOverlay,
  readOverlayBase,
} from '@agentfs/overlay'
import { AgentFS } from '@agentfs/sdk'
import { auditFromEnv } from './audit-key.js'
import { encryption, isTursoCipher } from './db-key.js'
import type { ChangeSource } from './fuse-mount.js'

/** Like the reference CLI: a bare id means `.agentfs/<id>.db`; anything else is a path. */
export function databasePath(target: string): string {
  if (!isId(target)) return resolve(target)
  const local = resolve('.agentfs', `${target}.db`)
  if (existsSync(local)) return local
  // `agentfs run` keeps its sessions out of the project: an id names one when no local has it.
  const run = join(runsDir(), `${target}.db`)
  return existsSync(run) ? run : local
}

/** A database id (a bare name, kept in .agentfs/ or the runs folder) rather than a path. */
export const isId = (target: string) => /^[a-zA-Z0-9_-]+$/.test(target)

/**
 * Where `agentfs run` keeps its session databases, outside the project it works on:
 * $AGENTFS_STATE_DIR/runs, else $XDG_STATE_HOME/agentfs/runs, else ~/.local/state/agentfs/runs.
 */
export function runsDir(): string {
  const state =
    process.env.AGENTFS_STATE_DIR ||
    join(process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'agentfs')
  return resolve(state, 'runs')
}

/**
 * The database of a run session: a path as given; an id that names a database here
 * (.agentfs/ID.db) is that one, else ID.db in {@link runsDir} (made on demand, private).
 */
export function runSessionPath(target: string): string {
  if (!isId(target)) return resolve(target)
  const local = resolve('.agentfs', `${target}.db`)
  if (existsSync(local)) return local
  mkdirSync(runsDir(), { recursive: true, mode: 0o700 })
  return join(runsDir(), `${target}.db`)
}

/** The path of a database about to be created: an id's folder (.agentfs/) is made on demand. */
export function newDatabasePath(target: string): string {
  const path = databasePath(target)
  if (isId(target)) mkdirSync(dirname(path), { recursive: true })
  return path
}

/**
 * Refuses a database path that names a directory (SQLite would say only "disk I/O error"), and
 * says what a bare name that is a directory here would have meant.
 */
export function refuseDirectory(path: string, target: string): void {
  if (statSync(path, { throwIfNoEntry: false })?.isDirectory())
    throw new Error(
      `${path} is a directory, not a database file; name a file (agentfs init ${target.replace(/\/+$/, '')}/agent.db) or an id (agentfs init my-agent makes .agentfs/my-agent.db)`,
    )
}

/** The CLI's sentence for "no database here", with what a directory of that name could mean. */
function noDatabase(path: string, target: string): Error {
  const here = isId(target) ? statSync(target, { throwIfNoEntry: false }) : undefined
  return new Error(
    here?.isDirectory()
      ? `no database named ${target} (${path}); ./${target} is a directory, not a database: copy it into one with "agentfs import ./${target} ${target}", or work on it copy-on-write with "agentfs init ${target}.db --base ./${target}"`
      : `no database at ${path}; create it with "agentfs init ${target}"`,
  )
}

/**
 * The engine's error about a database file, said for a CLI user: the file named, and what to
 * do in terms of files and commands (not SDK options). Other errors pass through.
 */
export function explainDatabaseError(error: unknown, path: string): unknown {
  const code = (error as { code?: unknown } | null)?.code
  if (code === 'CORRUPT')
    return new AgentFsError(
      'CORRUPT',
      `${path} is damaged, encrypted or not a SQLite database: if it is encrypted, give its key (--key-file FILE or AGENTFS_KEY), else restore it from a backup`,
      { cause: error },
    )
  if (code === 'READONLY') {
    const folder = dirname(path)
    const message = writable(folder)
      ? `${path} is read-only for this user (file permissions); make it writable (chmod u+w ${path}) or run as its owner — commands that only read still work`
      : `${path} cannot be opened: SQLite must create ${basename(path)}-shm next to it (the database is in WAL mode) and the folder ${folder} is not writable for this user; make the folder writable, or copy the database somewhere writable`
    return new AgentFsError('READONLY', message, { cause: error })
  }
  return error
}

/** Creating a database failed: the file named, with the reason the folder gives. */
export function explainCreateError(error: unknown, path: string): unknown {
  if ((error as { code?: unknown } | null)?.code !== 'CANT_OPEN')
    return explainDatabaseError(error, path)
  const folder = dirname(path)
  return new AgentFsError(
    'CANT_OPEN',
    writable(folder)
      ? `cannot create ${path}: SQLite could not open it there (${(error as Error).message}); choose another path`
      : `cannot create ${path}: the folder ${folder} is not writable for this user; choose a folder you can write to`,
    { cause: error },
  )
}

function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK)
    return true
  } catch {
    return false
  }
}

/**
 * A driver to look at the file at `path` with this command's key: read-only on
 * better-sqlite3, or the Turso engine for its ciphers (loaded only then).
 */
export async function inspectionDriver(path: string): Promise<Driver> {
  const { key, cipher } = encryption()
  if (isTursoCipher(cipher)) {
    const { tursoDriver } = await import('@agentfs/driver-turso')
    return tursoDriver({ path, ...(key === undefined ? {} : { key }), cipher })
  }
  return betterSqlite3Driver({
    path,
    readonly: true,
    ...(key === undefined ? {} : { key }),
    ...(cipher === undefined ? {} : { cipher }),
  })
}

/**
 * Refuses, before anything touches the file, a SQLite file that is not an AgentFS database (or
 * needs migration, unless `migrate`): commands never convert or upgrade a file by surprise.
 */
async function checkAgentFsFile(path: string, target: string, migrate: boolean): Promise<void> {
  const driver = guardDriver(await inspectionDriver(path))
  try {
    const report = await inspectLayout(driver).catch((error: unknown) => {
      throw explainDatabaseError(error, path)
    })
    if (report.layout === 'empty' && !migrate) {
      const tables = [...report.objects.values()].filter((o) => o.type === 'table')
      throw new Error(
        `${path} is not an AgentFS database${tables.length ? ` (it holds ${tables.map((t) => t.name).join(', ')})` : ''}; agentfs commands leave other SQLite files alone — run "agentfs migrate ${target}" to add the AgentFS tables to it`,
      )
    }
    if (!migrate && planFromReport(report).steps.length > 0)
      throw new Error(
        `${path} has an older AgentFS layout (${report.layout}); run "agentfs migrate ${target}" to upgrade it first`,
      )
  } finally {
    await driver.close()
  }
}

/** The auth token for sync servers: `AGENTFS_SYNC_TOKEN` (never stored on disk). */
export const syncToken = (): string | undefined =>
  checkToken(process.env.AGENTFS_SYNC_TOKEN || undefined, '$AGENTFS_SYNC_TOKEN')

/**
 * Refuses a token no HTTP header can carry (a placeholder such as `…` copied from the docs,
 * a stray space or newline) before it reaches the network and fails there obscurely.
 */
export function checkToken(token: string | undefined, source: string): string | undefined {
  if (token === undefined) return undefined
  const bad = /[^\x21-\x7e]/u.exec(token)
  if (bad)
    throw new Error(
      `${source} is not a usable token: it has ${JSON.stringify(bad[0])} at ${bad.index}, and a token is printable ASCII without spaces; set it to the token your sync server issued`,
    )
  return token
}

/**
 * A database made by `agentfs init --sync-url` (a sync state file beside it): opened through
 * the sync engine, so the changes commands make are captured and pushed by `agentfs sync`.
 */
async function openSyncedFile(path: string): Promise<AgentFS> {
  refuseKeyForSync()
  const { openSynced, readSyncState } = await import('@agentfs/sync')
  const state = readSyncState(path)!
  const token = syncToken()
  return openSynced({
    path,
    audit: auditFromEnv(),
    sync: { url: state.url, ...(token === undefined ? {} : { authToken: token }) },
  })
}

/**
 * A synced database is a replica of a server's: the server (Turso) encrypts what it stores, and
 * its local file is the sync engine's, which the CLI opens without a key.
 */
export function refuseKeyForSync(): void {
  if (encryption().key !== undefined)
    throw new Error(
      'a synced database (init --sync-url) cannot be encrypted by agentfs yet: its local file belongs to the sync engine; drop --key-file/--key/$AGENTFS_KEY for it',
    )
}

/** True when `path` is a synced database (made by `agentfs init --sync-url`). */
export const isSyncedFile = (path: string) => existsSync(`${path}-agentfs-sync.json`)

/** Opens an existing AgentFS database (never creates, converts or upgrades one by mistake). */
export async function openExisting(
  target: string,
  options: { migrate?: boolean } = {},
): Promise<AgentFS> {
  const path = databasePath(target)
  if (!existsSync(path)) throw noDatabase(path, target)
  refuseDirectory(path, target)
  if (isSyncedFile(path)) return openSyncedFile(path)
  await checkAgentFsFile(path, target, options.migrate === true)
  const agent = await AgentFS.open({
    path,
    ...encryption(),
    audit: auditFromEnv(),
    // An interrupted commit is said by every command that opens the database.
    onWarning: (message) => process.stderr.write(`agentfs: warning: ${message}\n`),
  }).catch((error: unknown) => {
    throw explainDatabaseError(error, path)
  })
  // A crafted database is flagged as soon as it is opened; walkers and exports refuse it too.
  const bad = await countBadNames(agent.db).catch(() => 0)
  if (bad > 0)
    process.stderr.write(
      `agentfs: warning: ${path} has ${bad} entr${bad === 1 ? 'y' : 'ies'} whose name cannot be a path component (damaged or crafted); run "agentfs fsck ${target}"\n`,
    )
  return agent
}

/**
 * The filesystem to show: the overlay view when the database holds an overlay. `fs` options
 * (umask, owner) apply to what the view creates.
 */
export async function viewOf(
  agent: AgentFS,
  fs?: FileSystemOptions,
  db: AgentDatabase = agent.db,
): Promise<FileSystem> {
  if (await readOverlayBase(db))
    return openOverlay(db, { ...(fs ? { fs } : {}), openBase: openBranchBase })
  return fs || db !== agent.db ? createFileSystem(db, fs) : agent.fs
}

/**
 * `fs` held to the memory policy of `@agentfs/memory` (seed 003's hard blocks on every user's
 * garden): what `--memory` of `serve mcp`, `mount` and `exec` serves.
 */
export async function withMemoryPolicy(fs: FileSystem): Promise<FileSystem> {
  const restrict = (fs as { restrict?: (policy: FsPolicy) => FileSystem }).restrict
  if (typeof restrict !== 'function')
    throw new Error(
      '--memory needs a database filesystem; this database is an overlay, whose view has no policy',
    )
  const { memoryPolicy } = await import('@agentfs/memory')
  return restrict.call(fs, memoryPolicy())
}

/**
 * The base of an overlay database: a host directory (`init --base`, `run`), or for a branch
 * database (`agentfs branch`) the snapshot's tree, read from the live database into memory.
 */
export async function openBranchBase(base: OverlayBaseDescription): Promise<FileSystem> {
  if (base.kind === 'host') return new HostFileSystem({ root: base.path })
  if (base.kind !== 'snapshot')
    throw new Error(`the base of this overlay is the database ${base.path}; the CLI cannot open it`)
  const live = await openExisting(base.path)
  try {
    const memory = await AgentFS.open({ path: ':memory:', chunkSize: live.db.chunkSize })
    return await snapshotBase(live.db, live.history, base.snapshot, memory.db)
  } finally {
    await live.close()
  }
}

/**
 * Filesystem options for a kernel-facing view (FUSE): the kernel has already applied the
 * caller's umask, and new files belong to the user running the mount.
 */
export const kernelFacing = (sessionId?: string): FileSystemOptions => ({
  umask: 0,
  uid: process.getuid?.() ?? 0,
  gid: process.getgid?.() ?? 0,
  ...(sessionId === undefined ? {} : { feed: { sessionId } }),
})

/**
 * How long a change made through `mount` or `exec` may wait for its commit by default, in ms
 * (`--commit-delay`): none, so that other processes reading the database see each change the
 * moment the program that made it is told it succeeded.
 */
export const DEFAULT_COMMIT_DELAY_MS = 0

/**
 * The same for `run`: its command works in a session of its own, reviewed after it exits (and
 * unmounting commits everything first), so its changes are committed in groups by default.
 */
export const RUN_COMMIT_DELAY_MS = 20

/** What a mount works through: its view options, its change source, its database. */
export interface MountSession {
  readonly fs: FileSystemOptions
  readonly changes: ChangeSource
  /**
   * The database the view runs on: the mount's changes are committed in groups (one commit per
   * `commitDelayMs` at most; `flush()` is fsync's), each change still atomic on its own.
   */
  readonly db: GroupedDatabase
}

/**
 * A mount's view options, change source and database. The mount's own changes are recorded in
 * the change feed under a session id of their own (`mount:<id>`), so that changes made elsewhere
 * (the SDK, other commands, sync) can be told apart and the kernel's cache of them dropped. A
 * commit the database refuses (disk full) is reported on stderr with what it lost.
 */
export function mountSession(
  agent: AgentFS,
  commitDelayMs: number = DEFAULT_COMMIT_DELAY_MS,
): MountSession {
  const sessionId = `mount:${randomUUID().slice(0, 8)}`
  const db = groupCommits(agent.db, {
    maxDelayMs: commitDelayMs,
    onLost: (error, changes) =>
      process.stderr.write(
        `agentfs mount: ${changes} change(s) made through the mount in the last ${commitDelayMs} ms could not be committed (${error instanceof Error ? error.message : String(error)}); the kernel may show them until its cache expires (1 s)\n`,
      ),
  })
  return {
    fs: kernelFacing(sessionId),
    db,
    changes: {
      follow: (signal) => followChanges(db, { signal, store: 'fs', exceptSession: sessionId }),
    },
  }
}
