import type { Queryable } from '../driver/guard-driver.js'
import { viaSubqueries } from '../driver/via-subqueries.js'
import { AgentFsError } from '../errors.js'
import { normalizePath } from '../paths/path.js'
import type { ChangeOp } from './changes.js'

/** One row of the change feed, as read back. */
export interface Change {
  /** Position in the feed; pass the last one seen as the next cursor. */
  readonly seq: number
  /** When, in microseconds since the epoch. */
  readonly atUs: number
  readonly op: ChangeOp
  /** The path changed (for kv changes, the key; for rename and link, the source). */
  readonly path: string | null
  /** The destination of rename and link; the source of a copy. */
  readonly path2: string | null
  readonly ino: number | null
  /** The inode's version token after the change (what `stat().version` returned then). */
  readonly version: string | null
  readonly size: number | null
  /**
   * The file's content after a content change (`create`, `write`, `truncate`), as
   * `sha256:` and hex; null for other changes and when it was not known (SPEC-EXTENSIONS.md).
   */
  readonly hash: string | null
  /** The file's content before the change, when it had content and its hash was known. */
  readonly prevHash: string | null
  readonly sessionId: string | null
  /** The tool call the change ran in, once that call is recorded (it is, when it returns). */
  readonly toolCallId: number | null
  readonly callToken: string | null
  /** Why the change was made, when it was given one (`writeFile(…, { message })`, `withMessage`). */
  readonly message: string | null
  /**
   * The transaction the change was made in: the `seq` of its first change. Every change of one
   * transaction (a multi-file edit, a restore, a commit) has the same one.
   */
  readonly txid: number
}

/** Filters of {@link readChanges}. */
export interface ChangeQuery {
  /** Only changes of this path (either path of a rename or link). */
  readonly path?: string
  /** With `path`: changes anywhere below it too. */
  readonly recursive?: boolean
  /** Only kv changes (`'kv'`) or only filesystem changes (`'fs'`). */
  readonly store?: 'fs' | 'kv'
  /**
   * Leave out the changes of this session (a writer that follows the feed for everyone else's
   * changes, as a mount does): filtered by the database, so they cost no rows.
   */
  readonly exceptSession?: string
  /** Only the changes of this transaction (a `txid`). */
  readonly txid?: number
  /** Only the changes made by this tool call (its `tool_calls.id`). */
  readonly toolCallId?: number
  /** Only the changes carrying this call token (a call under way has no id yet). */
  readonly callToken?: string
  /** Page size (default 100, at most 10,000). */
  readonly limit?: number
  /** Only changes at or after this time (ms since the epoch, or a Date). */
  readonly since?: number | Date
  /**
   * Newest first: the page holds the changes *before* the cursor (0: before nothing, so the
   * newest ones), and the returned cursor continues backwards.
   */
  readonly reverse?: boolean
}

/** A page of changes and the cursor to read the next one from. */
export interface ChangePage {
  readonly changes: Change[]
  /** Pass back as `cursor`: the last sequence number read (or the one given, when none). */
  readonly cursor: number
  readonly more: boolean
}

const MAX_PAGE = 10_000

interface ChangeRow {
  seq: number
  at_us: number
  op: ChangeOp
  path: string | null
  path2: string | null
  ino: number | null
  version: string | null
  size: number | null
  hash: Uint8Array | null
  prev_hash: Uint8Array | null
  session_id: string | null
  tool_call_id: number | null
  call_token: string | null
  txid: number | null
  message: string | null
}

/** `sha256:` and the hex of a 32-byte digest stored as a blob. */
function hashText(value: Uint8Array | ArrayBuffer | null): string | null {
  if (value === null || value === undefined) return null
  const bytes = value instanceof Uint8Array ? value : new Uint8Array(value)
  return `sha256:${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`
}

