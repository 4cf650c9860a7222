import {
  auditCopy,
  climbsAboveRoot,
  createToolEnvironment,
  ToolFailure,
} from '@agentfs/agent-tools'
import { isAgentFsError, joinPath, normalizePath, parentPath, withActor } from '@agentfs/core'
import type { FileSystem, Stats } from '@agentfs/fs'
import type { ToolCalls } from '@agentfs/tool-calls'
import type {
  BackendProtocolV2,
  DeleteResult,
  EditResult,
  ExecuteResponse,
  FileDownloadResponse,
  FileInfo,
  FileUploadResponse,
  GlobResult,
  GrepResult,
  LsResult,
  ReadRawResult,
  ReadResult,
  WriteResult,
} from 'deepagents'
import { errorText, operationError, relativeInfo, summary } from './results.js'
import { mimeTypeOf, replaceString } from './text.js'

/** Options of {@link AgentFSBackend}. */
export interface AgentFSBackendOptions {
  /** Any AgentFS filesystem: `agent.fs`, an overlay, a host directory. */
  readonly fs: FileSystem
  /** The agent's `/` is this directory of `fs` (a chroot). */
  readonly root?: string
  /** Only paths under these (after `root`) may be read or written. */
  readonly allowedRoots?: readonly string[]
  /** Refuse every change (write, edit, delete, upload) with a permission error. */
  readonly readOnly?: boolean
  /** Where every operation is recorded (`agent.tools`); its changes are attributed to it. */
  readonly audit?: ToolCalls
  /** Session recorded with every operation. */
  readonly sessionId?: string
  /** Most matches `grep` and files `glob` return (default 10,000; then `truncated`). */
  readonly maxResults?: number
  /**
   * Runs a shell command, making this a sandbox backend (deepagents then offers its `execute`
   * tool): e.g. `@agentfs/just-bash`'s `agentFsSandbox(...).executeCommand`.
   */
  readonly execute?: (command: string) => Promise<{
    stdout: string
    stderr: string
    exitCode: number
  }>
  /** Identifier of the sandbox (with `execute`; default generated). */
  readonly id?: string
  /**
   * A link as the last name of a path that is read, written or edited: `'follow'` (default)
   * goes where it leads when that is inside the roots (links leading outside are refused
   * either way); `'refuse'` refuses it with deepagents' own texts (`Symlinks are not allowed:
   * …`), as its `FilesystemBackend` does with `O_NOFOLLOW`.
   */
  readonly symlinks?: 'follow' | 'refuse'
}

const DEFAULT_MAX_RESULTS = 10_000
/** Lines `read` returns when the caller gives no limit, as deepagents' own backends. */
const DEFAULT_READ_LIMIT = 500

/**
 * AgentFS as a LangChain deepagents backend (`BackendProtocolV2`): `createDeepAgent({ backend:
 * new AgentFSBackend({ fs: agent.fs }) })` keeps the agent's files in the database — every
 * change one transaction, in the change feed, versions and snapshots, `edit` checked against
 * the version it read in the same transaction. `root`/`allowedRoots` confine the agent (through
 * symlinks, also dangling ones); `readOnly` refuses changes; with `audit` every operation is
 * recorded in `tool_calls`. Failures come back as `{ error }` values, as the protocol asks.
 */
export class AgentFSBackend implements BackendProtocolV2 {
  readonly #env: ReturnType<typeof createToolEnvironment>
  readonly #options: AgentFSBackendOptions
  readonly #max: number
  /** Present with the `execute` option: deepagents then treats this as a sandbox. */
  readonly execute?: (command: string) => Promise<ExecuteResponse>
  readonly id?: string

