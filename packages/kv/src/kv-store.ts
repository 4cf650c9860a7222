import {
  type AgentDatabase,
  AgentFsError,
  appendChange,
  applyOnce,
  type ChangeOp,
  type Clock,
  changeStatement,
  executeDeferred,
  executeThen,
  type FeedOptions,
  hasLoneSurrogate,
  micros,
  type Queryable,
  type QueryResult,
  runInOrder,
  STORE_DATABASE,
  type Statement,
  type Timestamp,
  viaSubqueries,
} from '@agentfs/core'
import { KvConflictError } from './conflict.js'
import { prefixConditions } from './key-range.js'
import { deserialize, serialize } from './serialize.js'

/** One stored entry. */
export interface KvEntry<T = unknown> {
  readonly key: string
  readonly value: T
  /** Changes on every write of the key; pass it as `ifVersion` for compare-and-set. */
  readonly version: number
  /** `created_at`, seconds since the epoch (spec). */
  readonly createdAt: number
  /** `updated_at`, seconds since the epoch (spec). */
  readonly updatedAt: number
}

/** Options of `set` and `delete`. */
export interface WriteOptions {
  /** Write only if the key is at this version; `null` means "only if the key is absent". */
  readonly ifVersion?: number | null
  /**
   * Apply this write once: a retry with the same key and the same arguments returns the first
   * answer and changes nothing (even when `ifVersion` no longer matches); the same key with
   * other arguments is refused (`IDEMPOTENCY_MISMATCH`). 1 to 256 characters, e.g. a UUID.
   */
  readonly idempotencyKey?: string
  /** How long the key is remembered (default 48 hours). */
  readonly idempotencyTtlMs?: number
}

/** Options of `list`, `keys` and `entries`. */
export interface ListOptions {
  /** Only keys starting with this exact, case-sensitive string (`_` and `%` are literal). */
  readonly prefix?: string
  /** Entries per page (default 100, at most 10,000). */
  readonly limit?: number
  /** Continue after this key (the `cursor` of the previous page). */
  readonly cursor?: string
}

/** One page of `list`. */
export interface KvPage<T> {
  readonly entries: KvEntry<T>[]
  /** Pass back as `cursor` for the next page; undefined on the last page. */
  readonly cursor: string | undefined
}

interface EntryRow {
  key: string
  value: string
  created_at: number | null
  updated_at: number | null
  version: number | null
}

const MAX_PAGE = 10_000

/**
 * The current version of key `?`: NULL when absent, 0 when only another tool wrote it. The key
 * comes in through the one-row start, as in {@link ENTRY_SQL} (ARCHITECTURE.md, "Statement
 * shapes").
 */
const CURRENT_VERSION =
  'SELECT COALESCE(v.version, 0) AS version FROM (SELECT ? AS key) s JOIN kv_store k ON k.key = s.key LEFT JOIN agentfs_kv_version v ON v.key = k.key'

/** Moves a key's version row on (creating it at 1) and stamps the time of the write. */
const NEXT_VERSION =
  'INSERT INTO agentfs_kv_version (key, version, updated_us) VALUES (?, 1, ?) ON CONFLICT(key) DO UPDATE SET version = version + 1, updated_us = excluded.updated_us'
const nextVersionOf = (key: string, now: Timestamp): Statement => ({
  sql: NEXT_VERSION,
  params: [key, micros(now)],
})
function nextVersion(tx: Queryable, key: string, now: Timestamp): Promise<void> {
  return executeDeferred(tx, nextVersionOf(key, now))
}
const PUT_VALUE =
  'INSERT INTO kv_store (key, value, created_at, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at'
/** The version a write just gave its key (read back rather than returned: see `insertedRowid`). */
const WRITTEN_VERSION = 'SELECT version FROM agentfs_kv_version WHERE key = ?'
const versionRead = (result: QueryResult<number>): number => result.rows[0]!
/** The version a write's last statement read, now or later. */
const settled = (done: QueryResult<number> | Promise<QueryResult<number>>): Promise<number> =>
  done instanceof Promise ? done.then(versionRead) : Promise.resolve(versionRead(done))

async function currentVersion(q: Queryable, key: string): Promise<number | null> {
  const { rows } = await q.execute<{ version: number }>({ sql: CURRENT_VERSION, params: [key] })
  return rows[0]?.version ?? null
}

function checkKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0) {
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `A key must be a non-empty string, got ${JSON.stringify(key) ?? String(key)}`,
    )
  }
  if (key.includes('\0') || hasLoneSurrogate(key)) {
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `A key cannot hold a NUL character or a lone UTF-16 surrogate (SQLite would store a different key), got ${JSON.stringify(key)}`,
    )
  }
  return key
}

function checkVersion(version: unknown): number | null {
  if (version === null) return null
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0) {
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `ifVersion must be a non-negative integer or null, got ${String(version)}`,
    )
  }
  return version
}

const toEntry = <T>(row: EntryRow): KvEntry<T> => ({
  key: row.key,
  value: deserialize<T>(row.value),
  version: row.version ?? 0,
  createdAt: row.created_at ?? 0,
  updatedAt: row.updated_at ?? 0,
})

const VALUE_SQL = 'SELECT value FROM kv_store WHERE key = ?'
const ENTRY_SQL = `SELECT k.key AS key, k.value AS value, k.created_at AS created_at, k.updated_at AS updated_at, v.version AS version
FROM (SELECT ? AS key) s JOIN kv_store k ON k.key = s.key LEFT JOIN agentfs_kv_version v ON v.key = k.key`
const HAS_SQL = 'SELECT 1 FROM kv_store WHERE key = ?'

/**
 * The first row of `sql` for `key` (checked first: a bad key rejects), mapped by `then`, with one
 * promise when the statement runs at once (see `executeThen`); `pluck`: the row is its value.
 */
function byKey<Row, T>(
  q: Queryable,
  key: string,
  sql: string,
  pluck: boolean,
  then: (result: QueryResult<Row>) => T,
): Promise<T> {
  try {
    checkKey(key)
  } catch (error) {
    return Promise.reject(error)
  }
  return executeThen(q, { sql, params: [key], first: true, pluck }, then)
}

/** The value of a plucked `SELECT value`, if any. */
const storedValue = ({ rows }: QueryResult<string>): unknown =>
  rows.length === 0 ? undefined : deserialize(rows[0]!)
/** The entry of an {@link EntryRow}, if any. */
const entryOf = ({ rows }: QueryResult<EntryRow>): KvEntry<unknown> | undefined =>
  rows[0] === undefined ? undefined : toEntry(rows[0])
const found = ({ rows }: QueryResult<number>): boolean => rows.length > 0

/**
 * The spec's key-value store (`kv_store`): JSON values, case-sensitive ordered range scans,
 * and a version per key (extension table `agentfs_kv_version`). Every write is one transaction
 * that updates the value and its version together.
 */
export class KvStore {
  readonly #q: Queryable
  readonly #clock: Clock
  readonly #feed: { readonly sessionId?: string } | undefined

  /** @internal Use {@link createKvStore}. */
  constructor(q: Queryable, clock: Clock, feed?: { readonly sessionId?: string }) {
    this.#q = q
    this.#clock = clock
    this.#feed = feed
  }

  /** The database this store runs on (see `databaseOf` of `@agentfs/core`). */
  get [STORE_DATABASE](): Queryable {
    return this.#q
  }

