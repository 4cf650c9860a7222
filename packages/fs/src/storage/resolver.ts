import {
  type Executor,
  fsError,
  type ParsedPath,
  type PathSteps,
  parsePath,
  type ResolveOptions,
  ROOT_INO,
  resolvePath,
  SNAPSHOT_COLUMNS,
  type SnapshotToken,
  sameSnapshot,
  tokenOf,
} from '@agentfs/core'
import { INODE_BY_INO, INODE_COLUMNS, type InodeRow, inodeOf, isDir, isLnk } from './inode.js'
import { entryStatement, keyOf, type PathCache, pathCacheOf } from './path-cache.js'

/**
 * Components resolved by one chain of joins (2 tables each, within SQLite's 64); longer runs
 * take one chain per 16 names. Measured on a 33-component path: chains of 16 take 34 µs, of 8
 * 38 µs, a recursive CTE walking the names 47 µs (it re-splits the rest at every level).
 */
export const CHAIN_MAX = 16
const COLUMNS = INODE_COLUMNS.split(', ')
const chainCache = new Map<number, string>()

/**
 * `n` levels as LEFT JOINs on the (parent_ino, name) index, in one row: a level is only joined
 * below a directory, so a file or symlink in the middle stops the chain. Only the deepest level
 * found is returned (COALESCE from the deepest level up), with how deep it is and its parent,
 * so the row stays small.
 */
export function chainSql(n: number, stamped = false): string {
  const key = stamped ? -n : n
  let sql = chainCache.get(key)
  if (sql) return sql
  const joins: string[] = []
  for (let k = 1; k <= n; k++) {
    const parent = k === 1 ? 's.start' : `i${k - 1}.ino`
    const isDir = k === 1 ? '1' : `(i${k - 1}.mode & 61440) = 16384`
    joins.push(
      `LEFT JOIN fs_dentry d${k} ON d${k}.parent_ino = ${parent} AND d${k}.name = s.n${k} AND ${isDir}`,
    )
    joins.push(`LEFT JOIN fs_inode i${k} ON i${k}.ino = d${k}.ino`)
  }
  const deepestFirst = Array.from({ length: n }, (_, i) => n - i)
  const coalesce = (terms: string[]) =>
    terms.length === 1 ? terms[0]! : `COALESCE(${terms.join(', ')})`
  const select = COLUMNS.map((c) => `${coalesce(deepestFirst.map((k) => `i${k}.${c}`))} AS ${c}`)
  select.push(`(${deepestFirst.map((k) => `(i${k}.ino IS NOT NULL)`).join(' + ')}) AS depth`)
  const parents = deepestFirst
    .filter((k) => k > 1)
    .map((k) => `CASE WHEN i${k}.ino IS NOT NULL THEN i${k - 1}.ino END`)
  select.push(`${coalesce([...parents, 's.start'])} AS parent`)
  if (stamped) select.push(SNAPSHOT_COLUMNS)
  // The parameters come in through the one-row start, never as a join's terms (see
  // ARCHITECTURE.md, "Statement shapes": SQLite 3.54 would prepare the statement again on
  // every run under better-sqlite3).
  const names = Array.from({ length: n }, (_, i) => `, ? AS n${i + 1}`).join('')
  sql = `SELECT ${select.join(', ')} FROM (SELECT ? AS start${names}) s ${joins.join(' ')}`
  chainCache.set(key, sql)
  return sql
}

/** Where `depth` is in a chain's array row: after the inode's columns. */
export const HEAD_DEPTH = COLUMNS.length

async function walk(
  q: Executor,
  start: number,
  segment: readonly string[],
  stamps: Stamps | undefined,
): Promise<WalkRow> {
  if (segment.length <= CHAIN_MAX) return chain(q, start, segment, stamps)
  // Chains of CHAIN_MAX names, each from where the last one ended. Every round consumes at
  // least one name or stops, so it ends within the segment's length.
  let dir = start
  let consumed = 0
  let deepest: WalkRow | undefined
  while (consumed < segment.length) {
    const piece = segment.slice(consumed, consumed + CHAIN_MAX)
    const row = await chain(q, dir, piece, stamps)
    if (row.depth === 0) return deepest ?? row
    consumed += row.depth
    deepest = { ...row, depth: consumed }
    if (row.depth < piece.length || !isDir(row.mode)) break
    dir = row.ino
  }
  return deepest!
}

