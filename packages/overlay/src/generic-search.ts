import { joinPath, normalizePath } from '@agentfs/core'
import {
  compareCodePoints,
  compileGlob,
  compileRegex,
  type Dirent,
  dirClosedError,
  type FileSystem,
  type FsDir,
  type GlobMatch,
  type GlobOptions,
  type GrepMatch,
  type GrepOptions,
  LineSplitter,
  SearchBudget,
} from '@agentfs/fs'

/**
 * `opendir` for any filesystem, from one `readdir`: entries in listing order, `ERR_DIR_CLOSED`
 * (as Node) for a read or a second close after `close()`.
 */
export async function openListedDir(fs: Pick<FileSystem, 'readdir'>, path: string): Promise<FsDir> {
  const entries = (await fs.readdir(path, { withFileTypes: true })) as Dirent[]
  let index = 0
  let closed = false
  const dir: FsDir = {
    path: normalizePath(path),
    read: async () => {
      if (closed) throw dirClosedError()
      return entries[index++] ?? null
    },
    close: async () => {
      if (closed) throw dirClosedError()
      closed = true
    },
    async *[Symbol.asyncIterator]() {
      try {
        for (;;) {
          const entry = await dir.read()
          if (!entry) return
          yield entry
        }
      } finally {
        closed = true
      }
    },
  }
  return dir
}

type Listable = Pick<FileSystem, 'readdir' | 'lstat' | 'stat' | 'open'>

/** `glob` for any filesystem, by walking it (filesystems without SQL of their own). */
export async function walkGlob(
  fs: Listable,
  pattern: string,
  options: GlobOptions = {},
): Promise<GlobMatch[]> {
  const absolute = pattern.startsWith('/')
  const cwd = normalizePath(options.cwd ?? '/', 'glob')
  const root = absolute ? '/' : cwd
  const matcher = compileGlob(absolute ? pattern.slice(1) : pattern, { dot: options.dot ?? false })
  const entries = (await fs
    .readdir(root, { recursive: true, withFileTypes: true })
    .catch(() => [])) as Dirent[]
  const out: GlobMatch[] = []
  for (const entry of entries) {
    if (options.onlyFiles && !entry.isFile()) continue
    const full = joinPath(entry.parentPath, entry.name)
    const rel = root === '/' ? full.slice(1) : full.slice(root.length + 1)
    if (!matcher(rel)) continue
    const stats = await fs.lstat(full)
    out.push({
      path: full,
      type: stats.isFile()
        ? 'file'
        : stats.isDirectory()
          ? 'directory'
          : stats.isSymbolicLink()
            ? 'symlink'
            : 'other',
      size: stats.size,
      mtimeMs: stats.mtimeMs,
    })
  }
  return out.sort((a, b) => compareCodePoints(a.path, b.path))
}

/** `grep` for any filesystem: regular files below `path`, line by line, binary files skipped. */
export async function walkGrep(
  fs: Listable,
  pattern: string | RegExp,
  options: GrepOptions = {},
): Promise<GrepMatch[]> {
  const base = normalizePath(options.path ?? '/', 'grep')
  // Linear-time matching (RE2) and a time/byte budget, as in the database filesystem.
  const regex = compileRegex(pattern, options)
  const matcher = options.glob
    ? compileGlob(options.glob, { dot: true, matchBase: !options.glob.includes('/') })
    : undefined
  const budget = new SearchBudget('grep', options)
  const top = await fs.stat(base)
  const files = top.isDirectory()
    ? ((await fs.readdir(base, { recursive: true, withFileTypes: true })) as Dirent[])
        .filter((d) => d.isFile())
        .map((d) => joinPath(d.parentPath, d.name))
        .filter((p) => !matcher || matcher(base === '/' ? p.slice(1) : p.slice(base.length + 1)))
        .sort(compareCodePoints)
    : [base]
  const out: GrepMatch[] = []
  const limit = options.maxMatches ?? Number.POSITIVE_INFINITY
  const buffer = new Uint8Array(READ_PIECE)
  for (const file of files) {
    // Read piece by piece, each piece paid for before the next: a huge or growing file stops
    // at the budget instead of being read whole first.
    const handle = await fs.open(file, 'r')
    try {
      const lines = new LineSplitter()
      let line = 0
      const test = (text: string) => {
        line++
        if (regex.test(text)) out.push({ path: file, line, text })
        return out.length >= limit
      }
      let binary = false
      for (let position = 0; ; ) {
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, position)
        if (bytesRead === 0) break
        budget.spend(bytesRead, file)
        const piece = buffer.subarray(0, bytesRead)
        if (position === 0 && piece.subarray(0, 4096).includes(0)) {
          binary = true
          break
        }
        position += bytesRead
        for (const text of lines.push(piece)) if (test(text)) return out
      }
      const last = binary ? undefined : lines.end()
      if (last !== undefined && test(last)) return out
    } finally {
      await handle.close()
    }
  }
  return out
}

/** How much of a file `walkGrep` reads at a time. */
const READ_PIECE = 64 * 1024
