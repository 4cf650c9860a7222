import { joinPath, normalizePath, type Queryable, S_IFDIR, S_IFMT, S_IFREG } from '@agentfs/core'
import picomatch from 'picomatch'
import { isDir } from './inode.js'
import { lookup } from './resolver.js'

/** Options of `glob`. */
export interface GlobOptions {
  /** Directory the pattern is relative to (default `/`). */
  readonly cwd?: string
  /** Match names starting with a dot (default false, like shells). */
  readonly dot?: boolean
  /** Only regular files (default false: files, directories, links). */
  readonly onlyFiles?: boolean
}

/** One glob match. */
export interface GlobMatch {
  /** Path relative to `cwd`. */
  readonly path: string
  readonly type: 'file' | 'directory' | 'symlink' | 'other'
  readonly size: number
  /** Modification time, ms since the epoch. */
  readonly mtimeMs: number
}

/** Options of `grep`. */
export interface GrepOptions {
  /** Directory or file to search (default `/`). */
  readonly path?: string
  /** Only files whose path relative to `path` matches this glob. */
  readonly glob?: string
  readonly ignoreCase?: boolean
  /** Treat a string pattern literally instead of as a regular expression. */
  readonly fixedStrings?: boolean
  /** Stop after this many matching lines (default unlimited). */
  readonly maxMatches?: number
}

/** One matching line. */
export interface GrepMatch {
  /** Absolute path of the file. */
  readonly path: string
  /** 1-based line number. */
  readonly line: number
  readonly text: string
}

interface TreeRow {
  rel: string
  ino: number
  mode: number
  size: number
  mtime: number
  mtime_nsec: number
}

/** Every entry below directory `ino` in one recursive query, optionally depth-limited. */
async function listTree(q: Queryable, ino: number, maxDepth: number): Promise<TreeRow[]> {
  const { rows } = await q.execute<TreeRow>({
    sql: `WITH RECURSIVE tree(rel, ino, mode, size, mtime, mtime_nsec, depth) AS (
  SELECT d.name, d.ino, i.mode, i.size, i.mtime, i.mtime_nsec, 1
  FROM fs_dentry d JOIN fs_inode i ON i.ino = d.ino WHERE d.parent_ino = ?
  UNION ALL
  SELECT tree.rel || '/' || d.name, d.ino, i.mode, i.size, i.mtime, i.mtime_nsec, tree.depth + 1
  FROM tree JOIN fs_dentry d ON d.parent_ino = tree.ino JOIN fs_inode i ON i.ino = d.ino
  WHERE (tree.mode & ${S_IFMT}) = ${S_IFDIR} AND tree.depth < ?
)
SELECT rel, ino, mode, size, mtime, mtime_nsec FROM tree`,
    params: [ino, maxDepth],
  })
  return rows
}

const typeOf = (mode: number): GlobMatch['type'] => {
  const type = mode & S_IFMT
  if (type === S_IFREG) return 'file'
  if (type === S_IFDIR) return 'directory'
  if (type === 0o120000) return 'symlink'
  return 'other'
}

/**
 * Matches `pattern` (`*`, `**`, `?`, `{a,b}`, `[...]`, via picomatch) below `cwd`. The static
 * prefix of the pattern is resolved first and the rest of the tree is listed in one query, with
 * its depth limited when the pattern has no `**`.
 */
