import {
  badEntryName,
  corruptError,
  fsError,
  placeholders,
  type Queryable,
  S_IFDIR,
  S_IFMT,
} from '@agentfs/core'

/**
 * Deepest directory nesting any walker descends to. A path of PATH_MAX (4096) bytes has at most
 * 2048 components, so a deeper tree cannot be named and only a damaged database has one.
 */
export const MAX_TREE_DEPTH = 2048

/** One entry found below the walk's start. */
export interface TreeEntry {
  /** The dentry's id (what `rm -r` deletes). */
  readonly id: number
  /** Path relative to the start, components joined by `/`. */
  readonly rel: string
  readonly name: string
  /** `rel` of the directory holding it (`''` for the start itself). */
  readonly parentRel: string
  readonly ino: number
  readonly mode: number
  readonly size: number
  readonly mtime: number
  readonly mtime_nsec: number
  /** 1 for the start's children. */
  readonly depth: number
}

/** Options of {@link walkTree}. */
export interface WalkOptions {
  /** Levels to descend (1 = the start's children only); at most {@link MAX_TREE_DEPTH}. */
  readonly maxDepth?: number
  /** For errors: the operation and the path that was walked. */
  readonly syscall: string
  readonly path?: string
}

const BATCH = 500
const isDirMode = (mode: number) => (mode & S_IFMT) === S_IFDIR

/**
 * Every entry below directory `start`, breadth first, one query per level (batched). Safe on any
 * database, however damaged: each directory inode is entered once — reaching one again (a
 * dentry cycle, a directory hard link) is ELOOP naming the inode; a name that cannot be a path
 * component (empty, `.`, `..`, `/`, NUL) is EIO; the depth is bounded. Results are in no
 * particular order.
 */
export async function walkTree(
  q: Queryable,
  start: number,
  options: WalkOptions,
): Promise<TreeEntry[]> {
  const maxDepth = Math.min(options.maxDepth ?? MAX_TREE_DEPTH, MAX_TREE_DEPTH)
  const seen = new Set<number>([start])
  const out: TreeEntry[] = []
  let frontier: { ino: number; rel: string }[] = [{ ino: start, rel: '' }]
  for (let depth = 1; frontier.length > 0; depth++) {
    if (depth > maxDepth) {
      if (options.maxDepth !== undefined && options.maxDepth < MAX_TREE_DEPTH) break
      throw fsError('ELOOP', options.syscall, options.path, {
        hint: `directories nest deeper than ${MAX_TREE_DEPTH} levels; the database is damaged, run \`agentfs fsck\``,
      })
    }
    const next: { ino: number; rel: string }[] = []
    for (let i = 0; i < frontier.length; i += BATCH) {
      const batch = frontier.slice(i, i + BATCH)
      const relOf = new Map(batch.map((d) => [d.ino, d.rel]))
      const { rows } = await q.execute<{
        id: number
        parent: number
        name: unknown
        ino: number
        mode: number
        size: number
        mtime: number
        mtime_nsec: number
      }>({
        sql: `SELECT d.id AS id, d.parent_ino AS parent, d.name AS name, d.ino AS ino, i.mode AS mode, i.size AS size, i.mtime AS mtime, i.mtime_nsec AS mtime_nsec
FROM fs_dentry d JOIN fs_inode i ON i.ino = d.ino WHERE d.parent_ino IN (${placeholders(batch.length)})`,
        params: batch.map((d) => d.ino),
      })
      for (const row of rows) {
        const parentRel = relOf.get(row.parent) ?? ''
        const bad = badEntryName(row.name)
        if (bad !== undefined)
          throw corruptError(
            options.syscall,
            options.path,
            `an entry of directory inode ${row.parent} (inode ${row.ino}) has a name that cannot be a path component: ${bad}`,
          )
        const name = row.name as string
        const rel = parentRel === '' ? name : `${parentRel}/${name}`
        if (isDirMode(row.mode)) {
          if (seen.has(row.ino))
            throw fsError('ELOOP', options.syscall, options.path, {
              hint: `the database is damaged: directory inode ${row.ino} is reached twice (a cycle or a directory hard link, at ${rel}); run \`agentfs fsck\``,
            })
          seen.add(row.ino)
          next.push({ ino: row.ino, rel })
        }
        out.push({
          id: row.id,
          rel,
          name,
          parentRel,
          ino: row.ino,
          mode: row.mode,
          size: row.size,
          mtime: row.mtime,
          mtime_nsec: row.mtime_nsec,
          depth,
        })
      }
    }
    frontier = next
  }
  return out
}

/** A name read from `fs_dentry`, or EIO when a crafted row holds one that is no component. */
export function checkedName(
  name: unknown,
  dirIno: number,
  path: string,
  syscall = 'scandir',
): string {
  const bad = badEntryName(name)
  if (bad !== undefined)
    throw corruptError(
      syscall,
      path,
      `an entry of directory inode ${dirIno} has a name that cannot be a path component: ${bad}`,
    )
  return name as string
}

/** Orders strings by Unicode code point, which is SQLite's BINARY order of their UTF-8 bytes. */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x === y) continue
    // Surrogates (U+D800–DFFF) encode code points above U+FFFF: they sort after U+E000–FFFF.
    const sx = x >= 0xd800 && x <= 0xdfff ? x + 0x10000 : x
    const sy = y >= 0xd800 && y <= 0xdfff ? y + 0x10000 : y
    return sx - sy
  }
  return a.length - b.length
}

/** Sorts tree entries by their relative path, as `ORDER BY rel` would. */
export function sortByRel<T extends { rel: string }>(entries: T[]): T[] {
  return entries.sort((a, b) => compareCodePoints(a.rel, b.rel))
}
