import {
  fsError,
  joinPath,
  MODE_PERMISSION_MASK,
  normalizePath,
  parsePath,
  type Queryable,
  S_IFREG,
  type Timestamp,
} from '@agentfs/core'
import type { PolicyGate } from '../policy/policy-gate.js'
import { checkedName, sortByRel, walkTree } from '../search/walk.js'
import { Dirent } from '../stats.js'
import { resize } from '../storage/chunks.js'
import { type InodeRow, inodeColumnsOf, inodeOf, isDir } from '../storage/inode.js'
import { createNode, touchContent } from '../storage/mutate.js'
import { keyOf, type PathCache, pathCacheOf, stampedSql } from '../storage/path-cache.js'
import { lookup } from '../storage/resolver.js'
import type { ReaddirOptions, StatFs } from '../types.js'
import { hashBefore } from './content-hash.js'
import { existing, type FsContext, type NoteChange } from './context.js'
import type { OpenMode } from './flags.js'
import { statsOf } from './metadata-ops.js'

// The bodies of SqlFileSystem's listing, statfs and open calls: SQL over one Queryable, with no
// policy of their own (the class runs them behind its gate).

/**
 * `readdir`: names or Dirents in name order; `recursive` walks the tree (cycle-safe);
 * `withStats` gives each Dirent its entry's Stats, from the listing's own statement.
 */
export function listDirectory(
  ctx: FsContext,
  path: string,
  options: ReaddirOptions,
): Promise<string[] | Dirent[]> {
  // Names of a directory the path cache holds, read at once: one promise for the answer.
  if (!options.recursive && !options.withFileTypes) {
    try {
      const names = cachedNamesNow(ctx.q, path)
      if (names !== undefined) return Promise.resolve(names)
    } catch (error) {
      return Promise.reject(error)
    }
  }
  return listing(ctx, path, options)
}

async function listing(
  ctx: FsContext,
  path: string,
  options: ReaddirOptions,
): Promise<string[] | Dirent[]> {
  const q = ctx.q
  if (!options.recursive && !options.withFileTypes) {
    const names = await cachedNames(q, path)
    if (names) return names
  }
  const { node } = await existing(q, path, 'scandir')
  if (!isDir(node.mode)) throw fsError('ENOTDIR', 'scandir', path)
  const base = normalizePath(path)
  if (!options.recursive) {
    if (!options.withFileTypes) {
      const { rows } = await q.execute<unknown[]>({
        sql: NAMES_UNSTAMPED_SQL,
        params: [node.ino, node.ino, node.ino],
        arrays: true,
      })
      return namesOf(q, rows[0]!, node.ino, path)
    }
    if (options.withStats) {
      const { rows } = await q.execute<unknown[]>({
        sql: ENTRIES_WITH_INODES_SQL,
        params: [node.ino],
        arrays: true,
      })
      const entries: Dirent[] = []
      for (const row of rows) {
        const inode = inodeOf(row, 1)
        const stats = await statsOf(ctx, inode)
        entries.push(new Dirent(checkedName(row[0], node.ino, path), base, inode.mode, stats))
      }
      return entries
    }
    const { rows } = await q.execute<{ name: string; mode: number }>({
      sql: 'SELECT d.name AS name, i.mode AS mode FROM fs_dentry d JOIN fs_inode i ON i.ino = d.ino WHERE d.parent_ino = (SELECT ?) ORDER BY d.name',
      params: [node.ino],
    })
    return rows.map((r) => new Dirent(checkedName(r.name, node.ino, path), base, r.mode))
  }
  const rows = sortByRel(await walkTree(q, node.ino, { syscall: 'scandir', path }))
  if (!options.withFileTypes) return rows.map((r) => r.rel)
  return rows.map(
    (r) => new Dirent(r.name, r.parentRel ? joinPath(base, r.parentRel) : base, r.mode),
  )
}

/** A directory's entries with their inodes' columns, as array rows: [name, ...INODE_COLUMNS]. */
const ENTRIES_WITH_INODES_SQL = `SELECT d.name, ${inodeColumnsOf('i')} FROM fs_dentry d JOIN fs_inode i ON i.ino = d.ino WHERE d.parent_ino = (SELECT ?) ORDER BY d.name`

/**
 * A directory's names: an index-only scan of idx_fs_dentry_parent (parent_ino, name), handed
 * over as one text joined by `/` (the one character no name holds; a row per name costs more,
 * a JSON array a third more again), with how many names there are and the types of the first
 * and last name in the index's order. SQLite orders NULL, then numbers, then text, then blobs,
 * so when both ends are text every name is: two index seeks instead of a `typeof` per name
 * (which cost a quarter of a 100-name listing). Parameters: the directory three times, each
 * bound through a subquery (ARCHITECTURE.md, "Statement shapes").
 */
const NAMES_COLUMNS =
  "group_concat(name, '/') AS names, COUNT(*) AS n, (SELECT typeof(name) FROM fs_dentry WHERE parent_ino = (SELECT ?) ORDER BY name LIMIT 1) AS lo, (SELECT typeof(name) FROM fs_dentry WHERE parent_ino = (SELECT ?) ORDER BY name DESC LIMIT 1) AS hi"
const NAMES_FROM = 'FROM (SELECT name FROM fs_dentry WHERE parent_ino = (SELECT ?) ORDER BY name)'
const NAMES_SQL = stampedSql(`SELECT ${NAMES_COLUMNS}`, NAMES_FROM)
const NAMES_UNSTAMPED_SQL = `SELECT ${NAMES_COLUMNS} ${NAMES_FROM}`

/**
 * The names of a {@link NAMES_COLUMNS} row, each checked. When a name is not text or holds `/`
 * (a damaged database: the counts do not add up), the names are read one row each, so that
 * `checkedName` reports the bad one.
 */
