import { createHash } from 'node:crypto'
import { landing, type ToolEnvironment } from '@agentfs/agent-tools'
import {
  type AuditKey,
  type Clock,
  canonicalJson,
  checkAuditKey,
  databaseOf,
  type IntegrityKey,
  integrityKeysOf,
  isAgentFsError,
  type Queryable,
  systemClock,
} from '@agentfs/core'
import type { FileSystem } from '@agentfs/fs'
import { MemoryError } from '../errors.js'
import { AgentFsEventStore } from '../events/agentfs-store.js'
import type { MemoryEvent } from '../events/event.js'
import type { EventFilters } from '../events/filters.js'
import { PostgresEventStore, type PostgresEventsOptions } from '../events/postgres-store.js'
import { createGarden, type Garden, type GardenOptions, type GardenPath } from '../garden/garden.js'
import type { LintOptions } from '../markdown/lint.js'

/** Options of the memory toolbelt. */
export interface MemoryToolbeltOptions extends Omit<GardenOptions, 'userId'> {
  /** The user whose garden the agent tends. */
  readonly userId: string
  /** Lint caps and canonical headings. */
  readonly lint?: LintOptions
  /**
   * The key of the events' HMACs (its id is the event's `integrity_salt_version`); default:
   * the database connection's first integrity key (`AgentFS.open({ audit: { key } })`).
   */
  readonly integrityKey?: AuditKey
  /** Idempotency records are kept this long (default 48 hours). */
  readonly idempotencyTtlMs?: number
  /** Offer `fs_move` (maintainer-only; default false). */
  readonly allowMove?: boolean
  readonly clock?: Clock
  /**
   * Where events live: in the AgentFS database (default: tables written in the transaction of
   * the change), or in Postgres — a store from `PostgresEventStore.open`, or its options (the
   * toolbelt opens it on first use).
   */
  readonly events?: { readonly postgres: PostgresEventStore | PostgresEventsOptions }
}

/** What every memory tool shares. */
export interface MemoryContext {
  readonly garden: Garden
  readonly options: MemoryToolbeltOptions
  readonly clock: Clock
  /** The keys of the events' HMACs for `db`: the first seals, all verify. */
  readonly keys: (db: Queryable) => readonly IntegrityKey[]
  /** The store of events in the AgentFS database. */
  readonly local: (db: Queryable) => AgentFsEventStore
  /** The Postgres store, when events live there (opened on first use). */
  readonly postgres: () => Promise<PostgresEventStore> | undefined
  /** Events matching `filters`, newest first, from wherever they live. */
  readonly query: (db: Queryable, filters: EventFilters) => Promise<MemoryEvent[]>
}

export function createContext(options: MemoryToolbeltOptions): MemoryContext {
  const garden = createGarden(options)
  const clock = options.clock ?? systemClock()
  const own = options.integrityKey ? checkAuditKey(options.integrityKey) : undefined
  const stores = new WeakMap<object, AgentFsEventStore>()
  const pgOption = options.events?.postgres
  let pgStore: Promise<PostgresEventStore> | undefined
  const keys = (db: Queryable): readonly IntegrityKey[] => {
    const all = own ? [own, ...integrityKeysOf(db)] : integrityKeysOf(db)
    if (all.length === 0)
      throw new MemoryError(
        'INVALID_ARGUMENT',
        'memory events are sealed with an HMAC key: open the database with one (AgentFS.open({ audit: { key } })) or pass integrityKey to the toolbelt',
      )
    return all
  }
  return {
    garden,
    options,
    clock,
    keys,
    local(db) {
      const key = keys(db)[0]!
      let store = stores.get(key)
      if (!store) {
        store = new AgentFsEventStore({ userId: garden.userId, key, clock })
        stores.set(key, store)
      }
      return store
    },
    async query(db, filters) {
      const pg = this.postgres()
      return pg ? (await pg).query(filters) : this.local(db).query(db, filters)
    },
    postgres() {
      if (pgOption === undefined) return undefined
      if (pgOption instanceof PostgresEventStore) return Promise.resolve(pgOption)
      pgStore ??= PostgresEventStore.open({ clock, ...pgOption }).catch((error: unknown) => {
        pgStore = undefined
        throw error
      })
      return pgStore
    },
  }
}

