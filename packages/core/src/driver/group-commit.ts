import { AgentFsError, isAgentFsError } from '../errors.js'
import type { AgentDatabase } from '../schema/database.js'
import type { QueryResult, SqlValue, Statement } from './driver.js'
import type { Transaction } from './guard-driver.js'
import { Mutex } from './mutex.js'
import { beginUnit } from './transaction-unit.js'

/** Options of {@link groupCommits}. */
export interface GroupCommitOptions {
  /**
   * The longest a change waits for its commit, in milliseconds (default 20, at most 1000). Other
   * connections see a change, and a crash can lose it, only within this window; `flush()`
   * commits at once.
   */
  readonly maxDelayMs?: number
  /** The most changes one commit carries (default 1000). */
  readonly maxChanges?: number
  /**
   * Called when a commit fails (disk full, I/O error): the `changes` it carried, which had
   * already succeeded for their callers, are not in the database. `flush()` rejects with the
   * same error once.
   */
  readonly onLost?: (error: unknown, changes: number) => void
}

/** A database whose changes are committed in groups (see {@link groupCommits}). */
export interface GroupedDatabase extends AgentDatabase {
  /**
   * Commits the open group now and waits for it. Rejects with the error of a group lost since
   * the last `flush()` (once): a caller that must know its changes are stored (fsync) calls it.
   */
  flush(): Promise<void>
}

/** One write transaction that carries the changes of many calls. */
interface Group {
  /** Serialises the group's calls; held until the transaction has begun. */
  readonly lock: Mutex
  /** The transaction, once begun. */
  tx: Transaction | undefined
  /** False once the group takes no more calls (its time or size is up, or it was flushed). */
  accepting: boolean
  /** True once calls queued here must go to a later group (this one is ending early). */
  over: boolean
  /** Why the transaction could not begin: every call queued here fails with it. */
  failure: unknown
  /** Calls that changed something and returned to their callers. */
  acknowledged: number
  /** Changes taken, for `maxChanges`. */
  taken: number
  timer: ReturnType<typeof setTimeout> | undefined
  /** True when its time or size ran out (calls kept coming): the next group waits its turn. */
  full: boolean
  /** Lets the transaction commit. */
  finish(): void
  /** Makes the transaction roll back. */
  abort(error: unknown): void
}

/** A top-level statement that cannot change the database or the transaction state. */
const PLAIN_SELECT = /^\s*SELECT\s/i

/** What a call queued in a group that ended early answers: run me in the next group. */
const LATER: unique symbol = Symbol('later')

/** A call's savepoint could not be ended: the group's transaction is gone or unusable. */
class BrokenGroup extends Error {
  constructor(readonly error: unknown) {
    super('the group transaction ended under a call')
  }
}

/**
 * How long the write lock stays free after a group that ran out of time or room, before the next
 * group begins: other connections' writers, retrying with backoff, get their turn even while
 * changes keep coming (without it, the lock would be free only for the moment between a COMMIT
 * and the next BEGIN).
 */
const YIELD_MS = 1

/** Engine failures after which SQLite may have rolled back the whole transaction itself. */
const ENDS_TRANSACTION = new Set(['IO', 'FULL', 'BUSY', 'CORRUPT', 'INTERRUPTED', 'MISUSE'])

/**
 * Commits a single-connection database's changes in groups. Each `transaction()` still runs
 * atomically, with every check it makes, inside a savepoint of its own: it either happens
 * whole or not at all, and a failed one leaves the others untouched. What is grouped is the
 * COMMIT: the savepoints of calls that arrive within `maxDelayMs` of each other share one write
 * transaction, so a run of small changes (a file tree copied through a mount) writes each
 * touched page once per group instead of once per change.
 *
 * The price is durability and visibility, and it is bounded: a call returns before its group
 * commits, so other connections see its change, and a crash can lose it, up to `maxDelayMs`
 * later — as with a kernel's page cache, where `fsync` is the point of no return. Here that is
 * {@link GroupedDatabase.flush}. A crash never leaves part of a change: whole changes commit in
 * the order they were made, or none of a group's do. While a group is open this connection holds
 * the write lock; other connections' writers wait for it (their busy timeout), and after a group
 * that ran out of time or room the lock stays free for a moment ({@link YIELD_MS}) so that they
 * get their turn while changes keep coming.
 *
 * Statements and transactions on the returned handle are queued and run one at a time, in call
 * order. Calls made on the original handle instead wait for the open group to commit. Drivers
 * with concurrent transactions (remote servers) are returned unchanged apart from `flush()`.
 */
