import { type Executor, fsError, parsePath, ROOT_INO } from '@agentfs/core'
import { assembleWhole, MAX_READ_FILE } from './chunks.js'
import { INODE_COLUMNS, type InodeRow, isDir, isLnk } from './inode.js'

/** Linux's limit on symlinks followed while resolving one path. */
export const MAX_SYMLINK_HOPS = 40

/**
 * Walks as far as it can along `rest` (components joined by `/`) from a directory, through
 * directories only, in one statement. The deepest row reached comes back with its parent and
 * how many components it consumed.
 */
const WALK_SQL = `WITH RECURSIVE walk(depth, ino, parent, mode, rest) AS (
  SELECT 0, ?, NULL, (SELECT mode FROM fs_inode WHERE ino = ?), ?
  UNION ALL
  SELECT walk.depth + 1, d.ino, walk.ino, i.mode,
    CASE WHEN instr(walk.rest, '/') = 0 THEN '' ELSE substr(walk.rest, instr(walk.rest, '/') + 1) END
  FROM walk
  JOIN fs_dentry d ON d.parent_ino = walk.ino
    AND d.name = CASE WHEN instr(walk.rest, '/') = 0 THEN walk.rest ELSE substr(walk.rest, 1, instr(walk.rest, '/') - 1) END
  JOIN fs_inode i ON i.ino = d.ino
  WHERE walk.rest != '' AND (walk.mode & 61440) = 16384
)
SELECT w.depth AS depth, w.parent AS parent, ${INODE_COLUMNS.split(', ')
  .map((c) => `i.${c} AS ${c}`)
  .join(', ')}
FROM walk w JOIN fs_inode i ON i.ino = w.ino ORDER BY w.depth DESC LIMIT 1`

/** Components resolved with a chain of joins; longer segments use the recursive query. */
const CHAIN_MAX = 8
const COLUMNS = INODE_COLUMNS.split(', ')
const chainCache = new Map<number, string>()

/**
 * `n` levels as LEFT JOINs on the (parent_ino, name) index, in one row: a level is only joined
 * below a directory, so a file or symlink in the middle stops the chain as in the recursive
 * query. Only the deepest level found is returned (COALESCE from the deepest level up), with how
 * deep it is and its parent, so the row stays small.
 */
function chainSql(n: number): string {
  let sql = chainCache.get(n)
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
  sql = `SELECT ${select.join(', ')} FROM (SELECT ? AS start) s ${joins.join(' ')}`
  chainCache.set(n, sql)
  return sql
}

/**
 * The common case of reading a whole file in one statement: a path without `..` of at most
 * 8 components that resolves, without links, to a regular file — its inode row and chunks
 * together. Undefined whenever anything else is the case (links, directories, missing entries,
 * `..`, deep paths); the caller then takes the general path, which reports errors precisely.
 */
export async function readRegularFile(
  q: Executor,
  path: string,
  syscall: string,
  chunkSize: number,
): Promise<{ node: InodeRow; bytes: Uint8Array } | undefined> {
  const parsed = parsePath(path, syscall)
  const parts = parsed.parts
  if (
    parts.length === 0 ||
    parts.length > CHAIN_MAX ||
    parsed.trailingSlash ||
    parts.includes('..')
  )
    return undefined
  const { rows } = await q.execute<WalkRow & { data: unknown; chunk_index: number | null }>({
    sql: `SELECT r.*, d.chunk_index AS chunk_index, d.data AS data FROM (${chainSql(parts.length)}) r LEFT JOIN fs_data d ON d.ino = r.ino ORDER BY d.chunk_index`,
    params: [ROOT_INO, ...parts],
  })
  const head = rows[0]
  if (!head || head.depth !== parts.length || (head.mode & 0o170000) !== 0o100000) return undefined
  const { data: _data, depth: _depth, parent: _parent, chunk_index: _index, ...node } = head
  // Huge or impossible sizes take the general path, which reports them precisely.
  if (!(node.size >= 0 && node.size <= MAX_READ_FILE)) return undefined
  // A LEFT JOIN row without a chunk means the file has none (empty, or all one hole).
  const chunks = rows.length === 1 && head.chunk_index === null ? [] : rows
  return { node, bytes: assembleWhole(chunks, chunkSize, node.size, node.ino, 'read', path) }
}

