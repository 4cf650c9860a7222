import type { Change, ChangePage, ChangeQuery } from '@agentfs/core'
import type {
  Blame,
  BlameChange,
  DeletedEntry,
  FileSystem,
  FileVersion,
  Undeleted,
} from '@agentfs/fs'
import { z } from 'zod'
import { ToolFailure } from './failure.js'
import type { AgentToolDefinition } from './types.js'

/** Where `list_changes` reads from (`agent.changes`). */
export interface ChangeSource {
  since(cursor?: number, query?: ChangeQuery): Promise<ChangePage>
}

/** A filesystem that keeps history (AgentFS's own; not an overlay or a host directory). */
interface Versioned {
  history(path: string, options?: { limit?: number }): Promise<FileVersion[]>
  readFile(path: string, options: { version: string }): Promise<Buffer>
  blame?(path: string, options?: { version?: string }): Promise<Blame>
  undelete?(path: string): Promise<Undeleted>
  deleted?(dir?: string, options?: { limit?: number }): Promise<DeletedEntry[]>
}

/** Whether `fs` keeps history (the file_history and restore_version tools are offered). */
export const keepsHistory = (fs: FileSystem) =>
  typeof (fs as Partial<Versioned>).history === 'function'

/**
 * `fs` as a filesystem that keeps history and, for each of `needs`, offers that method; a
 * model-readable UNAVAILABLE failure (`what` says what it cannot do) otherwise.
 */
function versioned<K extends keyof Versioned = never>(
  fs: FileSystem,
  needs: readonly K[] = [],
  what = 'keeps no history',
): FileSystem & Versioned & Required<Pick<Versioned, K>> {
  const candidate = fs as Partial<Versioned>
  if (typeof candidate.history !== 'function')
    throw new ToolFailure('UNAVAILABLE', 'Error: this filesystem keeps no history.')
  if (needs.some((method) => typeof candidate[method] !== 'function'))
    throw new ToolFailure('UNAVAILABLE', `Error: this filesystem ${what}.`)
  return fs as unknown as FileSystem & Versioned & Required<Pick<Versioned, K>>
}

const iso = (ms: number) => new Date(ms).toISOString()

/**
 * What is known of a blame's unattributed lines, grouped by the changes they appeared between:
 * the versions between those were not kept (versions off, trimmed, or past the walk's limit),
 * or the content changed without a recorded change.
 */
function unknownRanges(b: Blame): string {
  const groups = new Map<string, { after: number | null; by: number | null; n: number }>()
  for (const l of b.lines) {
    if (l.change) continue
    const { after = null, by = null } = l.between ?? {}
    const key = `${after}:${by}`
    const group = groups.get(key) ?? { after, by, n: 0 }
    group.n++
    groups.set(key, group)
  }
  const said = [...groups.values()]
    .slice(0, 5)
    .map(
      (g) =>
        `${g.n} appeared ${g.after === null ? 'before the oldest change kept' : `after change #${g.after}`}${
          g.by === null
            ? ' (the file was changed without a recorded change since)'
            : ` and by change #${g.by}`
        }`,
    )
  return `${said.join('; ')}${groups.size > 5 ? '; …' : ''} — the versions in between are not kept (versions off, trimmed, or past the limit of versions walked)`
}

const listChanges: AgentToolDefinition<{
  since?: number | undefined
  path?: string | undefined
  limit?: number | undefined
}> = {
  name: 'list_changes',
  description:
    'List what changed in the workspace after a cursor: each change with its sequence number, time, operation (create, write, rename, unlink, kv-set, …), path(s), size and who made it (session, tool call). Pass the returned `next` as `since` to continue; omit `since` to start from the beginning. Use `path` to see one file or directory (and everything below it).',
  inputSchema: z.object({
    since: z.number().int().min(0).optional().describe('Sequence number to continue after'),
    path: z.string().optional().describe('Only changes of this path and below'),
    limit: z.number().int().min(1).optional().describe('How many (default and most: 100)'),
  }),
  mutates: false,
  needs: 'changes',
  async handler(input, env, limits) {
    const source = env.changes!
    const fsPath =
      input.path === undefined ? undefined : await env.paths.resolve(input.path, env.fs)
    const limit = Math.min(input.limit ?? limits.maxResults, limits.maxResults)
    const page = await source.since(input.since ?? 0, {
      limit,
      ...(fsPath === undefined ? {} : { path: fsPath, recursive: true, store: 'fs' as const }),
    })
    const lines: string[] = []
    const shown: Change[] = []
    for (const c of page.changes) {
      const kv = c.op.startsWith('kv-')
      if (kv && !env.kv) continue
      if (!kv) {
        const paths = [c.path, c.path2].filter((p): p is string => p !== null)
        const visible = await Promise.all(paths.map((p) => env.paths.visible(p, env.fs)))
        if (visible.includes(false)) continue
      }
      const where = kv
        ? `key ${c.path}`
        : c.path2 === null
          ? env.paths.display(c.path ?? '/')
          : `${env.paths.display(c.path ?? '/')} -> ${env.paths.display(c.path2)}`
      const who = [
        c.sessionId && `session ${c.sessionId}`,
        c.toolCallId !== null && `tool call #${c.toolCallId}`,
      ].filter(Boolean)
      lines.push(
        `#${c.seq} ${iso(Math.floor(c.atUs / 1000))} ${c.op} ${where}${c.size === null || kv ? '' : ` (${c.size} bytes)`}${who.length ? ` by ${who.join(', ')}` : ''}`,
      )
      shown.push(c)
    }
    const next = `[next: ${page.cursor}${page.more ? ', more changes follow' : ''}]`
    return {
      text:
        lines.length === 0
          ? `No changes after ${input.since ?? 0}. ${next}`
          : `${lines.join('\n')}\n${next}`,
      data: { next: page.cursor, more: page.more, count: shown.length },
    }
  },
}