/** Escapes `%`, `_` and `\` for a LIKE pattern with `ESCAPE '\'`. */
function likePrefix(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}/%`
}

function pathCondition(
  path: string,
  recursive: boolean,
  column: string,
): { sql: string; params: string[] } {
  if (!recursive || path === '/') {
    if (path === '/' && recursive) return { sql: `${column} IS NOT NULL`, params: [] }
    return { sql: `${column} = ?`, params: [path] }
  }
  return {
    sql: `(${column} = ? OR ${column} LIKE ? ESCAPE '\\')`,
    params: [path, likePrefix(path)],
  }
}

/**
 * The changes after `cursor` (0: from the start), oldest first, one page. A path filter
 * matches either path of a change; `recursive` also matches everything below it.
 */
export async function readChanges(
  q: Queryable,
  cursor = 0,
  query: ChangeQuery = {},
): Promise<ChangePage> {
  if (!Number.isSafeInteger(cursor) || cursor < 0)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `cursor must be a non-negative integer, got ${cursor}`,
    )
  const limit = query.limit ?? 100
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE)
    throw new AgentFsError('INVALID_ARGUMENT', `limit must be 1 … ${MAX_PAGE}, got ${limit}`)
  const reverse = query.reverse === true
  const where = reverse ? (cursor === 0 ? ['1'] : ['c.seq < ?']) : ['c.seq > ?']
  const params: Array<string | number> = reverse && cursor === 0 ? [] : [cursor]
  if (query.path !== undefined) {
    const path = query.store === 'kv' ? query.path : normalizePath(query.path, 'changes')
    const a = pathCondition(path, query.recursive === true, 'c.path')
    const b = pathCondition(path, query.recursive === true, 'c.path2')
    where.push(`(${a.sql} OR ${b.sql})`)
    params.push(...a.params, ...b.params)
  }
  if (query.txid !== undefined) {
    if (!Number.isSafeInteger(query.txid) || query.txid < 1)
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        `txid must be a positive integer, got ${query.txid}`,
      )
    where.push('(c.seq = ? OR c.txid = ?)')
    params.push(query.txid, query.txid)
  }
  if (query.toolCallId !== undefined) {
    if (!Number.isSafeInteger(query.toolCallId))
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        `toolCallId must be an integer, got ${query.toolCallId}`,
      )
    where.push('c.call_token = (SELECT m.call_token FROM agentfs_tool_call_meta m WHERE m.id = ?)')
    params.push(query.toolCallId)
  }
  if (query.callToken !== undefined) {
    if (typeof query.callToken !== 'string' || query.callToken === '')
      throw new AgentFsError('INVALID_ARGUMENT', 'callToken must be a non-empty string')
    where.push('c.call_token = ?')
    params.push(query.callToken)
  }
  if (query.store === 'kv') where.push("c.op LIKE 'kv-%'")
  if (query.store === 'fs') where.push("c.op NOT LIKE 'kv-%'")
  if (query.exceptSession !== undefined) {
    where.push('c.session_id IS NOT ?')
    params.push(query.exceptSession)
  }
  if (query.since !== undefined) {
    const ms = query.since instanceof Date ? query.since.getTime() : query.since
    if (!Number.isFinite(ms))
      throw new AgentFsError('INVALID_ARGUMENT', `since must be a time, got ${String(query.since)}`)
    where.push('c.at_us >= ?')
    params.push(Math.floor(ms * 1000))
  }
  params.push(limit + 1)
  const { rows } = await q.execute<ChangeRow>({
    sql: `SELECT c.seq, c.at_us, c.op, c.path, c.path2, c.ino, c.version, c.size, c.session_id, c.call_token, c.hash, c.prev_hash, c.txid, c.message,
  (SELECT m.id FROM agentfs_tool_call_meta m WHERE m.call_token = c.call_token) AS tool_call_id
FROM agentfs_change c WHERE ${viaSubqueries(where.join(' AND '))} ORDER BY c.seq${reverse ? ' DESC' : ''} LIMIT (SELECT ?)`,
    params,
  })
  const more = rows.length > limit
  const page = more ? rows.slice(0, limit) : rows
  const changes = page.map(
    (r): Change => ({
      seq: r.seq,
      atUs: r.at_us,
      op: r.op,
      path: r.path,
      path2: r.path2,
      ino: r.ino,
      version: r.version,
      size: r.size,
      hash: hashText(r.hash),
      prevHash: hashText(r.prev_hash),
      sessionId: r.session_id,
      toolCallId: r.tool_call_id,
      callToken: r.call_token,
      message: r.message ?? null,
      txid: r.txid ?? r.seq,
    }),
  )
  return { changes, cursor: changes.at(-1)?.seq ?? cursor, more }
}

/** The newest sequence number in the feed (0 when it is empty). */
export async function lastChange(q: Queryable): Promise<number> {
  const { rows } = await q.execute<{ top: number | null }>({
    sql: 'SELECT max(seq) AS top FROM agentfs_change',
  })
  return rows[0]?.top ?? 0
}

/** Options of {@link followChanges}. */
export interface FollowOptions extends ChangeQuery {
  /** Start after this sequence number (default: the newest now, so only new changes). */
  readonly cursor?: number
  /** Stops the iteration. */
  readonly signal?: AbortSignal
  /** How often to look for new rows (default 50 ms): one primary-key probe, never a scan. */
  readonly intervalMs?: number
}

/**
 * Every change after the cursor, then each new one as it commits — from this process or any
 * other writing the same database file — until `signal` aborts. Waits by probing the newest
 * sequence number (an index lookup); reads rows only when it moved.
 */
export async function* followChanges(
  q: Queryable,
  options: FollowOptions = {},
): AsyncGenerator<Change, void, undefined> {
  const { signal } = options
  const interval = options.intervalMs ?? 50
  if (!(interval >= 1 && interval <= 60_000))
    throw new AgentFsError('INVALID_ARGUMENT', `intervalMs must be 1 … 60000, got ${interval}`)
  let cursor = options.cursor ?? (await lastChange(q))
  while (!signal?.aborted) {
    // Rows commit in sequence order, so everything up to `top` is visible to the read below.
    const top = await lastChange(q)
    const page = await readChanges(q, cursor, options)
    for (const change of page.changes) {
      if (signal?.aborted) return
      yield change
    }
    if (page.more) {
      cursor = page.cursor
      continue
    }
    // Rows up to `top` that did not match are skipped for good; wait for the sequence to move.
    cursor = Math.max(page.cursor, top)
    while ((await lastChange(q)) <= cursor) {
      if (signal?.aborted) return
      await sleep(interval, signal)
    }
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}
