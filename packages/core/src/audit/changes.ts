import { AsyncLocalStorage } from 'node:async_hooks'
import type { Timestamp } from '../clock.js'
import { type Executor, executeDeferred, type Statement } from '../driver/driver.js'
import { explicitId } from '../driver/guard-driver.js'
import { unitOf } from '../driver/transaction-unit.js'
import { AgentFsError } from '../errors.js'
import type { VersionRetention } from '../history/versions.js'

/** What a row of the change feed (`agentfs_change`) says happened. */
export type ChangeOp =
  | 'create'
  | 'write'
  | 'truncate'
  | 'rename'
  | 'link'
  | 'unlink'
  | 'mkdir'
  | 'rmdir'
  | 'rm'
  | 'symlink'
  | 'mknod'
  | 'chmod'
  | 'chown'
  | 'utimes'
  | 'kv-set'
  | 'kv-delete'
  | 'kv-clear'
  | 'commit'
  | 'restore'

/** Who a change is attributed to: a session, and the tool call it ran in. */
export interface Actor {
  readonly sessionId?: string | undefined
  /** Token of the running tool call; its `agentfs_tool_call_meta` row carries the same token. */
  readonly callToken?: string | undefined
  /** Why: recorded on every change made under it (`agentfs_change.message`); see {@link withMessage}. */
  readonly message?: string | undefined
}

/** The longest message a change can carry, in characters. */
export const MAX_MESSAGE = 4096

/** Checks a change message: a string of 1 to {@link MAX_MESSAGE} characters, no NUL. */
export function checkMessage(message: unknown): string {
  if (
    typeof message !== 'string' ||
    message.length === 0 ||
    message.length > MAX_MESSAGE ||
    message.includes('\0')
  )
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `a change message must be 1 to ${MAX_MESSAGE} characters without NUL; got ${typeof message === 'string' ? `${message.length} characters` : typeof message}`,
    )
  return message
}

/** One change as an operation reports it; the feed adds the sequence, time and actor. */
export interface ChangeRecord {
  readonly op: ChangeOp
  /** The path changed (for a kv change, the key; for rename and link, the source). */
  path?: string
  /** The second path of rename, link and copy (the destination; for copy, the source). */
  path2?: string
  /** The inode changed; its size and version token are read from the row when it exists. */
  ino?: number
  /** The directory whose entry `path` names, when the entry itself changed (snapshots use it). */
  dir?: number
  /** The directory of `path2`'s entry, when it changed. */
  dir2?: number
  /** SHA-256 of the file's content after a content change (`create`, `write`, `truncate`). */
  hash?: Uint8Array | null
  /** SHA-256 of the file's content before it, for a change of a file that had content. */
  prevHash?: Uint8Array | null
}

// One store per process even when two copies of this package are loaded.
const KEY = Symbol.for('agentfs.actor')
const registry = globalThis as { [KEY]?: AsyncLocalStorage<Actor> }
const actors: AsyncLocalStorage<Actor> = registry[KEY] ?? new AsyncLocalStorage<Actor>()
registry[KEY] = actors

/**
 * Calls of {@link withActor} and {@link withMessage} under way. While none is, the store is
 * disabled: on Node.js before 24 an enabled AsyncLocalStorage installs a hook that every promise
 * of the process pays for, for good (measured: a `stat` took about 30% longer for the rest of
 * the process after a single tool call), so it is enabled only while a call runs.
 */
const RUNNING = Symbol.for('agentfs.actor.running')
const counters = globalThis as { [RUNNING]?: { n: number } }
// Shared like the store: two copies of this package count the same calls.
const running = counters[RUNNING] ?? { n: 0 }
counters[RUNNING] = running

function ended(): void {
  if (--running.n === 0) actors.disable()
}

/** `actors.run(actor, fn)`, the store enabled until `fn` (and the promise it returns) ends. */
function runAs<T>(actor: Actor, fn: () => T): T {
  running.n++
  let out: T
  try {
    out = actors.run(actor, fn)
  } catch (error) {
    ended()
    throw error
  }
  // A promise (or any thenable) ends when it settles; its continuations keep the actor until then.
  if (typeof (out as { then?: unknown } | null)?.then === 'function')
    return Promise.resolve(out).finally(ended) as T
  ended()
  return out
}

/**
 * Runs `fn` with its changes attributed to `actor` (tool calls do this around their body).
 * Work `fn` starts and does not wait for is attributed while `fn` runs, not after it ends.
 */
export function withActor<T>(actor: Actor, fn: () => T): T {
  return runAs(actor, fn)
}

/**
 * Runs `fn` with every change it makes carrying `message` (shown by `log`, `history` and
 * `blame`): one message for a group of changes. Inside a tool call the call's session and
 * token stay.
 *
 * @example
 * await withMessage('rename the config keys', async () => {
 *   await fs.writeFile('/a.json', a)
 *   await fs.writeFile('/b.json', b)
 * })
 */
export function withMessage<T>(message: string, fn: () => T): T {
  return runAs({ ...actors.getStore(), message: checkMessage(message) }, fn)
}

/** The actor of the running call, if a tool call or `withActor` set one. */
export function currentActor(): Actor | undefined {
  return actors.getStore()
}

/** Whether and how a store appends to the feed. */
export interface FeedOptions {
  /** Append a row per change (default true). */
  readonly enabled?: boolean
  /** Session recorded on changes made outside any tool call. */
  readonly sessionId?: string
  /**
   * Keep the content of files after each change, so `fs.readFile(path, { version })` can read
   * it back (off by default: each change then also hashes and stores the file's chunks).
   * `true` uses the default retention.
   */
  readonly versions?: boolean | VersionRetention
}

