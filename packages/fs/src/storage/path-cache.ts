import {
  type Executor,
  ROOT_INO,
  SNAPSHOT_COLUMNS,
  type SnapshotSource,
  type SnapshotToken,
  type Statement,
  sameSnapshot,
  snapshotSource,
  tokenOf,
} from '@agentfs/core'
import { type InodeRow, inodeOf } from './inode.js'

/** Directories remembered per connection; the oldest go first beyond this. */
const MAX_DIRECTORIES = 4096

/** {@link INODE_COLUMNS} of `i`, in order (the rows are arrays: see {@link inodeOf}). */
const ENTRY_COLUMNS =
  'i.ino AS ino, i.mode AS mode, i.nlink AS nlink, i.uid AS uid, i.gid AS gid, i.size AS size, ' +
  'i.atime AS atime, i.mtime AS mtime, i.ctime AS ctime, i.rdev AS rdev, ' +
  'i.atime_nsec AS atime_nsec, i.mtime_nsec AS mtime_nsec, i.ctime_nsec AS ctime_nsec'

/**
 * One name in one directory, stamped: a row even when the name is missing (its inode columns
 * are then NULL), so a miss is as trustworthy as a hit. The directory and name come in through
 * the one-row start (ARCHITECTURE.md, "Statement shapes").
 */
const ENTRY_SQL = stampedSql(
  `SELECT ${ENTRY_COLUMNS}`,
  'FROM (SELECT ? AS dir, ? AS name) s LEFT JOIN fs_dentry d ON d.parent_ino = s.dir AND d.name = s.name ' +
    'LEFT JOIN fs_inode i ON i.ino = d.ino',
)

/** `name` in the directory `dirIno`, stamped: see {@link PathCache.entryOf}. */
export function entryStatement(dirIno: number, name: string): Statement {
  return { sql: ENTRY_SQL, params: [dirIno, name], arrays: true, first: true }
}

/**
 * `select` (a select list) with {@link SNAPSHOT_COLUMNS} appended, then `from`: a statement
 * for {@link PathCache.stamped}. Build it once (a constant): the driver's statement cache then
 * finds it by a string whose hash is already known.
 */
export function stampedSql(select: string, from: string): string {
  return `${select}, ${SNAPSHOT_COLUMNS} ${from}`
}

/**
 * The directories a connection's paths went through, by path: the kernel's dentry cache for a
 * database. Every answer is checked in the statement that uses it: the statement stamps its row
 * with the connection's snapshot ({@link SNAPSHOT_COLUMNS}) and the stamp must equal the one
 * the directories were read under, and the guarded handle's generation must not have moved
 * while it ran. Any change — a commit by another connection or process, a row changed on this
 * one, a transaction begun or ended — empties the cache, so an answer from it is exactly what
 * resolving the path afresh would give.
 */
export class PathCache {
  #token: SnapshotToken | undefined
  readonly #dirs = new Map<string, number>()

  constructor(readonly source: SnapshotSource) {}

  /**
   * The directory at `key` (names joined by `/`; `''` is the root) while the cache holds:
   * undefined once the connection's generation moved (a change of its own, a transaction), so
   * that a lookup then resolves the path afresh without first running a statement bound to fail.
   */
  dir(key: string): number | undefined {
    if (this.#token?.generation !== this.source.generation) {
      this.clear()
      return undefined
    }
    return key === '' ? ROOT_INO : this.#dirs.get(key)
  }