export function groupCommits(db: AgentDatabase, options: GroupCommitOptions = {}): GroupedDatabase {
  const maxDelay = options.maxDelayMs ?? 20
  const maxChanges = options.maxChanges ?? 1000
  if (!(Number.isFinite(maxDelay) && maxDelay >= 0 && maxDelay <= 1000))
    throw new AgentFsError('INVALID_ARGUMENT', `maxDelayMs must be 0 … 1000, got ${maxDelay}`)
  if (!(Number.isInteger(maxChanges) && maxChanges >= 1))
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `maxChanges must be a positive integer, got ${maxChanges}`,
    )
  const grouping = maxDelay > 0 && !db.driver.capabilities.concurrentTransactions

  /** The group taking calls, if any. */
  let current: Group | undefined
  /** Settles when every group started so far has ended. */
  let allEnded: Promise<void> = Promise.resolve()
  /** Settles when the last group started has ended: true when the next one should yield first. */
  let lastEnded: Promise<boolean> = Promise.resolve(false)
  /** A lost group's error, for the next flush. */
  let lost: unknown
  /**
   * Moves when a group or a call is rolled back, and when a call that may change something (a
   * transaction, a statement other than a plain SELECT) is made, before it runs (see
   * `GuardedDriver.generation`: caches compare it, and know without a statement that a change
   * of this connection may have made them stale).
   */
  let moves = 0
  let closing: Promise<void> | undefined

  /**
   * Takes no more calls into `group`; it commits once the calls it took have run. `full`: its
   * time or size ran out, rather than being flushed or ended early.
   */
  const closeGroup = (group: Group, full = false) => {
    if (!group.accepting) return
    group.accepting = false
    group.full = full
    if (current === group) current = undefined
    clearTimeout(group.timer)
    void group.lock.run(async () => {}).then(() => group.finish())
  }

  function startGroup(): Group {
    let finish!: () => void
    let abort!: (error: unknown) => void
    const done = new Promise<void>((resolve, reject) => {
      finish = resolve
      abort = reject
    })
    const group: Group = {
      lock: new Mutex(),
      tx: undefined,
      accepting: true,
      over: false,
      failure: undefined,
      acknowledged: 0,
      taken: 0,
      timer: undefined,
      full: false,
      finish,
      abort,
    }
    group.lock.tryLock()
    current = group
    group.timer = setTimeout(() => closeGroup(group, true), maxDelay)
    const ended = lastEnded
      .then((yieldFirst) =>
        yieldFirst ? new Promise((resolve) => setTimeout(resolve, YIELD_MS)) : undefined,
      )
      .then(() =>
        db.transaction(async (tx) => {
          group.tx = tx
          group.lock.unlock()
          await done
        }),
      )
      .then(
        () => undefined,
        (error: unknown) => {
          closeGroup(group)
          moves++
          if (group.tx === undefined) {
            // BEGIN failed (another connection kept the write lock): the calls queued here fail.
            group.failure = error
            group.lock.unlock()
            return
          }
          const cause = error instanceof BrokenGroup ? error.error : error
          if (group.acknowledged === 0) return
          lost = new AgentFsError(
            isAgentFsError(cause) ? cause.code : 'IO',
            `${group.acknowledged} change(s) that had already succeeded were not committed: ${cause instanceof Error ? cause.message : String(cause)}`,
            { cause },
          )
          options.onLost?.(cause, group.acknowledged)
        },
      )
    lastEnded = ended.then(() => group.full)
    allEnded = Promise.all([allEnded, ended]).then(() => undefined)
    return group
  }

  /** Ends `group` early: calls still queued in it go to the next group. */
  const endEarly = (group: Group, broken?: unknown) => {
    group.over = true
    closeGroup(group)
    if (broken !== undefined) group.abort(new BrokenGroup(broken))
  }

  /** Runs `fn` in its turn in the open group (or a new one), in a savepoint unless `read`. */
  function inGroup<T>(fn: (tx: Transaction) => Promise<T>, read: boolean): Promise<T> {
    let group = current
    if (group === undefined || !group.accepting) group = startGroup()
    const taken = group
    const pending = taken.lock.run(async (): Promise<T | typeof LATER> => {
      if (taken.failure !== undefined) throw taken.failure
      // Queued in a group that ended early: it runs in the next one (outside this group's
      // lock, which the group's COMMIT waits for).
      if (taken.over) return LATER
      const tx = taken.tx!
      if (read) {
        try {
          return await fn(tx)
        } catch (error) {
          // SQLite may have ended the transaction under it: COMMIT says whether it survived.
          if (isAgentFsError(error) && ENDS_TRANSACTION.has(error.code)) endEarly(taken)
          throw error
        }
      }
      let failed = false
      let failure: unknown
      try {
        const result = await tx.transaction(async (savepoint) => {
          // Each call is a transaction of its own to its caller (and to the change feed).
          beginUnit(savepoint)
          try {
            return await fn(savepoint)
          } catch (error) {
            failed = true
            failure = error
            throw error
          }
        })
        taken.acknowledged++
        return result
      } catch (error) {
        moves++
        // The call's own error, its savepoint rolled back: the group goes on. Anything else
        // means the savepoint could not be ended (SQLite rolled the whole transaction back).
        if (!(failed && error === failure)) endEarly(taken, error)
        throw error
      }
    })
    if (!read && ++taken.taken >= maxChanges) closeGroup(taken, true)
    return pending.then((result) => (result === LATER ? inGroup(fn, read) : result))
  }

  const closedError = () =>
    new AgentFsError('CLOSED', 'The database is closed; open a new one to continue')

  const flush = async (): Promise<void> => {
    if (current) closeGroup(current)
    await allEnded
    if (lost !== undefined) {
      const error = lost
      lost = undefined
      throw error
    }
  }

  return {
    driver: db.driver,
    clock: db.clock,
    ids: db.ids,
    chunkSize: db.chunkSize,
    chunks: db.chunks,
    referenceToolCalls: db.referenceToolCalls,
    migration: db.migration,
    inTransaction: false,
    get capabilities() {
      return db.driver.capabilities
    },
    get generation() {
      return db.generation + moves
    },
    execute<Row = Record<string, SqlValue>>(statement: Statement): Promise<QueryResult<Row>> {
      if (closing) return Promise.reject(closedError())
      const read = PLAIN_SELECT.test(statement.sql)
      // Outside a group a statement runs as it would without grouping (a read takes no lock).
      if (!grouping || (read && current === undefined)) return db.execute<Row>(statement)
      if (!read) moves++
      return inGroup((tx) => tx.execute<Row>(statement), read)
    },
    transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
      if (closing) return Promise.reject(closedError())
      if (!grouping) return db.transaction(fn)
      moves++
      return inGroup(fn, false)
    },
    flush,
    close() {
      closing ??= flush().then(
        () => db.close(),
        async (error: unknown) => {
          await db.close()
          throw error
        },
      )
      return closing
    },
  }
}
