import { joinPath } from '@agentfs/core'
import { compileRegex, type Dirent, type FileSystem, type MimeInfo } from '@agentfs/fs'
import { z } from 'zod'
import { ToolFailure } from './failure.js'
import { dirnameOf } from './posix.js'
import { cap, splitLines } from './text.js'
import type { AgentToolDefinition } from './types.js'

const typeName = (s: { isDirectory(): boolean; isSymbolicLink(): boolean; isFile(): boolean }) =>
  s.isDirectory() ? 'directory' : s.isSymbolicLink() ? 'symlink' : s.isFile() ? 'file' : 'special'

const listDirectory: AgentToolDefinition<{
  path?: string | undefined
  depth?: number | undefined
}> = {
  name: 'list_directory',
  description:
    'List a directory: one entry per line with its type and size; directories end with `/`. `depth` (default 1) lists subdirectories too, indented.',
  inputSchema: z.object({
    path: z.string().optional().describe('Directory to list (default /)'),
    depth: z.number().int().min(1).max(10).optional().describe('Levels to descend (default 1)'),
  }),
  mutates: false,
  needs: 'fs',
  async handler(input, env, limits) {
    const fsPath = await env.paths.resolve(input.path ?? '/', env.fs)
    const stats = await env.fs.stat(fsPath)
    if (!stats.isDirectory())
      throw new ToolFailure(
        'ENOTDIR',
        `Error: ${env.paths.display(fsPath)} is a file, not a directory. Use read_file to read it.`,
      )
    const lines: string[] = []
    const max = Math.max(limits.maxResults, 1000)
    let truncated = false
    const walk = async (dir: string, level: number) => {
      for (const entry of (await env.fs.readdir(dir, { withFileTypes: true })) as Dirent[]) {
        if (lines.length >= max) {
          truncated = true
          return
        }
        const full = joinPath(dir, entry.name)
        const indent = '  '.repeat(level)
        if (entry.isDirectory()) {
          lines.push(`${indent}${entry.name}/`)
          if (level + 1 < (input.depth ?? 1)) await walk(full, level + 1)
        } else {
          const s = await env.fs.lstat(full)
          lines.push(
            `${indent}${entry.name}${entry.isSymbolicLink() ? ` -> ${await env.fs.readlink(full)}` : ''}  (${typeName(s)}, ${s.size} bytes)`,
          )
        }
      }
    }
    await walk(fsPath, 0)
    const header = `${env.paths.display(fsPath)}:`
    if (lines.length === 0) return { text: `${header}\n(empty directory)` }
    return {
      text: cap(
        `${header}\n${lines.join('\n')}${truncated ? `\n… [truncated at ${max} entries]` : ''}`,
        limits.maxChars,
        'list a subdirectory',
      ),
    }
  },
}

const glob: AgentToolDefinition<{ pattern: string; path?: string | undefined }> = {
  name: 'glob',
  description:
    'Find files by name pattern (`*`, `**`, `?`, `{a,b}`), e.g. `**/*.ts`. Returns matching paths, most recently modified first, at most 100.',
  inputSchema: z.object({
    pattern: z.string().describe('Glob pattern, relative to path'),
    path: z.string().optional().describe('Directory to search (default /)'),
  }),
  mutates: false,
  needs: 'fs',
  async handler(input, env, limits) {
    // An absolute pattern is the model's: relative to its `/`, which may be a root directory.
    const absolute = input.pattern.startsWith('/')
    const cwd = await env.paths.resolve(absolute ? '/' : (input.path ?? '/'), env.fs)
    const pattern = absolute ? input.pattern.replace(/^\/+/, '') || '*' : input.pattern
    const found = await env.fs.glob(pattern, { cwd, onlyFiles: true })
    // An absolute pattern or a link in its static part can reach outside: show only what may be seen.
    const matches: typeof found = []
    for (const m of found) if (await env.paths.visible(m.path, env.fs)) matches.push(m)
    matches.sort((a, b) => b.mtimeMs - a.mtimeMs || (a.path < b.path ? -1 : 1))
    if (matches.length === 0)
      return {
        text: `No files match ${input.pattern} in ${env.paths.display(cwd)}.`,
        data: { truncated: false },
      }
    const shown = matches.slice(0, limits.maxResults)
    const truncated = matches.length > shown.length
    const lines = shown.map((m) => env.paths.display(m.path))
    return {
      text: `${lines.join('\n')}${truncated ? `\n… [${matches.length - shown.length} more — narrow the pattern or path]` : ''}`,
      data: { truncated, count: matches.length },
    }
  },
}

