import {
  type ChunkFormat,
  type Executor,
  fsError,
  type ParsedPath,
  type PathSteps,
  parsePath,
  type ResolveOptions,
  ROOT_INO,
  readThen,
  resolvePath,
  SNAPSHOT_COLUMNS,
  type SnapshotToken,
  type Statement,
  sameSnapshot,
  tokenOf,
} from '@agentfs/core'
import { assembleChunks, assembleWhole, MAX_READ_FILE } from './chunks.js'
import { INODE_BY_INO, INODE_COLUMNS, type InodeRow, inodeOf, isDir, isLnk } from './inode.js'
import { entryStatement, keyOf, type PathCache, pathCacheOf } from './path-cache.js'

/**
 * Components resolved by one chain of joins (2 tables each, within SQLite's 64); longer runs
 * take one chain per 16 names. Measured on a 33-component path: chains of 16 take 34 µs, of 8
 * 38 µs, a recursive CTE walking the names 47 µs (it re-splits the rest at every level).
 */
const CHAIN_MAX = 16
const COLUMNS = INODE_COLUMNS.split(', ')
const chainCache = new Map<number, string>()
/** {@link readRegularFile}'s statement per path length, built once (see {@link chainSql}). */
const wholeCache = new Map<number, string>()

/**
 * `n` levels as LEFT JOINs on the (parent_ino, name) index, in one row: a level is only joined
 * below a directory, so a file or symlink in the middle stops the chain. Only the deepest level
 * found is returned (COALESCE from the deepest level up), with how deep it is and its parent,
 * so the row stays small.
 */