  /**
   * The entry a row of {@link entryStatement}, run on {@link source} while the generation was
   * `before`, found in a directory the cache holds: the inode, or null when the directory has
   * no such name; undefined when the database moved since (the cache is then emptied). The
   * caller awaits the statement itself: one promise fewer on the hottest path.
   */
  entryOf(row: readonly unknown[], before: number): InodeRow | null | undefined {
    if (!this.#holds(row, before)) return undefined
    return row[0] === null ? null : inodeOf(row)
  }

  /**
   * Runs `sql` (built by {@link stampedSql}) and returns its first row, as an array of the
   * select list's values (`Statement.arrays`), if the cache still held while it ran; undefined
   * (the cache emptied) otherwise.
   */
  async stamped(
    sql: string,
    params: readonly (number | string)[],
  ): Promise<readonly unknown[] | undefined> {
    const before = this.source.generation
    const { rows } = await this.source.execute<unknown[]>({
      sql,
      params,
      arrays: true,
      first: true,
    })
    const row = rows[0]!
    return this.#holds(row, before) ? row : undefined
  }

  /**
   * {@link stamped} run at once on a free connection (`executeNow`): the row if the cache still
   * held, undefined (the cache emptied) if not, null when the statement could not run now (it
   * did not run; use {@link stamped}).
   */
  stampedNow(
    sql: string,
    params: readonly (number | string)[],
  ): readonly unknown[] | undefined | null {
    const before = this.source.generation
    const result = this.source.executeNow?.<unknown[]>({ sql, params, arrays: true, first: true })
    if (result === undefined) return null
    const row = result.rows[0]!
    return this.#holds(row, before) ? row : undefined
  }

  /** Whether the cache held while the stamped `row` was read (emptied when not). */
  #holds(row: readonly unknown[], before: number): boolean {
    if (this.source.generation === before && sameSnapshot(this.#token, tokenOf(row, before)))
      return true
    this.clear()
    return false
  }

  /**
   * Remembers the directory `ino` at `key`, read under `token` (the token of the cache when
   * omitted: an answer {@link entry} just checked). A token other than the cache's replaces it
   * and forgets everything read under the old one.
   */
  remember(key: string, ino: number, token: SnapshotToken | undefined = this.#token): void {
    if (token === undefined || this.source.generation !== token.generation) return
    if (!sameSnapshot(this.#token, token)) {
      this.#dirs.clear()
      this.#token = token
    }
    if (key === '') return
    if (this.#dirs.size >= MAX_DIRECTORIES && !this.#dirs.has(key))
      this.#dirs.delete(this.#dirs.keys().next().value!)
    this.#dirs.set(key, ino)
  }

  clear(): void {
    this.#dirs.clear()
    this.#token = undefined
  }

  /**
   * Lends the cache to `tx`, a transaction this filesystem just began on {@link source} (its
   * callback runs; the generation moved once, for the begin), and returns the transaction's
   * generation. When nothing else moved the generation since the cache's token was read, the
   * token is carried to the transaction's generation, so that lookups in `tx` take the
   * remembered directories, each checked by its stamped statement as outside (the first row the
   * transaction changes moves `total_changes()`, and the cache empties); otherwise the cache
   * empties first. Either way what `tx` resolves is remembered under its own stamps until
   * {@link endLoan}.
   */
  lend(tx: Executor): number {
    const generation = this.source.generation
    if (this.#token?.generation === generation - 1) this.#token = { ...this.#token, generation }
    else this.clear()
    lent.set(tx, this)
    return generation
  }

  /**
   * Ends the loan of a transaction lent at `generation` ({@link lend}), committed or not.
   * `kept`: the transaction committed, moved and removed no directory (every change made only
   * files and new names), and read `kept` after its last change — so a path resolved before it
   * or in it still leads where it did, and the cache takes that token at the generation the
   * transaction's end moved to. Otherwise, or when anything else ran on the connection since,
   * what was read under the loan is forgotten (a handle whose generation does not move at a
   * transaction's end, such as a group's, would otherwise still offer it).
   */
  endLoan(generation: number, kept: SnapshotToken | undefined): void {
    if (this.#token?.generation !== generation) return
    if (kept !== undefined && this.source.generation === generation + 1)
      this.#token = { dv: kept.dv, tc: kept.tc, generation: generation + 1 }
    else this.clear()
  }
}

/** The cache key of the first `n` names of a path (all of them by default). */
export function keyOf(parts: readonly string[], n = parts.length): string {
  return n === parts.length ? parts.join('/') : parts.slice(0, n).join('/')
}

const caches = new WeakMap<SnapshotSource, PathCache>()
/** Caches lent to the transactions their filesystem runs ({@link PathCache.lend}). */
const lent = new WeakMap<Executor, PathCache>()

/**
 * The path cache of `q`'s connection, when `q` is a top-level handle that can keep one, or a
 * transaction it was lent to (`lent`: the resolver's lookups, which run their statements on `q`).
 */
export function pathCacheOf(q: Executor, lending = false): PathCache | undefined {
  const source = snapshotSource(q)
  if (!source) return lending ? lent.get(q) : undefined
  let cache = caches.get(source)
  if (!cache) {
    cache = new PathCache(source)
    caches.set(source, cache)
  }
  return cache
}