async function namesOf(
  q: Queryable,
  row: readonly unknown[],
  dirIno: number,
  path: string,
): Promise<string[]> {
  const names = ordinaryNames(row)
  if (names !== undefined) return names
  const { rows } = await q.execute<unknown[]>({
    sql: 'SELECT name FROM fs_dentry WHERE parent_ino = (SELECT ?) ORDER BY name',
    params: [dirIno],
    arrays: true,
  })
  return rows.map(([name]) => checkedName(name, dirIno, path))
}

/**
 * The names of a {@link NAMES_COLUMNS} row when every one is an ordinary name: text (both ends
 * of the index are), no `/` (the count adds up), no NUL (one scan of the joined text), not
 * empty, `.` or `..`. Undefined otherwise: the caller reads the names one row each, so that
 * `checkedName` reports the bad one.
 */
function ordinaryNames(row: readonly unknown[]): string[] | undefined {
  const [joined, n, lo, hi] = row as [string | null, number, string | null, string | null]
  if (n === 0) return []
  if (lo !== 'text' || hi !== 'text' || joined === null || joined.includes('\0')) return undefined
  const names = joined.split('/')
  if (names.length !== n) return undefined
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!
    if (name.length <= 2 && (name === '' || name === '.' || name === '..')) return undefined
  }
  return names
}

/**
 * The path cache and the directory it remembers at `path`, when it does (not for a path with
 * `..`, which the cache does not key).
 */
function rememberedDir(q: Queryable, path: string): { cache: PathCache; ino: number } | undefined {
  const cache = pathCacheOf(q)
  if (!cache) return
  const { parts } = parsePath(path, 'scandir')
  if (parts.includes('..')) return
  const ino = cache.dir(keyOf(parts))
  return ino === undefined ? undefined : { cache, ino }
}

/**
 * {@link cachedNames} answered at once: the names when the path cache holds the directory, the
 * connection is free and every name is ordinary; undefined otherwise (the caller then takes the
 * general path, which reports a bad name).
 */
function cachedNamesNow(q: Queryable, path: string): string[] | undefined {
  const dir = rememberedDir(q, path)
  if (!dir) return
  const row = dir.cache.stampedNow(NAMES_SQL, [dir.ino, dir.ino, dir.ino])
  return row ? ordinaryNames(row) : undefined
}

/** A directory's names in one statement when the path cache holds the directory; else undefined. */
async function cachedNames(q: Queryable, path: string): Promise<string[] | undefined> {
  const dir = rememberedDir(q, path)
  if (!dir) return
  const row = await dir.cache.stamped(NAMES_SQL, [dir.ino, dir.ino, dir.ino])
  if (!row) return
  return namesOf(dir.cache.source, row, dir.ino, path)
}

/** `statfs`: used space from the sizes, a nominal 2^31 blocks and files free. */
export async function statfsOf(q: Queryable, chunkSize: number): Promise<StatFs> {
  const { rows } = await q.execute<{ bytes: number; files: number }>({
    sql: 'SELECT (SELECT COALESCE(SUM(size), 0) FROM fs_inode) AS bytes, (SELECT COUNT(*) FROM fs_inode) AS files',
  })
  const used = Math.ceil((rows[0]?.bytes ?? 0) / chunkSize)
  const total = Math.max(used, 2 ** 31)
  return {
    type: 0x61676673,
    bsize: chunkSize,
    blocks: total,
    bfree: total - used,
    bavail: total - used,
    files: rows[0]?.files ?? 0,
    ffree: 2 ** 31,
  }
}

/** The directory `opendir` iterates, and (under a policy) which names it may list. */
export async function openDirectory(
  q: Queryable,
  path: string,
  gate?: PolicyGate,
): Promise<{ node: InodeRow; filter: ((name: string) => boolean) | undefined }> {
  const real = gate ? await gate.read(path, 'opendir') : undefined
  const { node } = await existing(q, path, 'opendir')
  if (!isDir(node.mode)) throw fsError('ENOTDIR', 'opendir', path)
  // Entries the policy does not let the caller read are never listed.
  const filter =
    gate && real !== undefined ? (name: string) => gate.listable(real, name) : undefined
  return { node, filter }
}

/**
 * `open`'s work inside its transaction: the inode to open (created with `mode` less the umask,
 * or truncated, as `want` says), or undefined when the file is absent and not to be created.
 */
export async function openOrCreate(
  ctx: FsContext,
  q: Queryable,
  now: Timestamp,
  path: string,
  want: OpenMode,
  mode: number,
  note?: NoteChange,
): Promise<number | undefined> {
  const found = await lookup(q, path, {
    followLast: true,
    syscall: 'open',
    allowMissing: want.create,
  })
  if (found.node) {
    if (want.create && want.exclusive) throw fsError('EEXIST', 'open', path)
    if (isDir(found.node.mode) && want.write) throw fsError('EISDIR', 'open', path)
    if (want.truncate && want.write && found.node.size > 0) {
      const before = note ? await hashBefore(ctx, q, found.node) : undefined
      await resize(q, found.node.ino, found.node.size, ctx.chunks, 0)
      await touchContent(q, found.node.ino, 0, now)
      note?.({ op: 'truncate', path: normalizePath(path), ino: found.node.ino, before })
    }
    return found.node.ino
  }
  if (!want.create || found.name === undefined) return undefined
  const ino = await createNode(q, found.dirIno, found.name, {
    mode: S_IFREG | (mode & ~ctx.umask & MODE_PERMISSION_MASK),
    uid: ctx.uid,
    gid: ctx.gid,
    now,
  })
  note?.({ op: 'create', path: normalizePath(path), ino, dir: found.dirIno })
  return ino
}
