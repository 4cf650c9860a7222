import { createHash } from 'node:crypto'
import { landing, type ToolEnvironment } from '@agentfs/agent-tools'
import {
  type AuditKey,
  type Clock,
  canonicalJson,
  checkAuditKey,
  claimIdempotency,
  currentActor,
  databaseOf,
  type IntegrityKey,
  integrityKeysOf,
  isAgentFsError,
  micros,
  type Queryable,
  recordIdempotency,
  systemClock,
} from '@agentfs/core'
import type { FileSystem } from '@agentfs/fs'
import { MemoryError } from '../errors.js'
import { AgentFsEventStore } from '../events/agentfs-store.js'
import type { EventInput, MemoryEvent } from '../events/event.js'
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
}

/** What every memory tool shares. */
export interface MemoryContext {
  readonly garden: Garden
  readonly options: MemoryToolbeltOptions
  readonly clock: Clock
  readonly events: (db: Queryable) => { store: AgentFsEventStore; keys: readonly IntegrityKey[] }
}

export function createContext(options: MemoryToolbeltOptions): MemoryContext {
  const garden = createGarden(options)
  const clock = options.clock ?? systemClock()
  const own = options.integrityKey ? checkAuditKey(options.integrityKey) : undefined
  const stores = new WeakMap<object, AgentFsEventStore>()
  return {
    garden,
    options,
    clock,
    events(db) {
      const keys = own ? [own, ...integrityKeysOf(db)] : integrityKeysOf(db)
      const key = keys[0]
      if (!key)
        throw new MemoryError(
          'INVALID_ARGUMENT',
          'memory events are sealed with an HMAC key: open the database with one (AgentFS.open({ audit: { key } })) or pass integrityKey to the toolbelt',
        )
      let store = stores.get(key)
      if (!store) {
        store = new AgentFsEventStore({ userId: garden.userId, key, clock })
        stores.set(key, store)
      }
      return { store, keys }
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

/** The common fields of a write's input. */
export interface WriteMeta {
  readonly rationale?: string | undefined
  readonly override_rationale?: string | undefined
  readonly evidence_refs?: readonly string[] | undefined
  readonly agent_action_id?: string | undefined
  readonly idempotency_key?: string | undefined
}

/** A write's event before it runs (the tool fills in what it knows). */
export type Draft = Omit<EventInput, 'tool_call_id' | 'idempotency_key'>

/** What a write's body returns: its answer, and what the event records of it. */
export interface Written<T> {
  readonly value: T
  readonly event: Partial<Draft>
  readonly after_hash: string | null
  readonly line_hash: string | null
}

/**
 * Runs a write of the toolbelt as seed 003's saga, in one transaction of the database: the
 * idempotency key (the caller's, or the scope key) is claimed, `body` checks and writes, the
 * event is recorded `committed` with the after-hash, and the key's record keeps the answer. A
 * retry returns the first answer and changes nothing. A refused or failed write changes
 * nothing and is recorded as a `failed` event.
 */
export async function sagaWrite<T>(
  ctx: MemoryContext,
  env: ToolEnvironment,
  draft: Draft,
  meta: WriteMeta,
  payload: unknown,
  body: (fs: FileSystem, keys: readonly IntegrityKey[]) => Promise<Written<T>>,
): Promise<{ value: T; event_id: string; replayed: boolean }> {
  if (env.readOnly) throw new MemoryError('BLOCKED', 'the filesystem is read-only here')
  const db = databaseFor(env.fs)
  const { store, keys } = ctx.events(db)
  const entity = `${draft.file_path ?? ''}#${draft.section_anchor ?? ''}`
  const key = meta.idempotency_key ?? scopeKey(ctx.garden.userId, draft.tool, entity, payload)
  const scope = `memory:${draft.tool}`
  const callToken = currentActor()?.callToken
  const input: EventInput = {
    ...draft,
    ...(callToken ? { tool_call_id: callToken } : {}),
    idempotency_key: key,
  }
  let event: EventInput = input
  try {
    return await db.transaction(async (tx) => {
      const nowUs = micros(ctx.clock.now())
      const replay = await claimIdempotency(tx, { scope, key, args: payload, nowUs })
      if (replay) {
        const stored = replay.result as { value: T; event_id: string }
        return { ...stored, replayed: true }
      }
      const since_seq = await store.lastSeq(tx)
      const written = await body(bindFs(env.fs, tx), keys)
      event = { ...input, ...written.event }
      const recorded = await store.record(tx, event, 'committed', {
        after_hash: written.after_hash,
        line_hash: written.line_hash,
        since_seq,
      })
      const answer = { value: written.value, event_id: recorded.id }
      await recordIdempotency(tx, {
        scope,
        key,
        args: payload,
        nowUs,
        result: answer,
        ...(ctx.options.idempotencyTtlMs === undefined
          ? {}
          : { ttlMs: ctx.options.idempotencyTtlMs }),
      })
      return { ...answer, replayed: false }
    })
  } catch (error) {
    // Refused or failed: nothing stayed; the attempt is an event of its own.
    if (
      !isAgentFsError(error, 'IDEMPOTENCY_MISMATCH') &&
      !isAgentFsError(error, 'IDEMPOTENCY_UNTRUSTED')
    )
      await store
        .record(db, event, 'failed', {
          error: `${(error as { code?: string }).code ?? 'ERROR'}: ${error instanceof Error ? error.message : String(error)}`,
        })
        .catch(() => undefined)
    throw error
  }
}

export type { MemoryEvent }