async function chain(
  q: Executor,
  start: number,
  names: readonly string[],
  stamps: Stamps | undefined,
): Promise<WalkRow> {
  const { rows } = await q.execute<unknown[]>({
    sql: chainSql(names.length, stamps !== undefined),
    params: [start, ...names],
    arrays: true,
    first: true,
  })
  const row = rows[0]!
  stamps?.add(row)
  return walkRowOf(row)
}

/** The {@link WalkRow} of a chain's array row (inode columns, depth, parent[, stamps]). */
function walkRowOf(v: readonly unknown[]): WalkRow {
  // Two fields added to the inode row (one cached shape change), not a spread that copies it.
  const row = inodeOf(v) as InodeRow & { depth: number; parent: number | null }
  row.depth = v[HEAD_DEPTH] as number
  row.parent = v[HEAD_DEPTH + 1] as number | null
  return row
}

/**
 * The stamps of the statements one resolution ran: it may be remembered only when every
 * statement was a stamped join chain (no link read, no `..`) and all saw one snapshot.
 */
class Stamps {
  token: SnapshotToken | undefined
  consistent = true

  constructor(readonly generation: number) {}

  /** Adds the stamps of a chain's array row (its last two values). */
  add(row: readonly unknown[]): void {
    const token = tokenOf(row, this.generation)
    if (this.token === undefined) this.token = token
    else if (!sameSnapshot(this.token, token)) this.consistent = false
  }

  /** Something unstamped ran (a link's target, a parent): the resolution is not remembered. */
  spoil(): void {
    this.consistent = false
  }
}

interface WalkRow extends InodeRow {
  readonly depth: number
  readonly parent: number | null
}

/** Where a path leads. */
export interface Lookup {
  /** Inode of the directory that holds (or would hold) the last component. */
  readonly dirIno: number
  /** The last component's name; undefined for `/`. */
  readonly name: string | undefined
  /** The entry itself, when it exists. */
  readonly node: InodeRow | undefined
}

/** Options of {@link lookup}. */
export type LookupOptions = ResolveOptions

async function readTarget(q: Executor, ino: number): Promise<string> {
  const { rows } = await q.execute<{ target: string }>({
    sql: 'SELECT target FROM fs_symlink WHERE ino = ?',
    params: [ino],
    first: true,
  })
  return rows[0]?.target ?? ''
}

async function parentOf(q: Executor, dirIno: number): Promise<number> {
  if (dirIno === ROOT_INO) return ROOT_INO
  const { rows } = await q.execute<{ parent_ino: number }>({
    sql: 'SELECT parent_ino FROM fs_dentry WHERE ino = ? LIMIT 1',
    params: [dirIno],
    first: true,
  })
  return rows[0]?.parent_ino ?? ROOT_INO
}

async function inodeRow(q: Executor, ino: number): Promise<InodeRow | undefined> {
  const { rows } = await q.execute<InodeRow>({
    sql: INODE_BY_INO,
    params: [ino],
    first: true,
  })
  return rows[0]
}

/**
 * The database's steps for the shared resolver: a directory is an inode number, and one step
 * walks a whole run of names without `..` with one join chain per 16 names, so a path without
 * links or `..` costs one statement per 16 components.
 */
function databaseSteps(q: Executor, stamps?: Stamps): PathSteps<number, InodeRow> {
  return {
    root: () => ROOT_INO,
    async step(dir, names) {
      const row = await walk(q, dir, names, stamps)
      const found = row.depth
      return {
        found,
        entry: found > 0 ? row : undefined,
        dir: row.parent ?? dir,
        exhausted: true,
      }
    },
    isDirectory: (entry) => isDir(entry.mode),
    isSymbolicLink: (entry) => isLnk(entry.mode),
    readlink: (_dir, _name, entry) => {
      stamps?.spoil()
      return readTarget(q, entry.ino)
    },
    enter: (_dir, _name, entry) => entry.ino,
    parent: (dir) => {
      stamps?.spoil()
      return parentOf(q, dir)
    },
  }
}

/**
 * Resolves a path POSIX-style with the shared resolver ({@link resolvePath}): symlinks in every
 * component, `..` physically, ELOOP after 40 links, ENOTDIR for a non-directory in the middle
 * or before a trailing slash. The common case (no `..`, no links) is one statement.
 */
export async function lookup(q: Executor, path: unknown, options: LookupOptions): Promise<Lookup> {
  return lookupSoon(q, path, options)
}