/** The database under a tool's filesystem (the memory tools need one: events go there). */
export function databaseFor(fs: FileSystem): Queryable {
  const db = databaseOf(fs)
  if (!db)
    throw new MemoryError(
      'INVALID_ARGUMENT',
      'the memory tools need an AgentFS database filesystem (events are written in the same transaction as the file)',
    )
  return db
}

/** A filesystem bound to a transaction (SqlFileSystem's `bind`). */
export function bindFs(fs: FileSystem, tx: Queryable): FileSystem {
  const bind = (fs as { bind?: (q: Queryable) => FileSystem }).bind
  if (typeof bind !== 'function')
    throw new MemoryError(
      'INVALID_ARGUMENT',
      'the memory tools need an AgentFS database filesystem',
    )
  return bind.call(fs, tx)
}

/**
 * The garden file a model's path names: inside the tools' allowed roots, inside the user's
 * garden, and not a symbolic link (a link could lead anywhere, another user's garden included).
 */
export async function gardenFile(
  ctx: MemoryContext,
  env: ToolEnvironment,
  path: unknown,
): Promise<GardenPath> {
  if (typeof path !== 'string' || path === '')
    throw new MemoryError('INVALID_ARGUMENT', 'path must be a non-empty string')
  const fsPath = await env.paths.resolve(path, env.fs)
  const file = ctx.garden.allow(fsPath)
  const real = await landing(env.fs, fsPath).catch(() => fsPath)
  if (real !== fsPath)
    throw new MemoryError(
      'BLOCKED',
      `${path} leads through a symbolic link to ${real}; garden files are written only where they are`,
    )
  return file
}

/**
 * A path of the user's folder (`/users/{userId}`, history copies included) for the tools that
 * read, list or search: inside the tools' allowed roots, and inside the folder both as given and
 * where it lands through symbolic links.
 */
export async function userPath(
  ctx: MemoryContext,
  env: ToolEnvironment,
  path: unknown,
): Promise<string> {
  if (typeof path !== 'string' || path === '')
    throw new MemoryError('INVALID_ARGUMENT', 'path must be a non-empty string')
  const fsPath = await env.paths.resolve(path, env.fs)
  const real = await landing(env.fs, fsPath).catch(() => fsPath)
  for (const p of [fsPath, real])
    if (!inUserFolder(ctx, p))
      throw new MemoryError(
        'BLOCKED',
        `${path} is outside ${ctx.garden.userDir}; the memory tools reach only the user's garden`,
      )
  return fsPath
}

/** Whether a filesystem path is the user's folder or inside it. */
function inUserFolder(ctx: MemoryContext, fsPath: string): boolean {
  const dir = ctx.garden.userDir
  return fsPath === dir || fsPath.startsWith(`${dir}/`)
}

/**
 * The check of {@link gardenFile} again, inside the write's transaction: a link swapped in
 * since is refused before anything is written.
 */
export async function stillHere(fs: FileSystem, path: string): Promise<void> {
  const real = await landing(fs, path).catch(() => path)
  if (real !== path)
    throw new MemoryError(
      'BLOCKED',
      `${path} now leads through a symbolic link to ${real}; nothing was written`,
    )
}

/** A file's text, or null when it does not exist. */
export async function readText(fs: FileSystem, path: string): Promise<string | null> {
  try {
    return await fs.readFile(path, 'utf8')
  } catch (error) {
    if (isAgentFsError(error, 'ENOENT')) return null
    throw error
  }
}

/** Seed 003's scope key: a hash of the user, the tool, the entity and the request. */
export function scopeKey(userId: string, tool: string, entity: string, payload: unknown): string {
  return `scope:${createHash('sha256')
    .update(canonicalJson([userId, tool, entity, payload]))
    .digest('hex')}`
}

/** A checked one-line rationale (or undefined). */
export function oneLine(what: string, value: unknown, max = 500): string | undefined {
  if (value === undefined || value === null || value === '') return undefined
  if (typeof value !== 'string' || /[\r\n]/.test(value) || value.length > max)
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `${what} must be one line of at most ${max} characters`,
    )
  return value.trim()
}