  /** This store running its statements on `q` (e.g. a transaction shared with the filesystem). */
  bind(q: Queryable): KvStore {
    return new KvStore(q, this.#clock, this.#feed)
  }

  /** Runs `fn` with a store bound to one transaction (with the filesystem's, via the SDK). */
  transaction<T>(fn: (kv: KvStore) => Promise<T>): Promise<T> {
    return this.#q.transaction((tx) => fn(new KvStore(tx, this.#clock, this.#feed)))
  }

  /** Runs a keyed write once (see `WriteOptions.idempotencyKey`); a retry gets the first answer. */
  async #once<T>(
    scope: string,
    args: Record<string, unknown>,
    options: WriteOptions,
    write: (kv: KvStore) => Promise<T>,
  ): Promise<unknown> {
    const once = await applyOnce(
      this.#q,
      {
        scope,
        key: options.idempotencyKey as string,
        args,
        nowUs: () => micros(this.#clock.now()),
        ...(options.idempotencyTtlMs === undefined ? {} : { ttlMs: options.idempotencyTtlMs }),
      },
      (tx) => write(this.bind(tx)),
    )
    return once.value
  }

  async #note(tx: Queryable, op: ChangeOp, key: string, now: Timestamp): Promise<void> {
    if (this.#feed) await appendChange(tx, { op, path: key }, now, this.#feed.sessionId)
  }

  /**
   * Stores a JSON value and returns the key's new version. With `ifVersion`, writes only if the
   * key is at that version (`null`: only if absent) and otherwise throws {@link KvConflictError}.
   */
  async set(key: string, value: unknown, options: WriteOptions = {}): Promise<number> {
    checkKey(key)
    const text = serialize(value)
    const expected = options.ifVersion === undefined ? undefined : checkVersion(options.ifVersion)
    if (options.idempotencyKey !== undefined)
      return this.#once('kv:set', { key, value: text, ifVersion: expected }, options, (kv) =>
        kv.set(key, value, expected === undefined ? {} : { ifVersion: expected }),
      ) as Promise<number>
    const now = this.#clock.now()
    const { sec } = now
    return this.#q.transaction((tx) => {
      if (expected !== undefined) return this.#setIf(tx, key, text, now, expected)
      // The version row first, then the value: a synced database replays them in this order,
      // and the value's replay compares the time the version row carries.
      const version = nextVersionOf(key, now)
      const value: Statement = { sql: PUT_VALUE, params: [key, text, sec, sec] }
      const read: Statement = { sql: WRITTEN_VERSION, params: [key], pluck: true, first: true }
      const feed = this.#feed
        ? changeStatement(tx, { op: 'kv-set', path: key }, now, this.#feed.sessionId)
        : undefined
      if (feed instanceof Promise)
        return feed.then((row) => settled(runInOrder<number>(tx, [version, value, row, read])))
      const done = runInOrder<number>(
        tx,
        feed === undefined ? [version, value, read] : [version, value, feed, read],
      )
      return settled(done)
    })
  }

  /** `set` with `ifVersion`: the key's version compared inside the write transaction. */
  async #setIf(
    tx: Queryable,
    key: string,
    text: string,
    now: Timestamp,
    expected: number | null,
  ): Promise<number> {
    const current = await currentVersion(tx, key)
    if (current !== expected) throw new KvConflictError(key, expected, current)
    await nextVersion(tx, key, now)
    await executeDeferred(tx, { sql: PUT_VALUE, params: [key, text, now.sec, now.sec] })
    await this.#note(tx, 'kv-set', key, now)
    const { rows } = await tx.execute<number>({
      sql: WRITTEN_VERSION,
      params: [key],
      pluck: true,
      first: true,
    })
    return rows[0]!
  }

  /** The value at `key`, or undefined. */
  get<T = unknown>(key: string): Promise<T | undefined> {
    return byKey(this.#q, key, VALUE_SQL, true, storedValue) as Promise<T | undefined>
  }

  /** The entry at `key` with its version and timestamps, or undefined. */
  getEntry<T = unknown>(key: string): Promise<KvEntry<T> | undefined> {
    return byKey(this.#q, key, ENTRY_SQL, false, entryOf) as Promise<KvEntry<T> | undefined>
  }

  /** The key's version, or null when absent (0: written only by another tool so far). */
  async version(key: string): Promise<number | null> {
    return currentVersion(this.#q, checkKey(key))
  }

  has(key: string): Promise<boolean> {
    return byKey(this.#q, key, HAS_SQL, true, found)
  }

  /** Deletes a key; true if it existed. With `ifVersion`, only at that version (else KvConflictError). */
  async delete(key: string, options: WriteOptions = {}): Promise<boolean> {
    checkKey(key)
    const expected = options.ifVersion === undefined ? undefined : checkVersion(options.ifVersion)
    if (options.idempotencyKey !== undefined)
      return this.#once('kv:delete', { key, ifVersion: expected }, options, (kv) =>
        kv.delete(key, expected === undefined ? {} : { ifVersion: expected }),
      ) as Promise<boolean>
    return this.#q.transaction(async (tx) => {
      const current = await currentVersion(tx, key)
      if (expected !== undefined && current !== expected)
        throw new KvConflictError(key, expected, current)
      if (current === null) return false
      // The version row stays as a tombstone and moves on, so stale ifVersion writes fail. It
      // goes first: a synced database replays the delete only if no later write of the key
      // reached the server (the version row carries the time).
      const now = this.#clock.now()
      await nextVersion(tx, key, now)
      await executeDeferred(tx, { sql: 'DELETE FROM kv_store WHERE key = ?', params: [key] })
      await this.#note(tx, 'kv-delete', key, now)
      return true
    })
  }

  #range(
    options: ListOptions,
    columns: string,
  ): { sql: string; params: Array<string | number | Uint8Array> } {
    const range = prefixConditions('k.key', options.prefix ?? '')
    const where = range.where
    const params: Array<string | number | Uint8Array> = range.params
    if (options.cursor !== undefined) {
      where.push('k.key > ?')
      params.push(options.cursor)
    }
    const limit = options.limit ?? 100
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE) {
      throw new AgentFsError(
        'INVALID_ARGUMENT',
        `limit must be an integer from 1 to ${MAX_PAGE}, got ${limit}`,
      )
    }
    params.push(limit + 1)
    return {
      sql: `SELECT ${columns} FROM kv_store k LEFT JOIN agentfs_kv_version v ON v.key = k.key
${where.length ? `WHERE ${viaSubqueries(where.join(' AND '))}` : ''} ORDER BY k.key LIMIT (SELECT ?)`,
      params,
    }
  }

  /** A page of entries in key order (a range scan on the primary key, never LIKE). */
  async list<T = unknown>(options: ListOptions = {}): Promise<KvPage<T>> {
    const limit = options.limit ?? 100
    const query = this.#range(
      options,
      'k.key AS key, k.value AS value, k.created_at AS created_at, k.updated_at AS updated_at, v.version AS version',
    )
    const { rows } = await this.#q.execute<EntryRow>(query)
    const more = rows.length > limit
    const entries = rows.slice(0, limit).map((row) => toEntry<T>(row))
    return { entries, cursor: more ? entries.at(-1)?.key : undefined }
  }

  /** A page of keys in order. */
  async keys(options: ListOptions = {}): Promise<string[]> {
    const limit = options.limit ?? 100
    const { rows } = await this.#q.execute<{ key: string }>(this.#range(options, 'k.key AS key'))
    return rows.slice(0, limit).map((row) => row.key)
  }

  /** Iterates every entry (optionally under a prefix), a page at a time. */
  async *entries<T = unknown>(
    options: Omit<ListOptions, 'cursor'> = {},
  ): AsyncIterableIterator<KvEntry<T>> {
    let cursor: string | undefined
    do {
      const page: KvPage<T> = await this.list<T>({
        ...options,
        ...(cursor === undefined ? {} : { cursor }),
      })
      yield* page.entries
      cursor = page.cursor
    } while (cursor !== undefined)
  }

  /** Deletes every key under `prefix` (every key when omitted); returns how many. */
  async clear(prefix = ''): Promise<number> {
    const { where, params } = prefixConditions('key', prefix)
    return this.#q.transaction(async (tx) => {
      const result = await tx.execute({
        sql: `DELETE FROM kv_store${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`,
        params,
      })
      if (result.changes > 0) await this.#note(tx, 'kv-clear', prefix, this.#clock.now())
      return result.changes
    })
  }

  /**
   * Read-modify-write in one transaction: `fn` gets the current value (undefined when absent)
   * and returns the new one. Concurrent updates of the same key are serialised, never lost.
   */
  async update<T>(
    key: string,
    fn: (current: T | undefined) => T | Promise<T>,
  ): Promise<{ value: T; version: number }> {
    checkKey(key)
    return this.#q.transaction(async (tx) => {
      const store = new KvStore(tx, this.#clock, this.#feed)
      const current = await store.get<T>(key)
      const value = await fn(current)
      return { value, version: await store.set(key, value) }
    })
  }
}

/**
 * Creates the key-value store over an open AgentFS database.
 *
 * @example
 * const kv = createKvStore(await openDatabase({ driver }))
 * await kv.set('user:prefs', { theme: 'dark' })
 */
export function createKvStore(db: AgentDatabase, options: { feed?: FeedOptions } = {}): KvStore {
  const feed = options.feed
  if (feed?.enabled === false) return new KvStore(db, db.clock)
  return new KvStore(
    db,
    db.clock,
    feed?.sessionId === undefined ? {} : { sessionId: feed.sessionId },
  )
}