async function walk(q: Executor, start: number, segment: readonly string[]): Promise<WalkRow> {
  const { rows } =
    segment.length > CHAIN_MAX
      ? await q.execute<WalkRow>({ sql: WALK_SQL, params: [start, start, segment.join('/')] })
      : await q.execute<WalkRow>({ sql: chainSql(segment.length), params: [start, ...segment] })
  return rows[0]!
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
export interface LookupOptions {
  /** Follow a symlink in the last component (stat, open) or not (lstat, unlink, rename). */
  readonly followLast: boolean
  readonly syscall: string
  /** Let the last component be missing (create). Otherwise a missing entry is ENOENT. */
  readonly allowMissing?: boolean
}

async function readTarget(q: Executor, ino: number): Promise<string> {
  const { rows } = await q.execute<{ target: string }>({
    sql: 'SELECT target FROM fs_symlink WHERE ino = ?',
    params: [ino],
  })
  return rows[0]?.target ?? ''
}

async function parentOf(q: Executor, dirIno: number): Promise<number> {
  if (dirIno === ROOT_INO) return ROOT_INO
  const { rows } = await q.execute<{ parent_ino: number }>({
    sql: 'SELECT parent_ino FROM fs_dentry WHERE ino = ? LIMIT 1',
    params: [dirIno],
  })
  return rows[0]?.parent_ino ?? ROOT_INO
}

async function inodeRow(q: Executor, ino: number): Promise<InodeRow | undefined> {
  const { rows } = await q.execute<InodeRow>({
    sql: `SELECT ${INODE_COLUMNS} FROM fs_inode WHERE ino = ?`,
    params: [ino],
  })
  return rows[0]
}

/**
 * Resolves a path POSIX-style: symlinks in every component (absolute targets from `/`, relative
 * ones from the link's directory), `..` physically (the parent of where we are, not a textual
 * step back), at most 40 links (ELOOP), a non-directory in the middle is ENOTDIR, a trailing
 * slash demands a directory. The common case (no `..`, no links) is one statement.
 */
export async function lookup(q: Executor, path: unknown, options: LookupOptions): Promise<Lookup> {
  const parsed = parsePath(path, options.syscall)
  const input = parsed.input
  const queue = [...parsed.parts]
  let hops = 0
  let dir = ROOT_INO
  let node: InodeRow | undefined
  let name: string | undefined
  let followLast = options.followLast || parsed.trailingSlash

  while (queue.length > 0) {
    if (queue[0] === '..') {
      queue.shift()
      dir = await parentOf(q, dir)
      node = undefined
      name = undefined
      continue
    }
    const end = queue.indexOf('..')
    const segment = queue.slice(0, end === -1 ? queue.length : end)
    const row = await walk(q, dir, segment)
    const consumed = row.depth
    const reached: InodeRow = row
    if (consumed === 0) {
      // Not even the first component exists in `dir`.
      if (segment.length === queue.length && segment.length === 1 && options.allowMissing) {
        return { dirIno: dir, name: segment[0], node: undefined }
      }
      throw fsError('ENOENT', options.syscall, input)
    }
    const lastInSegment = consumed === segment.length
    const remaining = queue.length - consumed
    const parent = row.parent ?? dir
    if (isLnk(reached.mode) && (remaining > 0 || followLast)) {
      if (++hops > MAX_SYMLINK_HOPS) throw fsError('ELOOP', options.syscall, input)
      const target = await readTarget(q, reached.ino)
      const targetParts = parsePath(target.length > 0 ? target : '.', options.syscall).parts
      queue.splice(0, consumed, ...targetParts)
      dir = target.startsWith('/') ? ROOT_INO : parent
      node = undefined
      name = undefined
      if (queue.length === 0) followLast = true
      continue
    }
    if (!lastInSegment) {
      if (!isDir(reached.mode)) throw fsError('ENOTDIR', options.syscall, input)
      // `reached` is a directory whose next child is missing.
      if (remaining === 1 && options.allowMissing) {
        return { dirIno: reached.ino, name: queue[consumed], node: undefined }
      }
      throw fsError('ENOENT', options.syscall, input)
    }
    queue.splice(0, consumed)
    if (queue.length > 0) {
      // Stopped before a `..`: continue from the directory reached.
      if (!isDir(reached.mode)) throw fsError('ENOTDIR', options.syscall, input)
      dir = reached.ino
      node = reached
      name = undefined
      continue
    }
    dir = parent
    node = reached
    name = segment[segment.length - 1]
  }
  // Ended on a directory reached by `..` or a link: read it (the walk did not return it).
  node ??= await inodeRow(q, dir)
  if (name === undefined && node)
    dir = node.ino === ROOT_INO ? ROOT_INO : await parentOf(q, node.ino)
  if (parsed.trailingSlash && node && !isDir(node.mode))
    throw fsError('ENOTDIR', options.syscall, input)
  return { dirIno: dir, name, node }
}
