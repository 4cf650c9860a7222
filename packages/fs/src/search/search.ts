import {
  type ChunkFormat,
  corruptError,
  decodeChunk,
  fsError,
  joinPath,
  normalizePath,
  placeholders,
  type Queryable,
  S_IFDIR,
  S_IFMT,
  S_IFREG,
} from '@agentfs/core'
import picomatch from 'picomatch'
import { isDir } from '../storage/inode.js'
import { lookup } from '../storage/resolver.js'
import { compileGlob, compileRegex } from './matchers.js'
import { compareCodePoints, type TreeEntry, walkTree } from './walk.js'

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
  /**
   * Absolute path, as in {@link GrepMatch}: ready for `readFile` whatever `cwd` was. The pattern
   * itself is matched against the path relative to `cwd` (or to `/` for a pattern starting
   * with `/`).
   */
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
  /**
   * Give up with ETIMEDOUT after this many milliseconds (default 30,000), checked between
   * chunks: a search over a huge tree cannot hold the caller forever.
   */
  readonly timeoutMs?: number
  /** Give up with EFBIG after scanning this many bytes (default 1 GiB). */
  readonly maxBytes?: number
}

/** Default time budget of one grep call, in milliseconds. */
export const GREP_TIMEOUT_MS = 30_000
/** Default byte budget of one grep call. */
export const GREP_MAX_BYTES = 1 << 30

/** One matching line. */
export interface GrepMatch {
  /** Absolute path of the file. */
  readonly path: string
  /** 1-based line number. */
  readonly line: number
  readonly text: string
}

async function listTree(
  q: Queryable,
  ino: number,
  maxDepth: number | undefined,
  syscall: string,
  path: string,
): Promise<TreeEntry[]> {
  return walkTree(q, ino, { ...(maxDepth === undefined ? {} : { maxDepth }), syscall, path })
}

const typeOf = (mode: number): GlobMatch['type'] => {
  const type = mode & S_IFMT
  if (type === S_IFREG) return 'file'
  if (type === S_IFDIR) return 'directory'
  if (type === 0o120000) return 'symlink'
  return 'other'
}

/**
 * Matches `pattern` (`*`, `**`, `?`, `{a,b}`, `[...]`) below `cwd`. The static prefix of the
 * pattern is resolved first and the rest of the tree is walked level by level, to the
 * pattern's depth when it has no `**`. Matching cannot backtrack (see `compileGlob`).
 */
export async function glob(
  q: Queryable,
  pattern: string,
  options: GlobOptions = {},
): Promise<GlobMatch[]> {
  if (typeof pattern !== 'string' || pattern.length === 0)
    throw fsError('EINVAL', 'glob', String(pattern), {
      hint: 'the pattern must be a non-empty string',
    })
  const cwd = normalizePath(options.cwd ?? '/', 'glob')
  // Compiling first refuses a bad pattern before anything is read.
  const matcher = compileGlob(pattern.startsWith('/') ? pattern.slice(1) : pattern, {
    dot: options.dot ?? false,
  })
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
        path: absolute,
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
  const maxDepth = rest.includes('**') ? undefined : rest.split('/').length
  const prefix = normalizePath(start, 'glob')
  const out: GlobMatch[] = []
  const rows = await walkTree(q, root.node.ino, {
    ...(maxDepth === undefined ? {} : { maxDepth }),
    syscall: 'glob',
    path: pattern,
  })
  for (const row of rows) {
    if (options.onlyFiles && (row.mode & S_IFMT) !== S_IFREG) continue
    const absolute = joinPath(prefix, row.rel)
    const relative = pattern.startsWith('/') ? absolute.slice(1) : relativeTo(cwd, absolute)
    if (!matcher(relative)) continue
    out.push({
      path: absolute,
      type: typeOf(row.mode),
      size: row.size,
      mtimeMs: row.mtime * 1000 + row.mtime_nsec / 1e6,
    })
  }
  return out.sort((a, b) => compareCodePoints(a.path, b.path))
}

function relativeTo(dir: string, path: string): string {
  return dir === '/' ? path.slice(1) : path.slice(dir.length + 1)
}

/** Splits a stream of text into lines in time linear in its length, however long a line is. */
export class LineSplitter {
  readonly #decoder = new TextDecoder()
  #pending: string[] = []

  /** The complete lines in `bytes` (a partial last line is kept for the next call). */
  push(bytes: Uint8Array): string[] {
    const text = this.#decoder.decode(bytes, { stream: true })
    const lines: string[] = []
    let from = 0
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', from)) {
      const piece = text.slice(from, nl)
      if (this.#pending.length > 0) {
        this.#pending.push(piece)
        lines.push(this.#pending.join(''))
        this.#pending = []
      } else lines.push(piece)
      from = nl + 1
    }
    if (from < text.length) this.#pending.push(text.slice(from))
    return lines
  }

  /** The last line, when the text did not end with a newline. */
  end(): string | undefined {
    const tail = this.#decoder.decode()
    if (tail) this.#pending.push(tail)
    if (this.#pending.length === 0) return undefined
    const last = this.#pending.join('')
    this.#pending = []
    return last
  }
}

/** The time and byte budget of one search call. */
export class SearchBudget {
  readonly #deadline: number
  readonly #maxBytes: number
  #bytes = 0