const grepSchema = z.object({
  pattern: z.string().describe('Regular expression (JavaScript syntax)'),
  path: z.string().optional().describe('File or directory to search (default /)'),
  glob: z.string().optional().describe('Only files matching this glob, e.g. *.ts'),
  output_mode: z
    .enum(['files_with_matches', 'content', 'count'])
    .optional()
    .describe('default files_with_matches'),
  '-i': z.boolean().optional().describe('Case-insensitive'),
  '-n': z.boolean().optional().describe('Show line numbers (content mode; default true)'),
  '-A': z.number().int().min(0).optional().describe('Lines of context after each match'),
  '-B': z.number().int().min(0).optional().describe('Lines of context before each match'),
  '-C': z.number().int().min(0).optional().describe('Lines of context around each match'),
  head_limit: z.number().int().min(1).optional().describe('Print at most this many lines/entries'),
})

const grep: AgentToolDefinition<z.infer<typeof grepSchema>> = {
  name: 'grep',
  description:
    'Search file contents with a regular expression, like ripgrep. output_mode: files_with_matches (default: paths), content (matching lines as path:line:text, with -A/-B/-C context), count (path:count). -i ignores case.',
  inputSchema: grepSchema,
  mutates: false,
  needs: 'fs',
  async handler(input, env, limits) {
    const base = await env.paths.resolve(input.path ?? '/', env.fs)
    try {
      compileRegex(input.pattern)
    } catch (error) {
      throw new ToolFailure(
        'EINVAL',
        `Error: invalid regular expression (RE2 syntax, no backreferences or lookaround): ${(error as Error).message}`,
      )
    }
    const matches = []
    const seen = new Map<string, boolean>()
    for (const m of await env.fs.grep(input.pattern, {
      path: base,
      ...(input.glob === undefined ? {} : { glob: input.glob }),
      ignoreCase: input['-i'] ?? false,
    })) {
      let ok = seen.get(m.path)
      if (ok === undefined) {
        ok = await env.paths.visible(m.path, env.fs)
        seen.set(m.path, ok)
      }
      if (ok) matches.push(m)
    }
    const mode = input.output_mode ?? 'files_with_matches'
    const limit = input.head_limit ?? Number.POSITIVE_INFINITY
    let lines: string[]
    if (mode === 'files_with_matches') {
      lines = [...new Set(matches.map((m) => env.paths.display(m.path)))]
    } else if (mode === 'count') {
      const counts = new Map<string, number>()
      for (const m of matches) counts.set(m.path, (counts.get(m.path) ?? 0) + 1)
      lines = [...counts].map(([p, n]) => `${env.paths.display(p)}:${n}`)
    } else {
      const before = input['-B'] ?? input['-C'] ?? 0
      const after = input['-A'] ?? input['-C'] ?? 0
      const numbers = input['-n'] ?? true
      lines = []
      const byFile = new Map<string, number[]>()
      for (const m of matches) byFile.set(m.path, [...(byFile.get(m.path) ?? []), m.line])
      for (const [file, hits] of byFile) {
        const text =
          before || after ? splitLines((await env.fs.readFile(file)).toString('utf8')) : undefined
        const shown = new Set<number>()
        for (const hit of hits) {
          for (let n = Math.max(1, hit - before); n <= hit + after; n++) {
            if (text && n > text.length) break
            if (shown.has(n)) continue
            shown.add(n)
            const content = text
              ? text[n - 1]!
              : matches.find((m) => m.path === file && m.line === n)!.text
            const sep = hits.includes(n) ? ':' : '-'
            lines.push(`${env.paths.display(file)}${sep}${numbers ? `${n}${sep}` : ''}${content}`)
          }
        }
      }
    }
    if (lines.length === 0)
      return { text: `No matches for /${input.pattern}/ in ${env.paths.display(base)}.` }
    const total = lines.length
    lines = lines.slice(0, Math.min(limit, 10_000))
    return {
      text: cap(
        `${lines.join('\n')}${total > lines.length ? `\n… [${total - lines.length} more — use head_limit or a narrower path]` : ''}`,
        limits.maxChars,
        'narrow the search',
      ),
    }
  },
}