/**
 * {@link lookup}, answered without a promise when the path cache answers and the connection
 * runs its statement at once (`executeNow`); a promise otherwise. Throws what `lookup` rejects
 * with.
 */
export function lookupSoon(
  q: Executor,
  path: unknown,
  options: LookupOptions,
): Lookup | Promise<Lookup> {
  const parsed = parsePath(path, options.syscall)
  // On the top-level handle, or in a transaction the filesystem lent it to: the statements run
  // on `q` either way.
  const cache = pathCacheOf(q, true)
  const dirIno = cache && cachedDir(cache, parsed)
  if (dirIno === undefined) return resolveAfresh(q, cache, parsed, options)
  // The path cache's answer: one stamped statement for the entry in the remembered parent.
  const statement = entryStatement(dirIno, parsed.parts[parsed.parts.length - 1]!)
  const before = cache!.source.generation
  const now = q.executeNow?.<unknown[]>(statement)
  if (now !== undefined)
    return (
      fromCache(cache!, parsed, options, dirIno, now.rows[0]!, before) ??
      resolveAfresh(q, cache, parsed, options)
    )
  return q
    .execute<unknown[]>(statement)
    .then(
      ({ rows }) =>
        fromCache(cache!, parsed, options, dirIno, rows[0]!, before) ??
        resolveAfresh(q, cache, parsed, options),
    )
}

/** The answer of the cache's entry `row` (read while the generation was `before`), if exact. */
function fromCache(
  cache: PathCache,
  parsed: ParsedPath,
  options: LookupOptions,
  dirIno: number,
  row: readonly unknown[],
  before: number,
): Lookup | undefined {
  const node = cache.entryOf(row, before)
  return node === undefined ? undefined : cachedAnswer(cache, parsed, options, dirIno, node)
}

/** Resolves `parsed` from the root with the database's steps, remembering what it may. */
async function resolveAfresh(
  q: Executor,
  cache: PathCache | undefined,
  parsed: ParsedPath,
  options: LookupOptions,
): Promise<Lookup> {
  const stamps = cache && new Stamps(cache.source.generation)
  const r = await resolvePath(databaseSteps(q, stamps), parsed, options)
  if (r.name !== undefined) {
    if (stamps?.consistent && stamps.token && r.rest.length === 0 && !parsed.parts.includes('..')) {
      const parts = parsed.parts
      cache!.remember(keyOf(parts, parts.length - 1), r.dir, stamps.token)
      if (r.entry && isDir(r.entry.mode))
        cache!.remember(keyOf(parts, parts.length), r.entry.ino, stamps.token)
    }
    return { dirIno: r.dir, name: r.name, node: r.entry }
  }
  // Ended on a directory reached by `..` or a link: read it (the walk did not return it).
  const node = await inodeRow(q, r.dir)
  const dirIno = r.dir === ROOT_INO ? ROOT_INO : await parentOf(q, r.dir)
  return { dirIno, name: undefined, node }
}

/**
 * The directory the path cache holds for `parsed`'s parent, when it answers `parsed` at all:
 * not for `/`, `..`, a parent not remembered or a cache gone stale ({@link cachedAnswer} then
 * takes the entry found in it).
 */
function cachedDir(cache: PathCache, parsed: ParsedPath): number | undefined {
  const parts = parsed.parts
  const n = parts.length
  if (n === 0 || parts.includes('..')) return undefined
  return cache.dir(keyOf(parts, n - 1))
}

/**
 * A lookup answered from the path cache: the entry `node` found in the remembered parent
 * `dirIno` (null: no such name) by one stamped statement. Undefined (the caller resolves
 * afresh) for anything the cache does not answer exactly: a link to follow, a trailing slash
 * on a non-directory.
 */
function cachedAnswer(
  cache: PathCache,
  parsed: ParsedPath,
  options: LookupOptions,
  dirIno: number,
  node: InodeRow | null,
): Lookup | undefined {
  const parts = parsed.parts
  const n = parts.length
  const name = parts[n - 1]!
  if (node === null) {
    if (options.allowMissing || options.partial) return { dirIno, name, node: undefined }
    throw fsError('ENOENT', options.syscall, parsed.input)
  }
  if (isLnk(node.mode) && (options.followLast || parsed.trailingSlash)) return undefined
  if (!isDir(node.mode)) return parsed.trailingSlash ? undefined : { dirIno, name, node }
  cache.remember(keyOf(parts, n), node.ino)
  return { dirIno, name, node }
}