  constructor(
    readonly syscall: string,
    options: { timeoutMs?: number; maxBytes?: number },
  ) {
    this.#deadline = Date.now() + (options.timeoutMs ?? GREP_TIMEOUT_MS)
    this.#maxBytes = options.maxBytes ?? GREP_MAX_BYTES
  }

  /** Counts `bytes` scanned; throws when the budget is spent. */
  spend(bytes: number, path: string): void {
    this.#bytes += bytes
    if (this.#bytes > this.#maxBytes)
      throw fsError('EFBIG', this.syscall, path, {
        hint: `the search read more than ${this.#maxBytes} bytes; narrow it with a path or a glob`,
      })
    if (Date.now() > this.#deadline)
      throw fsError('ETIMEDOUT', this.syscall, path, {
        hint: 'the search ran out of time; narrow it with a path or a glob',
      })
  }
}

/**
 * Searches file contents line by line, like `grep -rn`. Binary files (a NUL byte in their
 * first chunk) are skipped. Regular expressions use RE2 syntax and run in linear time. For a
 * case-sensitive literal, candidate files are found inside the engine first (`instr` over each
 * chunk joined with the head of the next, so matches across chunk boundaries count) and only
 * those are read.
 */
export async function grep(
  q: Queryable,
  format: ChunkFormat,
  pattern: string | RegExp,
  options: GrepOptions = {},
): Promise<GrepMatch[]> {
  const base = normalizePath(options.path ?? '/', 'grep')
  const regex = compileRegex(pattern, options)
  const fileFilter = options.glob
    ? compileGlob(options.glob, { dot: true, matchBase: !options.glob.includes('/') })
    : undefined
  const budget = new SearchBudget('grep', options)
  const found = await lookup(q, base, { followLast: true, syscall: 'grep' })
  const node = found.node
  if (!node) throw corruptError('grep', base, 'the directory has no inode row')
  let files: Array<{ path: string; ino: number; size: number }>
  if (isDir(node.mode)) {
    files = (await listTree(q, node.ino, undefined, 'grep', base))
      .filter((row) => (row.mode & S_IFMT) === S_IFREG && (!fileFilter || fileFilter(row.rel)))
      .map((row) => ({ path: joinPath(base, row.rel), ino: row.ino, size: row.size }))
      .sort((a, b) => compareCodePoints(a.path, b.path))
  } else {
    files = [{ path: base, ino: node.ino, size: node.size }]
  }
  const literal =
    typeof pattern === 'string' && (options.fixedStrings || !/[.*+?^${}()|[\]\\]/.test(pattern))
      ? pattern
      : undefined
  // The engine finds a literal in plain chunks itself; compressed chunks are searched decoded.
  if (
    literal !== undefined &&
    !format.codec &&
    !options.ignoreCase &&
    literal.length > 0 &&
    files.length > 0
  ) {
    const needle = Buffer.from(literal)
    const candidates = new Set<number>()
    for (let i = 0; i < files.length; i += 500) {
      const batch = files.slice(i, i + 500)
      const { rows } = await q.execute<{ ino: number }>({
        sql: `SELECT DISTINCT a.ino AS ino FROM fs_data a
LEFT JOIN fs_data b ON b.ino = a.ino AND b.chunk_index = a.chunk_index + 1
WHERE a.ino IN (${placeholders(batch.length)})
  AND instr(CAST(a.data || COALESCE(substr(b.data, 1, ?), X'') AS BLOB), ?) > 0`,
        params: [...batch.map((f) => f.ino), Math.max(0, needle.length - 1), needle],
      })
      for (const row of rows) candidates.add(row.ino)
      budget.spend(0, base)
    }
    files = files.filter((f) => candidates.has(f.ino))
  }
  const out: GrepMatch[] = []
  const limit = options.maxMatches ?? Number.POSITIVE_INFINITY
  for (const file of files) {
    const lines = new LineSplitter()
    let line = 0
    let first = true
    let binary = false
    for (let index = 0; index * format.size < file.size && !binary; index += 64) {
      // Values bound through subqueries (ARCHITECTURE.md, "Statement shapes").
      const { rows } = await q.execute<{ data: unknown }>({
        sql: 'SELECT data FROM fs_data WHERE ino = (SELECT ?) AND chunk_index >= (SELECT ?) AND chunk_index < (SELECT ?) ORDER BY chunk_index',
        params: [file.ino, index, index + 64],
      })
      for (const row of rows) {
        const data = decodeChunk(format, row.data, file.ino, 'grep', file.path)
        budget.spend(data.byteLength, file.path)
        if (first) {
          first = false
          if (data.includes(0)) {
            binary = true
            break
          }
        }
        for (const content of lines.push(data)) {
          line++
          if (regex.test(content)) {
            out.push({ path: file.path, line, text: content })
            if (out.length >= limit) return out
          }
        }
      }
    }
    if (binary) continue
    const last = lines.end()
    if (last !== undefined && last.length > 0) {
      line++
      if (regex.test(last)) {
        out.push({ path: file.path, line, text: last })
        if (out.length >= limit) return out
      }
    }
  }
  return out
}
