import { constants } from 'node:fs'
import { createToolEnvironment, ToolFailure } from '@agentfs/agent-tools'
import { isAgentFsError, isFsError, parentPath } from '@agentfs/core'
import type { FileSystem } from '@agentfs/fs'
import type {
  CopyOptions,
  FileContent,
  FileEntry,
  FileStat,
  FilesystemGrepOptions,
  FilesystemGrepResult,
  FilesystemInfo,
  ListOptions,
  ReadOptions,
  RemoveOptions,
  WalkEntry,
  WalkOptions,
  WriteOptions,
} from '@mastra/core/workspace'
import {
  DirectoryNotEmptyError,
  DirectoryNotFoundError,
  FileExistsError,
  FilesystemError,
  IsDirectoryError,
  MastraFilesystem,
  NotDirectoryError,
  PermissionError,
  StaleFileError,
  WorkspaceReadOnlyError,
} from '@mastra/core/workspace'
import { type AuditEntry, type AuditOptions, type ChangeSource, readAudit } from './audit.js'
import { directoryOf, mapErrors, mastraError, missingAs, parentOf } from './errors.js'
import { grepTree, listTree, MAX_DEPTH, type TreeContext } from './tree.js'

/** Options of {@link AgentFSFilesystem}. */
export interface AgentFSFilesystemOptions {
  /** Any AgentFS filesystem: `agent.fs`, an overlay, a host directory. */
  readonly fs: FileSystem
  /** Identifier (default: generated). */
  readonly id?: string
  /** The agent's `/` is this directory of `fs` (a chroot). */
  readonly root?: string
  /** Only paths under these (after `root`) may be read or written. */
  readonly allowedRoots?: readonly string[]
  /** Refuse every change with Mastra's `WorkspaceReadOnlyError`. */
  readonly readOnly?: boolean
  /** Text for the agent's tool descriptions (default: describes the paths and limits). */
  readonly instructions?: string
  /** Most entries one recursive listing, walk or grep visits (default 100,000): a bound on any tree. */
  readonly maxEntries?: number
  /**
   * The change feed (`agent.changes`): with it, `getHistory` and `count` (Mastra's optional
   * filesystem audit) answer from the feed — every change inside the workspace, newest first.
   */
  readonly changes?: ChangeSource
}

const DEFAULT_MAX_ENTRIES = 100_000

/**
 * AgentFS as a Mastra workspace filesystem: `new Workspace({ filesystem: new
 * AgentFSFilesystem({ fs: agent.fs }) })`. Every change is one transaction of the database (and
 * so lands in the change feed, versions and snapshots); `root`/`allowedRoots` confine the agent,
 * checked where paths really lead (symlinks included) and, on a database filesystem, again inside
 * each change's transaction. Failures are Mastra's errors (`FileNotFoundError`,
 * `PermissionError`, `WorkspaceReadOnlyError`, …).
 */
export class AgentFSFilesystem extends MastraFilesystem {
  readonly id: string
  readonly name = 'AgentFS'
  readonly provider = 'agentfs'
  readonly readOnly: boolean
  readonly displayName = 'AgentFS'
  readonly description = 'Files in an AgentFS database: audited, versioned, policy-checked'
  status: 'pending' | 'initializing' | 'ready' | 'destroying' | 'destroyed' | 'error' = 'pending'
  readonly #env: ReturnType<typeof createToolEnvironment>
  readonly #options: AgentFSFilesystemOptions
  readonly #maxEntries: number