  constructor(options: AgentFSBackendOptions) {
    this.#options = options
    this.#max = options.maxResults ?? DEFAULT_MAX_RESULTS
    this.#env = createToolEnvironment({
      fs: options.fs,
      ...(options.root === undefined ? {} : { root: options.root }),
      ...(options.allowedRoots === undefined ? {} : { allowedRoots: options.allowedRoots }),
      ...(options.readOnly === undefined ? {} : { readOnly: options.readOnly }),
    })
    const run = options.execute
    if (run) {
      this.id = options.id ?? `agentfs-${Date.now().toString(36)}`
      this.execute = (command) =>
        this.#audited('execute', { command }, async () => {
          const r = await run(command)
          return { output: r.stdout + r.stderr, exitCode: r.exitCode, truncated: false }
        })
    }
  }

  ls(path: string): Promise<LsResult> {
    return this.#audited('ls', { path }, async () => {
      const p = await this.#resolve(path)
      const st = await this.#fs.stat(p).catch(() => undefined)
      if (!st?.isDirectory()) return { files: [] }
      const files: FileInfo[] = []
      for (const d of await this.#fs.readdir(p, { withFileTypes: true })) {
        const full = joinPath(p, d.name)
        // A link is shown as what it leads to, when that is inside the agent's roots.
        const target = d.isSymbolicLink()
          ? await this.#statInside(full)
          : await this.#fs.lstat(full)
        if (target) files.push(this.#info(full, target))
      }
      return { files: files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)) }
    })
  }

  read(filePath: string, offset = 0, limit = DEFAULT_READ_LIMIT): Promise<ReadResult> {
    return this.#audited('read', { filePath, offset, limit }, async () => {
      const link = await this.#linkRefusal(filePath, `Symlinks are not allowed: ${filePath}`)
      if (link) return link
      const p = await this.#resolve(filePath)
      const st = await this.#fs.stat(p).catch(() => undefined)
      if (!st?.isFile()) return { error: `File '${filePath}' not found` }
      const mimeType = mimeTypeOf(filePath)
      // Bytes as a plain Uint8Array (not a Buffer), as deepagents' backends return them.
      if (!mimeType.text)
        return { content: new Uint8Array(await this.#fs.readFile(p)), mimeType: mimeType.type }
      const content = await this.#fs.readFile(p, 'utf8')
      if (content.trim() === '')
        return {
          content: 'System reminder: File exists but has empty contents',
          mimeType: mimeType.type,
        }
      const from = Number.isFinite(offset) ? Math.max(0, Math.floor(offset)) : 0
      const count = Number.isFinite(limit) ? Math.max(0, Math.floor(limit)) : 0
      const lines = content.split('\n')
      const total = lines[lines.length - 1] === '' ? lines.length - 1 : lines.length
      if (from >= total)
        return { error: `Line offset ${from} exceeds file length (${total} lines)` }
      const end = Math.min(from + count, total)
      const selected = lines.slice(from, Math.min(from + count, lines.length))
      if (selected.length === 0) return { content: '', mimeType: mimeType.type }
      return {
        content: selected.join('\n'),
        mimeType: mimeType.type,
        totalLines: total,
        startLine: from + 1,
        endLine: end,
        ...(end < total ? { nextOffset: end } : {}),
      }
    })
  }

  readRaw(filePath: string): Promise<ReadRawResult> {
    return this.#audited('read_raw', { filePath }, async () => {
      const link = await this.#linkRefusal(filePath, `Symlinks are not allowed: ${filePath}`)
      if (link) return link
      const p = await this.#resolve(filePath)
      const st = await this.#fs.stat(p).catch(() => undefined)
      if (!st?.isFile()) return { error: `File '${filePath}' not found` }
      const mimeType = mimeTypeOf(filePath)
      return {
        data: {
          content: mimeType.text
            ? await this.#fs.readFile(p, 'utf8')
            : new Uint8Array(await this.#fs.readFile(p)),
          mimeType: mimeType.type,
          created_at: st.birthtime.toISOString(),
          modified_at: st.mtime.toISOString(),
        },
      }
    })
  }

  write(filePath: string, content: string): Promise<WriteResult> {
    return this.#audited('write', { filePath, content }, async () => {
      const link = await this.#linkRefusal(
        filePath,
        `Cannot write to ${filePath} because it is a symlink. Symlinks are not allowed.`,
      )
      if (link) return link
      const p = await this.#resolve(filePath, true)
      await this.#fs.mkdir(parentPath(p), { recursive: true })
      // Binary types are written from base64, as deepagents' filesystem backend does.
      const data = mimeTypeOf(filePath).text ? content : Buffer.from(content, 'base64')
      await this.#fs.writeFile(p, data)
      return { path: filePath, filesUpdate: null }
    })
  }

  edit(
    filePath: string,
    oldString: string,
    newString: string,
    replaceAll = false,
  ): Promise<EditResult> {
    return this.#audited('edit', { filePath, oldString, newString, replaceAll }, async () => {
      const link = await this.#linkRefusal(filePath, `Error: Symlinks are not allowed: ${filePath}`)
      if (link) return link
      const p = await this.#resolve(filePath, true)
      const st = await this.#fs.stat(p).catch(() => undefined)
      if (!st?.isFile()) return { error: `Error: File '${filePath}' not found` }
      const content = await this.#fs.readFile(p, 'utf8')
      const replaced = replaceString(content, oldString, newString, replaceAll)
      if (typeof replaced === 'string') return { error: replaced }
      try {
        // Only if the file is still the version that was read: checked in the write's transaction.
        await this.#fs.writeFile(p, replaced[0], { ifMatch: st.version })
      } catch (error) {
        if (isAgentFsError(error, 'CONFLICT'))
          return {
            error: `Error: '${filePath}' changed while it was being edited; read it again and retry the edit.`,
          }
        throw error
      }
      return { path: filePath, filesUpdate: null, occurrences: replaced[1] }
    })
  }

  grep(
    pattern: string,
    path?: string | null,
    glob?: string | null,
    maxCount?: number | null,
  ): Promise<GrepResult> {
    return this.#audited('grep', { pattern, path, glob, maxCount }, async () => {
      const p = await this.#resolve(path || '/')
      const st = await this.#fs.stat(p).catch(() => undefined)
      if (!st) return { matches: [] }
      const cap = Math.min(maxCount ?? this.#max, this.#max)
      // Literal, as the protocol defines; a glob filters file names (at any depth).
      const found = await this.#fs.grep(pattern, {
        path: p,
        fixedStrings: true,
        ...(glob ? { glob: glob.includes('/') ? glob : `**/${glob}` } : {}),
        maxMatches: cap + 1,
      })
      const matches = []
      for (const m of found) {
        if (!mimeTypeOf(m.path).text || !(await this.#env.paths.visible(m.path, this.#fs))) continue
        matches.push({ path: this.#env.paths.display(m.path), line: m.line, text: m.text })
      }
      return matches.length > cap
        ? { matches: matches.slice(0, cap), truncated: true }
        : { matches }
    })
  }

  glob(pattern: string, path = '/'): Promise<GlobResult> {
    return this.#audited('glob', { pattern, path }, async () => {
      const p = await this.#resolve(path)
      const st = await this.#fs.stat(p).catch(() => undefined)
      if (!st?.isDirectory()) return { files: [] }
      const relative = pattern.startsWith('/') ? pattern.slice(1) : pattern
      const found = await this.#fs.glob(relative, { cwd: p, dot: true })
      // A sandbox (one that can execute) answers as deepagents' shell backends do: paths
      // relative to the searched directory, directories included.
      const sandbox = this.execute !== undefined
      const files: FileInfo[] = []
      for (const m of found) {
        if (files.length > this.#max) break
        const target = await this.#statInside(m.path)
        if (target?.isFile() || (sandbox && target?.isDirectory()))
          files.push(sandbox ? relativeInfo(p, m.path, target) : this.#info(m.path, target))
      }
      files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
      return files.length > this.#max
        ? { files: files.slice(0, this.#max), truncated: true }
        : { files }
    })
  }

  delete(filePath: string): Promise<DeleteResult> {
    return this.#audited('delete', { filePath }, async () => {
      const p = await this.#resolve(filePath, true, false)
      // The agent's / (with a root: that directory) holds the workspace; it is never removed.
      if (this.#env.paths.display(p) === '/')
        throw new ToolFailure('EPERM', 'Error: the root directory cannot be deleted.')
      const st = await this.#fs.lstat(p).catch(() => undefined)
      if (!st) return { error: `Error: '${filePath}' not found` }
      // A directory with everything in it, in one transaction; a link itself, never its target.
      await this.#fs.rm(p, { recursive: true })
      return { path: filePath, filesUpdate: null }
    })
  }

  uploadFiles(files: Array<[string, Uint8Array]>): Promise<FileUploadResponse[]> {
    return this.#audited('upload_files', { paths: files.map(([p]) => p) }, async () => {
      const out: FileUploadResponse[] = []
      for (const [path, content] of files)
        try {
          const p = await this.#resolve(path, true)
          await this.#fs.mkdir(parentPath(p), { recursive: true })
          await this.#fs.writeFile(p, content)
          out.push({ path, error: null })
        } catch (error) {
          out.push({ path, error: operationError(error) })
        }
      return out
    })
  }

  downloadFiles(paths: string[]): Promise<FileDownloadResponse[]> {
    return this.#audited('download_files', { paths }, async () => {
      const out: FileDownloadResponse[] = []
      for (const path of paths)
        try {
          const p = await this.#resolve(path)
          out.push({ path, content: new Uint8Array(await this.#fs.readFile(p)), error: null })
        } catch (error) {
          out.push({ path, content: null, error: operationError(error) })
        }
      return out
    })
  }

  get #fs(): FileSystem {
    return this.#env.fs
  }

  /**
   * The filesystem path of an agent path: refused (thrown, turned into `{ error }` by
   * {@link #audited}) when outside the roots, or a change on a read-only backend. `follow`
   * false judges a name itself (delete removes a link, not what it leads to).
   */
  async #resolve(path: string, mutates = false, follow = true): Promise<string> {
    if (mutates && this.#options.readOnly)
      throw new ToolFailure('EROFS', `Error: permission denied: '${path}' is read-only here.`)
    if (follow) return this.#env.paths.resolve(path, this.#options.fs)
    // The name itself is judged, not what it leads to: the directory it is in is resolved,
    // then the name appended. `.` and `..` are taken lexically first (above / is refused).
    if (typeof path !== 'string' || climbsAboveRoot(path))
      return this.#env.paths.resolve(path, this.#options.fs)
    const normal = normalizePath(`/${path}`)
    if (normal === '/') return this.#env.paths.resolve('/', this.#options.fs)
    const slash = normal.lastIndexOf('/')
    const dir = await this.#env.paths.resolve(normal.slice(0, slash) || '/', this.#options.fs)
    return joinPath(dir, normal.slice(slash + 1))
  }

  /** With `symlinks: 'refuse'`: `{ error: text }` when the path's last name is a link. */
  async #linkRefusal(path: string, text: string): Promise<{ error: string } | undefined> {
    if (this.#options.symlinks !== 'refuse') return undefined
    const p = await this.#resolve(path, false, false)
    const st = await this.#fs.lstat(p).catch(() => undefined)
    return st?.isSymbolicLink() ? { error: text } : undefined
  }

  /** What `full` leads to, when that is inside the roots (undefined otherwise or when missing). */
  async #statInside(full: string): Promise<Stats | undefined> {
    const inside = await this.#env.paths
      .resolve(this.#env.paths.display(full), this.#options.fs)
      .catch(() => undefined)
    return inside === undefined ? undefined : this.#fs.stat(full).catch(() => undefined)
  }

  #info(full: string, st: Stats): FileInfo {
    const path = this.#env.paths.display(full)
    return st.isDirectory()
      ? { path: `${path}/`, is_dir: true, size: 0, modified_at: st.mtime.toISOString() }
      : { path, is_dir: false, size: st.size, modified_at: st.mtime.toISOString() }
  }

  /**
   * Runs one operation: recorded once in `tool_calls` when `audit` is given (its changes
   * attributed to the call), failures returned as `{ error }` (never thrown), as the protocol
   * asks of backends.
   */
  async #audited<T extends object>(
    name: string,
    parameters: Record<string, unknown>,
    fn: () => Promise<T>,
  ): Promise<T> {
    const audit = this.#options.audit
    const startedAt = audit?.clock.now()
    const callToken = audit?.callToken()
    let result: T
    try {
      result = await withActor({ sessionId: this.#options.sessionId, callToken }, fn)
    } catch (error) {
      result = { error: errorText(error, parameters) } as T
    }
    if (audit) {
      const error = (result as { error?: string }).error
      await audit.record({
        name,
        parameters: auditCopy(parameters) as never,
        ...(error === undefined ? { result: summary(result) as never } : { error }),
        startedAt: startedAt!,
        completedAt: audit.clock.now(),
        ...(this.#options.sessionId === undefined ? {} : { sessionId: this.#options.sessionId }),
        ...(callToken === undefined ? {} : { callToken }),
      })
    }
    return result
  }
}