const mkdir: AgentToolDefinition<{ path: string }> = {
  name: 'mkdir',
  description: 'Create a directory, with any missing parents. Succeeds if it already exists.',
  inputSchema: z.object({ path: z.string().describe('Directory to create') }),
  mutates: true,
  needs: 'fs',
  async handler(input, env) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    await env.fs.mkdir(fsPath, { recursive: true })
    return { text: `Directory ${env.paths.display(fsPath)} exists.` }
  },
}

const del: AgentToolDefinition<{ path: string; recursive?: boolean | undefined }> = {
  name: 'delete',
  description: 'Delete a file, a symlink, or a directory (non-empty ones need recursive: true).',
  inputSchema: z.object({ path: z.string(), recursive: z.boolean().optional() }),
  mutates: true,
  needs: 'fs',
  async handler(input, env) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    if (env.paths.display(fsPath) === '/')
      throw new ToolFailure('EPERM', 'Error: the root directory cannot be deleted.')
    const stats = await env.fs.lstat(fsPath)
    if (stats.isDirectory() && !input.recursive) await env.fs.rmdir(fsPath)
    else await env.fs.rm(fsPath, { recursive: input.recursive ?? false })
    return { text: `Deleted ${env.paths.display(fsPath)}.` }
  },
}

/** move and copy: both paths resolved, the source must exist, the destination's parents are made. */
function transferTool(
  name: string,
  description: string,
  done: string,
  act: (fs: FileSystem, from: string, to: string) => Promise<void>,
): AgentToolDefinition<{ from: string; to: string }> {
  return {
    name,
    description,
    inputSchema: z.object({ from: z.string(), to: z.string() }),
    mutates: true,
    needs: 'fs',
    async handler(input, env) {
      const from = await env.paths.resolve(input.from, env.fs)
      const to = await env.paths.resolve(input.to, env.fs)
      await env.fs.lstat(from)
      await env.fs.mkdir(dirnameOf(to), { recursive: true })
      await act(env.fs, from, to)
      return { text: `${done} ${env.paths.display(from)} to ${env.paths.display(to)}.` }
    },
  }
}

const move = transferTool(
  'move',
  "Move or rename a file or directory; the destination's parent directories are created. An existing destination file is replaced.",
  'Moved',
  (fs, from, to) => fs.rename(from, to),
)

const copy = transferTool(
  'copy',
  "Copy a file or a whole directory tree; the destination's parent directories are created.",
  'Copied',
  (fs, from, to) => fs.cp(from, to, { recursive: true, verbatimSymlinks: true }),
)

const stat: AgentToolDefinition<{ path: string }> = {
  name: 'stat',
  description: 'Metadata of a path: type, size, permissions, modification time and version token.',
  inputSchema: z.object({ path: z.string() }),
  mutates: false,
  needs: 'fs',
  async handler(input, env) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    const s = await env.fs.lstat(fsPath)
    // A database filesystem knows a file's media type (stored, or derived from name and content).
    const typed = env.fs as typeof env.fs & { mimeType?: (path: string) => Promise<MimeInfo> }
    const media =
      s.isFile() && typeof typed.mimeType === 'function' ? await typed.mimeType(fsPath) : undefined
    const data = {
      type: typeName(s),
      size: s.size,
      mode: (s.mode & 0o7777).toString(8),
      mtime: s.mtime.toISOString(),
      version: s.version,
      ...(media === undefined
        ? {}
        : {
            mime_type: `${media.mimeType}${media.stored ? '' : ' (derived)'}`,
            content_type: media.contentType,
          }),
    }
    return {
      text: Object.entries({ path: env.paths.display(fsPath), ...data })
        .map(([k, v]) => `${k}: ${v}`)
        .join('\n'),
      data,
    }
  },
}

export const TREE_TOOLS = [listDirectory, glob, grep, mkdir, del, move, copy, stat] as const