  constructor(options: AgentFSFilesystemOptions) {
    super({ name: 'AgentFSFilesystem' })
    this.#options = options
    this.id =
      options.id ?? `agentfs-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`
    this.readOnly = options.readOnly === true
    this.#maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES
    this.#env = createToolEnvironment({
      fs: options.fs,
      ...(options.root === undefined ? {} : { root: options.root }),
      ...(options.allowedRoots === undefined ? {} : { allowedRoots: options.allowedRoots }),
      readOnly: this.readOnly,
    })
  }

  get #fs(): FileSystem {
    return this.#env.fs
  }

  /**
   * Mastra's filesystem audit: the changes made inside the workspace, newest first, from the
   * change feed (the `changes` option), filtered by operation, path prefix and time, paged.
   * Every change is there, by any writer, attributed (`metadata`: session, tool call).
   */
  async getHistory(options?: AuditOptions): Promise<AuditEntry[]> {
    return (await readAudit(this.#feed(), this.#scope(), options)).entries
  }

  /** How many audit entries match (at most the feed rows one call reads, 1,000,000). */
  async count(options?: Omit<AuditOptions, 'limit' | 'offset'>): Promise<number> {
    return (await readAudit(this.#feed(), this.#scope(), options, true)).count
  }

  #feed(): ChangeSource {
    const feed = this.#options.changes
    if (!feed)
      throw new FilesystemError(
        'no audit history: pass the change feed as the changes option (new AgentFSFilesystem({ fs: agent.fs, changes: agent.changes }))',
        'ENOTSUP',
        '/',
      )
    return feed
  }

  #scope() {
    return { root: this.#options.root ?? '/', allowed: this.#options.allowedRoots ?? ['/'] }
  }

  /** The filesystem path of an agent path, or Mastra's PermissionError when it is outside. */
  async #resolve(path: string, operation: string): Promise<string> {
    try {
      return await this.#env.paths.resolve(path, this.#options.fs)
    } catch (error) {
      if (error instanceof ToolFailure && error.code === 'EACCES')
        throw new PermissionError(
          path,
          `${operation} (${/path traversal/.test(error.message) ? 'path traversal: .. climbs above the workspace root' : "outside the workspace's allowed paths"})`,
        )
      if (error instanceof ToolFailure)
        throw new FilesystemError(error.message.replace(/^Error: /, ''), error.code, path)
      throw error
    }
  }

  #writable(operation: string): void {
    if (this.readOnly) throw new WorkspaceReadOnlyError(operation)
  }

  async readFile(path: string, options?: ReadOptions): Promise<string | Buffer> {
    await this.ensureReady()
    const p = await this.#resolve(path, 'readFile')
    return mapErrors(path, 'readFile', async () => {
      if (options?.encoding) return await this.#fs.readFile(p, options.encoding as 'utf8')
      return await this.#fs.readFile(p)
    })
  }

  async writeFile(path: string, content: FileContent, options?: WriteOptions): Promise<void> {
    await this.ensureReady()
    this.#writable('writeFile')
    const p = await this.#resolve(path, 'writeFile')
    await mapErrors(path, 'writeFile', async () => {
      if (options?.recursive === false) await this.#directoryOf(path, p)
      else await this.#fs.mkdir(parentPath(p), { recursive: true })
      let ifMatch: string | undefined
      if (options?.expectedMtime) {
        const current = await this.#fs.stat(p).catch(missingAs(undefined))
        if (current && current.mtime.getTime() !== options.expectedMtime.getTime())
          throw new StaleFileError(path, options.expectedMtime, current.mtime)
        ifMatch = current?.version
      }
      try {
        await this.#fs.writeFile(p, bytes(content), {
          ...(options?.overwrite === false ? { flag: 'wx' as const } : {}),
          ...(ifMatch === undefined ? {} : { ifMatch }),
        })
      } catch (error) {
        // The version check runs in the write's transaction: a change since the stat is stale.
        if (isAgentFsError(error, 'CONFLICT') && options?.expectedMtime) {
          const now = await this.#fs.stat(p)
          throw new StaleFileError(path, options.expectedMtime, now.mtime)
        }
        throw error
      }
    })
  }

  async appendFile(path: string, content: FileContent): Promise<void> {
    await this.ensureReady()
    this.#writable('appendFile')
    const p = await this.#resolve(path, 'appendFile')
    await mapErrors(path, 'appendFile', async () => {
      await this.#fs.mkdir(parentPath(p), { recursive: true })
      await this.#fs.appendFile(p, bytes(content))
    })
  }

  async deleteFile(path: string, options?: RemoveOptions): Promise<void> {
    await this.ensureReady()
    this.#writable('deleteFile')
    const p = await this.#resolve(path, 'deleteFile')
    await mapErrors(path, 'deleteFile', async () => {
      try {
        const st = await this.#fs.lstat(p)
        if (st.isDirectory()) throw new IsDirectoryError(path)
        await this.#fs.unlink(p)
      } catch (error) {
        if (options?.force && isFsError(error, 'ENOENT')) return
        throw error
      }
    })
  }

  async copyFile(src: string, dest: string, options?: CopyOptions): Promise<void> {
    await this.ensureReady()
    this.#writable('copyFile')
    const from = await this.#resolve(src, 'copyFile')
    const to = await this.#resolve(dest, 'copyFile')
    await mapErrors(src, 'copyFile', async () => {
      const st = await this.#fs.stat(from)
      await this.#fs.mkdir(parentPath(to), { recursive: true })
      if (st.isDirectory()) {
        if (!options?.recursive) throw new IsDirectoryError(src)
        // An existing destination file is kept when overwrite is false, as Mastra's local one does.
        await this.#fs.cp(from, to, {
          recursive: true,
          force: options.overwrite !== false,
          verbatimSymlinks: true,
        })
        return
      }
      try {
        await this.#fs.copyFile(
          from,
          to,
          options?.overwrite === false ? constants.COPYFILE_EXCL : 0,
        )
      } catch (error) {
        if (isFsError(error, 'EEXIST')) throw new FileExistsError(dest)
        throw error
      }
    })
  }

  async moveFile(src: string, dest: string, options?: CopyOptions): Promise<void> {
    await this.ensureReady()
    this.#writable('moveFile')
    const from = await this.#resolve(src, 'moveFile')
    const to = await this.#resolve(dest, 'moveFile')
    await mapErrors(src, 'moveFile', async () => {
      await this.#fs.lstat(from)
      await this.#fs.mkdir(parentPath(to), { recursive: true })
      if (options?.overwrite === false && (await this.#fs.lstat(to).catch(missingAs(undefined))))
        throw new FileExistsError(dest)
      await this.#fs.rename(from, to)
    })
  }

  async mkdir(path: string, options?: { recursive?: boolean }): Promise<void> {
    await this.ensureReady()
    this.#writable('mkdir')
    const p = await this.#resolve(path, 'mkdir')
    try {
      await this.#fs.mkdir(p, { recursive: options?.recursive ?? true })
    } catch (error) {
      if (isFsError(error, 'EEXIST')) {
        if ((await this.#fs.stat(p).catch(missingAs(undefined)))?.isDirectory()) return
        throw new FileExistsError(path)
      }
      if (isFsError(error, 'ENOENT')) throw new DirectoryNotFoundError(parentOf(path))
      throw mastraError(error, path, 'mkdir')
    }
  }

  async rmdir(path: string, options?: RemoveOptions): Promise<void> {
    await this.ensureReady()
    this.#writable('rmdir')
    const p = await this.#resolve(path, 'rmdir')
    // The workspace's / (with a root: that directory) is never removed, as without a root.
    if (this.#env.paths.display(p) === '/')
      throw new PermissionError(path, 'rmdir (the root directory cannot be removed)')
    try {
      const st = await this.#fs.lstat(p)
      if (!st.isDirectory()) throw new NotDirectoryError(path)
      if (options?.recursive) await this.#fs.rm(p, { recursive: true })
      else await this.#fs.rmdir(p)
    } catch (error) {
      if (isFsError(error, 'ENOENT')) {
        if (options?.force) return
        throw new DirectoryNotFoundError(path)
      }
      if (isFsError(error, 'ENOTEMPTY')) throw new DirectoryNotEmptyError(path)
      throw mastraError(error, path, 'rmdir')
    }
  }

  async readdir(path: string, options?: ListOptions): Promise<FileEntry[]> {
    await this.ensureReady()
    const p = await this.#resolve(path, 'readdir')
    const extensions = options?.extension
      ? (Array.isArray(options.extension) ? options.extension : [options.extension]).map((e) =>
          e.startsWith('.') ? e : `.${e}`,
        )
      : undefined
    const entries = await this.#list(path, p, {
      maxDepth: options?.recursive ? Math.min(options.maxDepth ?? MAX_DEPTH, MAX_DEPTH) + 1 : 1,
      includeHidden: true,
    })
    return entries
      .filter(
        (e) => !extensions || e.type === 'directory' || extensions.some((x) => e.name.endsWith(x)),
      )
      .map(({ path: relative, ...entry }) => ({ ...entry, name: relative }))
  }

  async walk(path: string, options?: WalkOptions): Promise<WalkEntry[]> {
    await this.ensureReady()
    const p = await this.#resolve(path, 'walk')
    return this.#list(path, p, {
      maxDepth: Math.min(options?.maxDepth ?? MAX_DEPTH, MAX_DEPTH),
      includeHidden: options?.includeHidden === true,
    })
  }
  async #list(
    path: string,
    p: string,
    options: { maxDepth: number; includeHidden: boolean },
  ): Promise<WalkEntry[]> {
    return listTree(this.#tree, path, p, options)
  }

  get #tree(): TreeContext {
    return {
      fs: this.#fs,
      base: this.#options.fs,
      paths: this.#env.paths,
      maxEntries: this.#maxEntries,
    }
  }

  /**
   * Lines matching `pattern` (RE2 syntax: linear time, so an agent's pattern cannot hang the
   * process; others raise UnsupportedGrepPatternError), with UTF-16 columns and context.
   */
  async grep(options: FilesystemGrepOptions): Promise<FilesystemGrepResult[]> {
    await this.ensureReady()
    const p = await this.#resolve(options.path, 'grep')
    return grepTree(this.#tree, options, p)
  }

  async exists(path: string): Promise<boolean> {
    await this.ensureReady()
    let p: string
    try {
      p = await this.#resolve(path, 'exists')
    } catch (error) {
      if (error instanceof PermissionError) return false
      throw error
    }
    return this.#fs.exists(p)
  }

  async stat(path: string): Promise<FileStat> {
    await this.ensureReady()
    const p = await this.#resolve(path, 'stat')
    const st = await mapErrors(path, 'stat', () => this.#fs.stat(p))
    const display = this.#env.paths.display(p)
    return {
      name: display === '/' ? '' : display.slice(display.lastIndexOf('/') + 1),
      path: display,
      type: st.isDirectory() ? 'directory' : 'file',
      size: st.isDirectory() ? 0 : st.size,
      createdAt: st.birthtime,
      modifiedAt: st.mtime,
    }
  }

  async realpath(path: string): Promise<string> {
    await this.ensureReady()
    const p = await this.#resolve(path, 'realpath')
    return this.#env.paths.display(await mapErrors(path, 'realpath', () => this.#fs.realpath(p)))
  }

  /** Creates `root` when it is missing (unless read-only), as Mastra's local filesystem does its base. */
  override async init(): Promise<void> {
    const root = this.#options.root
    if (root === undefined) return
    if (this.readOnly) await this.#options.fs.stat(root)
    else await this.#options.fs.mkdir(root, { recursive: true })
  }

  getInfo(): FilesystemInfo {
    return {
      id: this.id,
      name: this.name,
      provider: this.provider,
      readOnly: this.readOnly,
      status: this.status,
      ...(this.error === undefined ? {} : { error: this.error }),
      metadata: {
        ...(this.#options.root === undefined ? {} : { root: this.#options.root }),
        ...(this.#options.allowedRoots === undefined
          ? {}
          : { allowedRoots: [...this.#options.allowedRoots] }),
      },
    }
  }

  getInstructions(): string {
    if (this.#options.instructions !== undefined) return this.#options.instructions
    const parts = [
      'AgentFS filesystem (files in a database, every change recorded). Paths are absolute from "/"; relative paths start at "/".',
    ]
    if (this.#options.allowedRoots)
      parts.push(`Only these directories are accessible: ${this.#options.allowedRoots.join(', ')}.`)
    if (this.readOnly) parts.push('It is read-only.')
    return parts.join(' ')
  }
  async #directoryOf(path: string, p: string, self = false): Promise<void> {
    await directoryOf(this.#fs, path, p, self)
  }
}

const bytes = (content: FileContent): Uint8Array | string =>
  typeof content === 'string' ? content : content
