import type { PathPolicy } from '@agentfs/agent-tools'
import { joinPath } from '@agentfs/core'
import { compileRegex, type FileSystem, GREP_MAX_BYTES, type Stats } from '@agentfs/fs'
import type { FilesystemGrepOptions, FilesystemGrepResult, WalkEntry } from '@mastra/core/workspace'
import { FilesystemError, UnsupportedGrepPatternError } from '@mastra/core/workspace'
import { directoryOf, mapErrors } from './errors.js'

/** Deepest listing, walk or grep. */
export const MAX_DEPTH = 100
/** Files larger than this are skipped by grep (generated or binary data). */
const GREP_MAX_FILE = 64 << 20

/** What the walkers need: the confined filesystem, the path policy and the bound. */
export interface TreeContext {
  /** The filesystem as confined by the policy. */
  readonly fs: FileSystem
  /** The filesystem as given (the policy judges paths on it). */
  readonly base: FileSystem
  readonly paths: PathPolicy
  readonly maxEntries: number
}

/**
 * Entries under a directory, breadth-first, names relative to it; symbolic links are reported
 * (with their target and the type they lead to inside the workspace) but never descended, so
 * a cycle cannot make the walk loop, and it stops with EFBIG after `maxEntries` entries.
 */
export async function listTree(
  ctx: TreeContext,
  path: string,
  p: string,
  options: { maxDepth: number; includeHidden: boolean },
): Promise<WalkEntry[]> {
  return mapErrors(path, 'readdir', async () => {
    await directoryOf(ctx.fs, path, p, true)
    const out: WalkEntry[] = []
    let frontier: Array<[string, string]> = [[p, '']]
    for (let depth = 1; depth <= options.maxDepth && frontier.length > 0; depth++) {
      const next: Array<[string, string]> = []
      for (const [dir, prefix] of frontier) {
        for (const dirent of await ctx.fs.readdir(dir, { withFileTypes: true })) {
          if (!options.includeHidden && dirent.name.startsWith('.')) continue
          const full = joinPath(dir, dirent.name)
          const relative = prefix === '' ? dirent.name : `${prefix}/${dirent.name}`
          const entry: WalkEntry = dirent.isSymbolicLink()
            ? await linkEntry(ctx, full, dirent.name, relative)
            : dirent.isDirectory()
              ? { name: dirent.name, path: relative, type: 'directory' }
              : {
                  name: dirent.name,
                  path: relative,
                  type: 'file',
                  size: (await ctx.fs.lstat(full)).size,
                }
          out.push(entry)
          if (out.length > ctx.maxEntries)
            throw new FilesystemError(
              `${path} holds more than ${ctx.maxEntries} entries; list a smaller directory or lower maxDepth`,
              'EFBIG',
              path,
            )
          if (entry.type === 'directory' && !entry.isSymlink) next.push([full, relative])
        }
      }
      frontier = next
    }
    return out
  })
}

async function linkEntry(
  ctx: TreeContext,
  full: string,
  name: string,
  relative: string,
): Promise<WalkEntry> {
  const symlinkTarget = await ctx.fs.readlink(full)
  let target: Stats | undefined
  // Only a target inside the workspace is looked at: a link out of it reads as a file.
  const inside = await ctx.paths.resolve(ctx.paths.display(full), ctx.base).catch(() => undefined)
  if (inside !== undefined) target = await ctx.fs.stat(full).catch(() => undefined)
  return {
    name,
    path: relative,
    type: target?.isDirectory() ? 'directory' : 'file',
    isSymlink: true,
    symlinkTarget,
  }
}

/** Lines matching an RE2 pattern under a directory (or in one file), with columns and context. */
export async function grepTree(
  ctx: TreeContext,
  options: FilesystemGrepOptions,
  p: string,
): Promise<FilesystemGrepResult[]> {
  let matcher: ReturnType<typeof compileRegex>
  try {
    // RE2: linear time on any input, so an agent's pattern cannot hang the process.
    matcher = compileRegex(options.pattern, { ignoreCase: !options.caseSensitive })
  } catch (error) {
    throw new UnsupportedGrepPatternError(options.pattern, (error as Error).message)
  }
  const total = options.maxTotalMatches ?? Number.POSITIVE_INFINITY
  const perFile = options.maxCountPerFile ?? Number.POSITIVE_INFINITY
  const context = Math.max(0, Math.floor(options.contextLines ?? 0))
  return mapErrors(options.path, 'grep', async () => {
    const st = await ctx.fs.stat(p)
    const files = st.isDirectory()
      ? (
          await listTree(ctx, options.path, p, {
            maxDepth: MAX_DEPTH,
            includeHidden: options.includeHidden,
          })
        )
          .filter((e) => e.type === 'file' && !e.isSymlink)
          .map((e) => [joinPath(p, e.path), e.path] as const)
      : [[p, p.slice(p.lastIndexOf('/') + 1)] as const]
    const results: FilesystemGrepResult[] = []
    let found = 0
    let scanned = 0
    for (const [file, relative] of files) {
      if (found >= total) break
      const size = (await ctx.fs.lstat(file)).size
      if (size > GREP_MAX_FILE) continue
      scanned += size
      if (scanned > GREP_MAX_BYTES)
        throw new FilesystemError(
          `grep would read more than ${GREP_MAX_BYTES} bytes under ${options.path}; search a smaller directory`,
          'EFBIG',
          options.path,
        )
      const text = await ctx.fs.readFile(file, 'utf8').catch(() => undefined)
      if (text === undefined || text.includes('\0')) continue
      const lines = text.split(/\r?\n/)
      if (text.endsWith('\n')) lines.pop()
      const matches: FilesystemGrepResult['matches'] = []
      for (let i = 0; i < lines.length && matches.length < perFile && found < total; i++) {
        const column = matcher.search(lines[i]!)
        if (column < 0) continue
        found++
        matches.push({
          line: i + 1,
          column,
          text: lines[i]!,
          ...(context > 0
            ? {
                before: lines.slice(Math.max(0, i - context), i),
                after: lines.slice(i + 1, i + 1 + context),
              }
            : {}),
        })
      }
      if (matches.length > 0) results.push({ path: relative, matches })
    }
    return results
  })
}