/** Whether a change leaves a file content worth keeping as a version. */
export const CONTENT_OPS: ReadonlySet<ChangeOp> = new Set(['create', 'write', 'truncate'])

/** Microseconds since the epoch of a timestamp. */
export function micros(now: Timestamp): number {
  return now.sec * 1_000_000 + Math.floor(now.nsec / 1000)
}

/** A change's transaction id when it is not the first of its transaction: the previous one's. */
const PREVIOUS_TXID = '(SELECT coalesce(txid, seq) FROM agentfs_change ORDER BY seq DESC LIMIT 1)'
/**
 * The feed row's insert, its txid bound or read from the previous row (built once each). The
 * inode comes in through the one-row start, not as the join's term (ARCHITECTURE.md, "Statement
 * shapes").
 */
const feedInsert = (txid: string) =>
  `INSERT INTO agentfs_change (seq, at_us, op, path, path2, ino, dir_ino, dir2_ino, version, size, session_id, call_token, hash, prev_hash, txid, message)
SELECT ?, ?, ?, ?, ?, ?, ?, ?, CAST(i.ctime * 1000000000 + i.ctime_nsec AS TEXT), i.size, ?, ?, ?, ?, ${txid}, ?
FROM (SELECT ? AS ino) s LEFT JOIN fs_inode i ON i.ino = s.ino`
const FEED_INSERT = feedInsert('?')
const FEED_INSERT_PREVIOUS = feedInsert(PREVIOUS_TXID)
/** The same row for a change of no inode (a kv key, a commit): no version or size to read. */
const feedValues = (txid: string) =>
  `INSERT INTO agentfs_change (seq, at_us, op, path, path2, ino, dir_ino, dir2_ino, version, size, session_id, call_token, hash, prev_hash, txid, message)
VALUES (?, ?, ?, ?, ?, NULL, ?, ?, NULL, NULL, ?, ?, ?, ?, ${txid}, ?)`
const FEED_VALUES = feedValues('?')
const FEED_VALUES_PREVIOUS = feedValues(PREVIOUS_TXID)

/**
 * The statement that appends `change` to the feed in the caller's transaction, to run next on
 * `q` (it counts the change in the transaction's unit now). The size and version token of the
 * changed inode are read from its row in the same statement, so they are the committed ones.
 * A promise only where row ids are explicit (a synced database allots them).
 */
export function changeStatement(
  q: Executor,
  change: ChangeRecord,
  now: Timestamp,
  sessionId: string | undefined,
): Statement | Promise<Statement> {
  const seq = explicitId(q, 'agentfs_change')
  return seq === undefined
    ? feedStatement(q, change, now, sessionId, undefined)
    : seq.then((id) => feedStatement(q, change, now, sessionId, id))
}

function feedStatement(
  q: Executor,
  change: ChangeRecord,
  now: Timestamp,
  sessionId: string | undefined,
  seq: number | undefined,
): Statement {
  const actor = currentActor()
  // The first change of a transaction has no txid (it is its own seq); the others carry the
  // first one's seq: known when ids are explicit, else read from the feed's newest row, which
  // is this transaction's previous change (nothing else writes inside a write transaction).
  const unit = unitOf(q)
  let txid: number | null = null
  let fromPrevious = false
  if (unit !== undefined) {
    if (unit.rows === 0) unit.first = seq
    else if (unit.first !== undefined) txid = unit.first
    else fromPrevious = true
    unit.rows++
  }
  const ino = change.ino ?? null
  const us = micros(now)
  const path = change.path ?? null
  const path2 = change.path2 ?? null
  const dir = change.dir ?? null
  const dir2 = change.dir2 ?? null
  const session = actor?.sessionId ?? sessionId ?? null
  const token = actor?.callToken ?? null
  const hash = change.hash ?? null
  const prev = change.prevHash ?? null
  const message = actor?.message ?? null
  const id = seq ?? null
  const { op } = change
  if (ino === null)
    return fromPrevious
      ? {
          sql: FEED_VALUES_PREVIOUS,
          params: [id, us, op, path, path2, dir, dir2, session, token, hash, prev, message],
        }
      : {
          sql: FEED_VALUES,
          params: [id, us, op, path, path2, dir, dir2, session, token, hash, prev, txid, message],
        }
  return fromPrevious
    ? {
        sql: FEED_INSERT_PREVIOUS,
        params: [id, us, op, path, path2, ino, dir, dir2, session, token, hash, prev, message, ino],
      }
    : {
        sql: FEED_INSERT,
        params: [
          id,
          us,
          op,
          path,
          path2,
          ino,
          dir,
          dir2,
          session,
          token,
          hash,
          prev,
          txid,
          message,
          ino,
        ],
      }
}

/** Appends `change` to the feed in the caller's transaction (see {@link changeStatement}). */
export function appendChange(
  q: Executor,
  change: ChangeRecord,
  now: Timestamp,
  sessionId: string | undefined,
): Promise<void> {
  let statement: Statement | Promise<Statement>
  try {
    statement = changeStatement(q, change, now, sessionId)
  } catch (error) {
    return Promise.reject(error)
  }
  return statement instanceof Promise
    ? statement.then((ready) => executeDeferred(q, ready))
    : executeDeferred(q, statement)
}