function chainSql(n: number, stamped = false): string {
  const key = stamped ? -n : n
  let sql = chainCache.get(key)
  if (sql) return sql
  const joins: string[] = []
  for (let k = 1; k <= n; k++) {
    const parent = k === 1 ? 's.start' : `i${k - 1}.ino`
    const isDir = k === 1 ? '1' : `(i${k - 1}.mode & 61440) = 16384`
    joins.push(
      `LEFT JOIN fs_dentry d${k} ON d${k}.parent_ino = ${parent} AND d${k}.name = ? AND ${isDir}`,
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
  sql = `SELECT ${select.join(', ')} FROM (SELECT ? AS start) s ${joins.join(' ')}`
  chainCache.set(key, sql)
  return sql
}

/**
 * The chunks of a file after the first, in order, as values, while its inode's ctime is still
 * the one given: (ino, last chunk index, ino, ctime, ctime_nsec). Integer indices only, so that
 * a count of `last` values means chunks 1 to `last`, each once.
 */
const REST_SQL =
  "SELECT data FROM fs_data WHERE ino = ? AND chunk_index > 0 AND chunk_index <= ? AND typeof(chunk_index) = 'integer' AND EXISTS (SELECT 1 FROM fs_inode WHERE ino = ? AND ctime = ? AND ctime_nsec = ?) ORDER BY chunk_index"

/** Where `depth` is in a chain's array row: after the inode's columns. */
const HEAD_DEPTH = COLUMNS.length

/**
 * The common case of reading a whole file: a path without `..` of at most 16 components that
 * resolves, without links, to a regular file — its inode row and first chunk in one statement,
 * the other chunks (a file larger than one chunk) in a second one checked against the first.
 * Undefined whenever anything else is the case (links, directories, missing entries, `..`,
 * deep paths, a file changed between the two statements); the caller then takes the general
 * path, which reports errors precisely. The chunks come in any order ({@link assembleWhole}
 * places each by its index): sorting them would build a temporary b-tree of the whole file.
 */
export async function readRegularFile(
  q: Executor,
  path: string,
  syscall: string,
  format: ChunkFormat,
  touch?: (node: InodeRow) => Statement | undefined,
): Promise<
  { node: InodeRow; bytes: Uint8Array; touched: boolean; touchError?: unknown } | undefined
> {
  const parsed = parsePath(path, syscall)
  const parts = parsed.parts
  if (
    parts.length === 0 ||
    parts.length > CHAIN_MAX ||
    parsed.trailingSlash ||
    parts.includes('..')
  )
    return undefined
  // One array row: the inode's columns, depth, parent (the chain's), then the first chunk.
  let sql = wholeCache.get(parts.length)
  if (sql === undefined) {
    sql = `SELECT r.*, d.chunk_index AS chunk_index, d.data AS data FROM (${chainSql(parts.length)}) r LEFT JOIN fs_data d ON d.ino = r.ino AND d.chunk_index = 0`
    wholeCache.set(parts.length, sql)
  }
  const statement: Statement = { sql, params: [ROOT_INO, ...parts], arrays: true, first: true }
  let head: readonly unknown[] | undefined
  let node: InodeRow | undefined
  let touched = false
  let touchError: unknown
  if (touch === undefined) {
    head = (await q.execute<unknown[]>(statement)).rows[0]
    node = regularHead(head, parts.length)
  } else {
    // A file of one chunk is read and its access time set in one transaction (one lock
    // cycle); for a larger one the caller sets it after reading the rest.
    const done = await readThen<unknown[]>(q, statement, (result) => {
      head = result.rows[0]
      node = regularHead(head, parts.length)
      return node !== undefined && node.size <= format.size ? touch(node) : undefined
    })
    touched = done.followed
    touchError = done.followError
  }
  if (head === undefined || node === undefined) return undefined
  // A LEFT JOIN row without a chunk means the file has no first chunk (empty, or a hole).
  const index = head[HEAD_DEPTH + 2] as number | null
  const first = index === null ? [] : [{ chunk_index: index, data: head[HEAD_DEPTH + 3] }]
  if (node.size <= format.size)
    return {
      node,
      bytes: assembleWhole(first, format, node.size, node.ino, 'read', path),
      touched,
      ...(touchError === undefined ? {} : { touchError }),
    }
  const last = Math.floor((node.size - 1) / format.size)
  if (index === 0) {
    // Every other chunk as a bare value, in order, read only while the inode's ctime (which
    // moves on every change) is the one the first row saw: as many values as chunks means none
    // is missing (a hole, a change in between, damage: the general read below).
    const { rows: rest } = await q.execute<unknown>({
      sql: REST_SQL,
      params: [node.ino, last, node.ino, node.ctime, node.ctime_nsec],
      pluck: true,
    })
    if (rest.length === last)
      return {
        node,
        bytes: assembleChunks(
          head[HEAD_DEPTH + 3],
          rest,
          format,
          node.size,
          node.ino,
          'read',
          path,
        ),
        touched,
        ...(touchError === undefined ? {} : { touchError }),
      }
  }
  // The other chunks as bare rows (a join would repeat the inode's columns on each), in the
  // same state: each row also carries the inode's ctime, which moves on every change, and a
  // changed (or vanished) ctime gives up (undefined: the caller reads afresh). The one-row
  // start keeps a row even when the inode or the chunks are gone.
  const { rows: found } = await q.execute<{
    c: number | null
    n: number | null
    chunk_index: number | null
    data: unknown
  }>({
    sql: "SELECT i.ctime AS c, i.ctime_nsec AS n, d.chunk_index AS chunk_index, d.data AS data FROM (SELECT 1) s LEFT JOIN fs_inode i ON i.ino = ? LEFT JOIN fs_data d ON d.ino = ? AND d.chunk_index > 0 AND d.chunk_index <= ? AND typeof(d.chunk_index) = 'integer'",
    params: [node.ino, node.ino, last],
  })
  const stamp = found[0]!
  if (stamp.c !== node.ctime || stamp.n !== node.ctime_nsec) return undefined
  const rest = found.length === 1 && stamp.chunk_index === null ? [] : found
  return {
    node,
    bytes: assembleWhole([...first, ...rest], format, node.size, node.ino, 'read', path),
    touched,
  }
}

/**
 * The inode of {@link readRegularFile}'s first row when the whole path resolved to a regular
 * file of a size it reads at once; undefined for anything else (the general path then).
 */
function regularHead(head: readonly unknown[] | undefined, depth: number): InodeRow | undefined {
  if (!head || head[HEAD_DEPTH] !== depth) return undefined
  const node = inodeOf(head)
  if ((node.mode & 0o170000) !== 0o100000) return undefined
  // Huge or impossible sizes take the general path, which reports them precisely.
  if (!(node.size >= 0 && node.size <= MAX_READ_FILE)) return undefined
  return node
}

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
  const cache = pathCacheOf(q)
  const dirIno = cache && cachedDir(cache, parsed)
  if (dirIno === undefined) return resolveAfresh(q, cache, parsed, options)
  // The path cache's answer: one stamped statement for the entry in the remembered parent.
  const statement = entryStatement(dirIno, parsed.parts[parsed.parts.length - 1]!)
  const before = cache!.source.generation
  const now = cache!.source.executeNow?.<unknown[]>(statement)
  if (now !== undefined)
    return (
      fromCache(cache!, parsed, options, dirIno, now.rows[0]!, before) ??
      resolveAfresh(q, cache, parsed, options)
    )
  return cache!.source
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