export async function glob(
  q: Queryable,
  pattern: string,
  options: GlobOptions = {},
): Promise<GlobMatch[]> {
  const cwd = normalizePath(options.cwd ?? '/', 'glob')
  const scan = picomatch.scan(pattern)
  if (!scan.isGlob) {
    // A plain path: it matches itself if it exists.
    const absolute = pattern.startsWith('/')
      ? normalizePath(pattern, 'glob')
      : joinPath(cwd, pattern)
    const found = await lookup(q, absolute, { followLast: false, syscall: 'glob' }).catch(
      () => undefined,
    )
    if (!found?.node || (options.onlyFiles && (found.node.mode & S_IFMT) !== S_IFREG)) return []
    return [
      {
        path: pattern.startsWith('/') ? absolute : relativeTo(cwd, absolute),
        type: typeOf(found.node.mode),
        size: found.node.size,
        mtimeMs: found.node.mtime * 1000 + found.node.mtime_nsec / 1e6,
      },
    ]
  }
  const base = scan.base
  const start = base ? (base.startsWith('/') ? base : joinPath(cwd, base)) : cwd
  const root = await lookup(q, start, { followLast: true, syscall: 'glob' }).catch(() => undefined)
  if (!root?.node || !isDir(root.node.mode)) return []
  const rest = scan.glob || '*'
  const maxDepth = rest.includes('**') ? 4096 : rest.split('/').length
  const matcher = picomatch(pattern.startsWith('/') ? pattern.slice(1) : pattern, {
    dot: options.dot ?? false,
  })
  const prefix = normalizePath(start, 'glob')
  const out: GlobMatch[] = []
  for (const row of await listTree(q, root.node.ino, maxDepth)) {
    if (options.onlyFiles && (row.mode & S_IFMT) !== S_IFREG) continue
    const absolute = joinPath(prefix, row.rel)
    const relative = pattern.startsWith('/') ? absolute.slice(1) : relativeTo(cwd, absolute)
    if (!matcher(relative)) continue
    out.push({
      path: pattern.startsWith('/') ? absolute : relative,
      type: typeOf(row.mode),
      size: row.size,
      mtimeMs: row.mtime * 1000 + row.mtime_nsec / 1e6,
    })
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

function relativeTo(dir: string, path: string): string {
  return dir === '/' ? path.slice(1) : path.slice(dir.length + 1)
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * Searches file contents line by line, like `grep -rn`. Binary files (a NUL byte in their
 * first chunk) are skipped. For a case-sensitive literal, candidate files are found inside the
 * engine first (`instr` over each chunk joined with the head of the next, so matches across
 * chunk boundaries count) and only those are read.
 */
export async function grep(
  q: Queryable,
  chunkSize: number,
  pattern: string | RegExp,
  options: GrepOptions = {},
): Promise<GrepMatch[]> {
  const base = normalizePath(options.path ?? '/', 'grep')
  const found = await lookup(q, base, { followLast: true, syscall: 'grep' })
  const node = found.node!
  let files: Array<{ path: string; ino: number; size: number }>
  if (isDir(node.mode)) {
    const matcher = options.glob
      ? picomatch(options.glob, { dot: true, matchBase: !options.glob.includes('/') })
      : undefined
    files = (await listTree(q, node.ino, 4096))
      .filter((row) => (row.mode & S_IFMT) === S_IFREG && (!matcher || matcher(row.rel)))
      .map((row) => ({ path: joinPath(base, row.rel), ino: row.ino, size: row.size }))
      .sort((a, b) => (a.path < b.path ? -1 : 1))
  } else {
    files = [{ path: base, ino: node.ino, size: node.size }]
  }
  const literal =
    typeof pattern === 'string' && (options.fixedStrings || !/[.*+?^${}()|[\]\\]/.test(pattern))
      ? pattern
      : undefined
  const regex =
    typeof pattern === 'string'
      ? new RegExp(
          literal !== undefined ? escapeRegExp(literal) : pattern,
          options.ignoreCase ? 'i' : '',
        )
      : new RegExp(
          pattern.source,
          options.ignoreCase && !pattern.flags.includes('i')
            ? `${pattern.flags}i`
            : pattern.flags.replace('g', ''),
        )
  if (literal !== undefined && !options.ignoreCase && literal.length > 0 && files.length > 0) {
    const needle = Buffer.from(literal)
    const candidates = new Set<number>()
    for (let i = 0; i < files.length; i += 500) {
      const batch = files.slice(i, i + 500)
      const { rows } = await q.execute<{ ino: number }>({
        sql: `SELECT DISTINCT a.ino AS ino FROM fs_data a
LEFT JOIN fs_data b ON b.ino = a.ino AND b.chunk_index = a.chunk_index + 1
WHERE a.ino IN (${batch.map(() => '?').join(', ')})
  AND instr(CAST(a.data || COALESCE(substr(b.data, 1, ?), X'') AS BLOB), ?) > 0`,
        params: [...batch.map((f) => f.ino), Math.max(0, needle.length - 1), needle],
      })
      for (const row of rows) candidates.add(row.ino)
    }
    files = files.filter((f) => candidates.has(f.ino))
  }
  const out: GrepMatch[] = []
  const limit = options.maxMatches ?? Number.POSITIVE_INFINITY
  const decoder = new TextDecoder()
  for (const file of files) {
    let carry = ''
    let line = 0
    let first = true
    let binary = false
    for (let index = 0; index * chunkSize < file.size && !binary; index += 64) {
      const { rows } = await q.execute<{ data: Uint8Array }>({
        sql: 'SELECT data FROM fs_data WHERE ino = ? AND chunk_index >= ? AND chunk_index < ? ORDER BY chunk_index',
        params: [file.ino, index, index + 64],
      })
      for (const { data } of rows) {
        if (first) {
          first = false
          if (data.includes(0)) {
            binary = true
            break
          }
        }
        const text = carry + decoder.decode(data, { stream: true })
        const lines = text.split('\n')
        carry = lines.pop() ?? ''
        for (const content of lines) {
          line++
          if (regex.test(content)) {
            out.push({ path: file.path, line, text: content })
            if (out.length >= limit) return out
          }
        }
      }
    }
    if (binary) continue
    carry += decoder.decode()
    if (carry.length > 0) {
      line++
      if (regex.test(carry)) {
        out.push({ path: file.path, line, text: carry })
        if (out.length >= limit) return out
      }
    }
  }
  return out
}