const fileHistory: AgentToolDefinition<{ path: string }> = {
  name: 'file_history',
  description:
    "List a file's versions, newest first: time, operation, size, who changed it, and its version token. Versions marked (readable) can be brought back with restore_version.",
  inputSchema: z.object({ path: z.string().describe('Absolute path, e.g. /notes.md') }),
  mutates: false,
  needs: 'history',
  async handler(input, env, limits) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    const display = env.paths.display(fsPath)
    const versions = await versioned(env.fs).history(fsPath, { limit: limits.maxResults })
    if (versions.length === 0) return { text: `${display} has no recorded changes.` }
    const lines = versions.map(
      (v) =>
        `${iso(v.at)} ${v.op} ${v.size ?? '-'} bytes [version: ${v.version ?? '-'}]${v.readable ? ' (readable)' : ''}${v.toolCallId === null ? '' : ` by tool call #${v.toolCallId}`}${v.message === null ? '' : ` — ${JSON.stringify(v.message)}`}`,
    )
    return { text: `${display}:\n${lines.join('\n')}`, data: { versions: versions.length } }
  },
}

const restoreVersion: AgentToolDefinition<{
  path: string
  version: string
  expected_version?: string | undefined
}> = {
  name: 'restore_version',
  description:
    "Bring back an earlier version of a file (a version token from file_history marked readable): its content becomes the file's current content, as a new change. With expected_version, refused if the file changed since you read it.",
  inputSchema: z.object({
    path: z.string().describe('Absolute path, e.g. /notes.md'),
    version: z.string().min(1).describe('The version token to restore'),
    expected_version: z.string().optional().describe('The current version you expect'),
  }),
  mutates: true,
  needs: 'history',
  async handler(input, env) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    const display = env.paths.display(fsPath)
    const fs = versioned(env.fs)
    const bytes = await fs.readFile(fsPath, { version: input.version })
    const current = (await fs.stat(fsPath).catch(() => undefined))?.version
    const expected = input.expected_version ?? current
    try {
      await fs.writeFile(fsPath, bytes, expected === undefined ? {} : { ifMatch: expected })
    } catch (error) {
      if ((error as { code?: string }).code === 'CONFLICT') {
        const now = (await fs.stat(fsPath).catch(() => undefined))?.version ?? '(deleted)'
        // The stale-write sentence of the other writing tools (TOOL-CONTRACT.md).
        throw new ToolFailure(
          'STALE',
          `File has been modified since read (version ${expected}, now ${now}). Read it again before attempting to restore ${display}.`,
        )
      }
      throw error
    }
    const version = (await fs.stat(fsPath)).version
    return {
      text: `Restored ${display} to version ${input.version} (${bytes.length} bytes). [version: ${version}]`,
      data: { version },
    }
  },
}

const describeChange = (c: BlameChange) =>
  [
    `#${c.seq} ${iso(c.at)} ${c.op}`,
    c.sessionId && `session ${c.sessionId}`,
    c.toolCall && `tool call ${c.toolCall.name} #${c.toolCall.id}`,
    c.message && `— ${JSON.stringify(c.message)}`,
  ]
    .filter(Boolean)
    .join(' ')

const blame: AgentToolDefinition<{
  path: string
  version?: string | undefined
  offset?: number | undefined
  limit?: number | undefined
}> = {
  name: 'blame',
  description:
    "Who wrote each line of a file: for every line, the change that gave it its current text (#sequence; '?' when the history cannot say), then each change's time, session, tool call and message. Use it to find why a line is what it is before changing it. offset/limit select lines (1-based, like read_file); version blames an earlier version from file_history.",
  inputSchema: z.object({
    path: z.string().describe('Absolute path, e.g. /src/app.ts'),
    version: z.string().min(1).optional().describe('A version token from file_history'),
    offset: z.number().int().min(1).optional().describe('First line (1-based; default 1)'),
    limit: z.number().int().min(1).optional().describe('How many lines (default 2000)'),
  }),
  mutates: false,
  needs: 'history',
  async handler(input, env, limits) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    const display = env.paths.display(fsPath)
    const fs = versioned(env.fs, ['blame'], 'cannot blame')
    const b = await fs.blame(fsPath, input.version === undefined ? {} : { version: input.version })
    const from = (input.offset ?? 1) - 1
    const count = Math.min(input.limit ?? limits.maxLines, limits.maxLines)
    const width = String(b.lines.length).length
    const out: string[] = []
    const named = new Map<number, BlameChange>()
    let chars = 0
    let shown = 0
    for (const l of b.lines.slice(from, from + count)) {
      const line = `${String(l.line).padStart(width)}\t${l.change ? `#${l.change.seq}` : '?'}\t${l.text}`
      if (chars + line.length + 1 > limits.maxChars / 2) break
      out.push(line)
      chars += line.length + 1
      shown++
      if (l.change) named.set(l.change.seq, l.change)
    }
    const legend = [...named.values()].sort((x, y) => y.seq - x.seq).map(describeChange)
    const end = from + shown
    const notes = [
      end < b.lines.length && `[more lines follow: continue with offset ${end + 1}]`,
      b.unattributed > 0 &&
        `[${b.unattributed} lines marked ? have no known change: ${unknownRanges(b)}]`,
    ].filter(Boolean)
    return {
      text: `${display} (${b.lines.length} lines, version ${b.version}):\n${out.join('\n')}${
        legend.length ? `\nChanges:\n${legend.join('\n')}` : ''
      }${notes.length ? `\n${notes.join('\n')}` : ''}`,
      data: {
        version: b.version,
        lines: b.lines.length,
        unattributed: b.unattributed,
        changes: legend.length,
      },
    }
  },
}

const undelete: AgentToolDefinition<{ path: string; list?: boolean | undefined }> = {
  name: 'undelete',
  description:
    'Bring back a deleted file or directory (with everything that was in it) as it was when it was deleted, as a new change. With list: true, list instead what was deleted at or under path and can be brought back. Refused if the path exists now.',
  inputSchema: z.object({
    path: z.string().describe('The deleted path, or with list: true a directory to look under'),
    list: z.boolean().optional().describe('List what can be undeleted instead'),
  }),
  mutates: true,
  needs: 'history',
  async handler(input, env, limits) {
    const fsPath = await env.paths.resolve(input.path, env.fs)
    const display = env.paths.display(fsPath)
    const fs = versioned(env.fs, ['undelete', 'deleted'], 'cannot undelete')
    if (input.list) {
      const all = await fs.deleted(fsPath, { limit: limits.maxResults })
      const shown: DeletedEntry[] = []
      for (const d of all) if (await env.paths.visible(d.path, env.fs)) shown.push(d)
      if (shown.length === 0) return { text: `Nothing deleted at or under ${display}.` }
      return {
        text: shown
          .map(
            (d) =>
              `${env.paths.display(d.path)} deleted ${iso(d.at)} (#${d.seq}${d.toolCallId === null ? '' : `, tool call #${d.toolCallId}`}) ${d.recoverable ? `can be undeleted (from ${d.recoverable})` : 'cannot be undeleted: nothing kept it'}`,
          )
          .join('\n'),
        data: { count: shown.length },
      }
    }
    const back = await fs.undelete(fsPath)
    return {
      text: `Undeleted ${display} (${back.kind}: ${back.files} files, ${back.directories} directories, ${back.bytes} bytes), as deleted by change #${back.deletedBy}.`,
      data: { files: back.files, directories: back.directories, bytes: back.bytes },
    }
  },
}

export const HISTORY_TOOLS = [listChanges, fileHistory, blame, restoreVersion, undelete] as const
