import { posix } from 'node:path'
import { createToolEnvironment, type PathPolicy, ToolFailure } from '@agentfs/agent-tools'
import { isAgentFsError, POSIX_ERRORS, type PosixCode, parentPath } from '@agentfs/core'
import type { Encoding, FileSystem, Stats } from '@agentfs/fs'
import {
  type BufferEncoding,
  type CpOptions,
  DefenseInDepthBox,
  type FileContent,
  type FsStat,
  type IFileSystem,
  type MkdirOptions,
  type RmOptions,
} from 'just-bash'

type ReadFileOptions = Exclude<Parameters<IFileSystem['readFile']>[1], string | undefined>
type WriteFileOptions = Exclude<Parameters<IFileSystem['writeFile']>[2], string | undefined>
type DirentEntry = Awaited<ReturnType<NonNullable<IFileSystem['readdirWithFileTypes']>>>[number]

/** Options of {@link BashFileSystem}. */
export interface BashFileSystemOptions {
  /** Any AgentFS filesystem: `agent.fs`, an overlay, a host directory. */
  readonly fs: FileSystem
  /** The shell's `/` is this directory of `fs` (a chroot). */
  readonly root?: string
  /** Only paths under these (after `root`) may be read or written. */
  readonly allowedRoots?: readonly string[]
  /** Refuse every change with EROFS (reads, `grep`, `find`, `cat` still work). */
  readonly readOnly?: boolean
}

/** What a {@link BashFileSystem} runs on: a (confined) filesystem and the path policy. */
export interface BashFileSystemScope {
  /** The filesystem as confined by the policy (operations run here). */
  readonly fs: FileSystem
  /** The filesystem as given (the policy judges where paths lead on it). */
  readonly base: FileSystem
  readonly paths: PathPolicy
  readonly readOnly: boolean
  /**
   * A script's time limit: once it has passed, every call fails at once with ETIMEDOUT, before
   * any effect, so a loop cannot go on changing files past the limit.
   */
  readonly limit?: ScriptLimit
}

/**
 * A wall-clock limit read from the clock on every check: a loop whose filesystem calls all
 * settle as microtasks never lets a timer (or `AbortSignal.timeout`) fire, so the limit cannot
 * wait for one. `controller` is aborted at the first check past `deadline` (and by the timer,
 * when the event loop is free), so just-bash's own checks of its signal stop the script too.
 */
export class ScriptLimit {
  readonly controller = new AbortController()
  readonly deadline: number
  readonly #timer: ReturnType<typeof setTimeout>

  constructor(readonly timeoutMs: number) {
    this.deadline = Date.now() + timeoutMs
    this.#timer = setTimeout(() => this.controller.abort(), timeoutMs)
  }

  get signal(): AbortSignal {
    return this.controller.signal
  }

  /** True once the limit has passed (and the signal is aborted). */
  get expired(): boolean {
    if (!this.controller.signal.aborted && Date.now() >= this.deadline) this.controller.abort()
    return this.controller.signal.aborted
  }

  /** Stops the timer (the script ended). */
  dispose(): void {
    clearTimeout(this.#timer)
  }
}

/**
 * just-bash's `IFileSystem` over an AgentFS filesystem, so `new Bash({ fs: new
 * BashFileSystem({ fs: agent.fs }) })` runs scripts on the database: every change one
 * transaction (and so in the change feed, versions and snapshots). With `root`/`allowedRoots`
 * every path is judged where it really lands (through symlinks, dangling ones too) and refused
 * with EACCES outside; on a database filesystem the roots are enforced again inside each
 * change's transaction. Errors are just-bash's: `CODE: message, syscall 'path'` with `code` set,
 * naming the shell's path (never the filesystem's). Semantics follow just-bash's own
 * filesystems (`writeFile` creates missing parents, `rm` removes an empty directory, `cp`
 * copies links as links).
 */
export class BashFileSystem implements IFileSystem {
  readonly #scope: BashFileSystemScope

  constructor(options: BashFileSystemOptions | BashFileSystemScope) {
    if ('paths' in options) {
      this.#scope = options
      return
    }
    const env = createToolEnvironment({
      fs: options.fs,
      ...(options.root === undefined ? {} : { root: options.root }),
      ...(options.allowedRoots === undefined ? {} : { allowedRoots: options.allowedRoots }),
      ...(options.readOnly === undefined ? {} : { readOnly: options.readOnly }),
    })
    this.#scope = {
      fs: env.fs,
      base: options.fs,
      paths: env.paths,
      readOnly: options.readOnly === true,
    }
  }

  /** This filesystem for one script: every call refused once `limit` has passed. */
  withLimit(limit: ScriptLimit): BashFileSystem {
    return new BashFileSystem({ ...this.#scope, limit })
  }

  async readFile(path: string, options?: ReadFileOptions | BufferEncoding): Promise<string> {
    const encoding = typeof options === 'string' ? options : (options?.encoding ?? 'utf8')
    const data = await this.readFileBuffer(path)
    return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString(encoding)
  }

  async readFileBuffer(path: string): Promise<Uint8Array> {
    if (isDevNull(path)) return new Uint8Array(0)
    return this.#run('open', path, false, (p) => this.#fs.readFile(p))
  }

  async writeFile(
    path: string,
    content: FileContent,
    options?: WriteFileOptions | BufferEncoding,
  ): Promise<void> {
    if (isDevNull(path)) return
    await this.#run('write', path, true, async (p) => {
      await this.#fs.mkdir(parentPath(p), { recursive: true })
      await this.#fs.writeFile(p, encode(content, options))
    })
  }

  async appendFile(
    path: string,
    content: FileContent,
    options?: WriteFileOptions | BufferEncoding,
  ): Promise<void> {
    if (isDevNull(path)) return
    await this.#run('append', path, true, async (p) => {
      await this.#fs.mkdir(parentPath(p), { recursive: true })
      await this.#fs.appendFile(p, encode(content, options))
    })
  }

  async exists(path: string): Promise<boolean> {
    if (path.includes('\0')) return false
    if (isDevNull(path)) return true
    try {
      return await trusted(async () => this.#fs.exists(await this.#resolve(path, 'access')))
    } catch {
      return false
    }
  }

  async stat(path: string): Promise<FsStat> {
    if (isDevNull(path)) return DEV_NULL_STAT
    return this.#run('stat', path, false, async (p) => bashStat(await this.#fs.stat(p)))
  }

  async lstat(path: string): Promise<FsStat> {
    if (isDevNull(path)) return DEV_NULL_STAT
    return this.#run('lstat', path, false, async (p) => bashStat(await this.#fs.lstat(p)), false)
  }

  async mkdir(path: string, options?: MkdirOptions): Promise<void> {
    await this.#run('mkdir', path, true, async (p) => {
      await this.#fs.mkdir(p, { recursive: options?.recursive === true })
    })
  }

  async readdir(path: string): Promise<string[]> {
    return this.#run('scandir', path, false, (p) => this.#fs.readdir(p))
  }

  async readdirWithFileTypes(path: string): Promise<DirentEntry[]> {
    return this.#run('scandir', path, false, async (p) =>
      (await this.#fs.readdir(p, { withFileTypes: true })).map((d) => ({
        name: d.name,
        isFile: d.isFile(),
        isDirectory: d.isDirectory(),
        isSymbolicLink: d.isSymbolicLink(),
      })),
    )
  }

  async rm(path: string, options?: RmOptions): Promise<void> {
    await this.#run(
      'rm',
      path,
      true,
      async (p) => {
        // The shell's / (with a root: that directory) is never removed, as without a root.
        if (this.#scope.paths.display(p) === '/') throw bashError('EPERM', 'rm', path)
        const st = await this.#fs.lstat(p).catch((error: unknown) => {
          if (options?.force && isAgentFsError(error, 'ENOENT')) return undefined
          throw error
        })
        if (st === undefined) return
        if (!st.isDirectory()) await this.#fs.unlink(p)
        else if (options?.recursive) await this.#fs.rm(p, { recursive: true })
        else await this.#fs.rmdir(p)
      },
      false,
    )
  }

  async cp(src: string, dest: string, options?: CpOptions): Promise<void> {
    const from = await this.#resolveFor('cp', src, false, false)
    await this.#run('cp', dest, true, async (to) => {
      const st = await this.#fs.lstat(from).catch(this.#rethrow('cp', src))
      if (st.isDirectory() && !options?.recursive) throw bashError('EISDIR', 'cp', src)
      await this.#fs.mkdir(parentPath(to), { recursive: true })
      // One transaction on a database filesystem; links are copied as links, as just-bash does.
      await this.#fs.cp(from, to, {
        recursive: options?.recursive === true,
        force: true,
        verbatimSymlinks: true,
      })
    })
  }

  async mv(src: string, dest: string): Promise<void> {
    const from = await this.#resolveFor('mv', src, true, false)
    await this.#run(
      'mv',
      dest,
      true,
      async (to) => {
        if (from === to) return
        await this.#fs.lstat(from).catch(this.#rethrow('mv', src))
        await this.#fs.mkdir(parentPath(to), { recursive: true })
        await this.#fs.rename(from, to)
      },
      false,
    )
  }

  resolvePath(base: string, path: string): string {
    return posix.resolve(base, path)
  }

  /** Every path, for `ls` with a quoted glob: not offered (the interface allows an empty list). */
  getAllPaths(): string[] {
    return []
  }

  async chmod(path: string, mode: number): Promise<void> {
    await this.#run('chmod', path, true, (p) => this.#fs.chmod(p, mode))
  }

  async symlink(target: string, linkPath: string): Promise<void> {
    await this.#run(
      'symlink',
      linkPath,
      true,
      async (p) => {
        await this.#fs.mkdir(parentPath(p), { recursive: true })
        await this.#fs.symlink(target, p)
      },
      false,
    )
  }

  async link(existingPath: string, newPath: string): Promise<void> {
    const from = await this.#resolveFor('link', existingPath, true, false)
    await this.#run(
      'link',
      newPath,
      true,
      async (to) => {
        await this.#fs.mkdir(parentPath(to), { recursive: true })
        await this.#fs.link(from, to)
      },
      false,
    )
  }

  async readlink(path: string): Promise<string> {
    return this.#run('readlink', path, false, (p) => this.#fs.readlink(p), false)
  }

  async realpath(path: string): Promise<string> {
    return this.#run('realpath', path, false, async (p) =>
      this.#scope.paths.display(await this.#fs.realpath(p)),
    )
  }

  async utimes(path: string, atime: Date, mtime: Date): Promise<void> {
    await this.#run('utimes', path, true, (p) => this.#fs.utimes(p, atime, mtime))
  }

  get #fs(): FileSystem {
    return this.#scope.fs
  }

  /**
   * Runs `fn` on the filesystem path of `path` (refused before any effect when it is outside
   * the roots, or a change on a read-only shell); AgentFS errors become just-bash's, naming the
   * shell's path. `follow` is false for operations on a name itself (lstat, rm, readlink): the
   * last component is then judged by its parent.
   */
  async #run<T>(
    syscall: string,
    path: string,
    mutates: boolean,
    fn: (fsPath: string) => Promise<T>,
    follow = true,
  ): Promise<T> {
    return trusted(async () => {
      const p = await this.#resolveFor(syscall, path, mutates, follow)
      try {
        return await fn(p)
      } catch (error) {
        throw toBashError(error, syscall, path)
      }
    })
  }

  async #resolveFor(
    syscall: string,
    path: string,
    mutates: boolean,
    follow: boolean,
  ): Promise<string> {
    if (mutates && this.#scope.readOnly) throw bashError('EROFS', syscall, path)
    if (path.includes('\0')) throw bashError('EINVAL', syscall, path)
    if (follow) return this.#resolve(path, syscall)
    // A name itself (a link to remove or read) is inside when its directory is.
    const normal = posix.resolve('/', path)
    if (normal === '/') return this.#resolve(normal, syscall)
    const dir = await this.#resolve(posix.dirname(normal), syscall)
    return `${dir === '/' ? '' : dir}/${posix.basename(normal)}`
  }

  async #resolve(path: string, syscall: string): Promise<string> {
    // Every call resolves a path first: past the script's time limit, nothing more happens.
    if (this.#scope.limit?.expired) throw bashError('ETIMEDOUT', syscall, path)
    try {
      return await trusted(() => this.#scope.paths.resolve(path, this.#scope.base))
    } catch (error) {
      if (error instanceof ToolFailure) throw bashError(error.code as PosixCode, syscall, path)
      throw error
    }
  }

  #rethrow(syscall: string, path: string) {
    return (error: unknown): never => {
      throw toBashError(error, syscall, path)
    }
  }
}

/**
 * Runs filesystem code as just-bash's trusted code: during a script its defense in depth blocks
 * intrinsics such as `Function` for the script's JavaScript, and a database driver may use them
 * (better-sqlite3 13 does). The script reaches this code only through the filesystem interface.
 */
const trusted = <T>(fn: () => Promise<T>): Promise<T> => DefenseInDepthBox.runTrustedAsync(fn)

/** An error as just-bash's filesystems raise them: `CODE: text, syscall 'path'`, with `code`. */
export function bashError(
  code: PosixCode | string,
  syscall: string,
  path: string,
  reason?: string,
): Error {
  const text = (POSIX_ERRORS as Record<string, readonly [number, string]>)[code]?.[1] ?? code
  const error = new Error(
    `${code}: ${text}, ${syscall} '${path}'${reason ? ` (${reason})` : ''}`,
  ) as Error & { code: string }
  error.code = code
  return error
}

function toBashError(error: unknown, syscall: string, path: string): unknown {
  if (error instanceof Error && 'code' in error && !isAgentFsError(error)) return error
  if (isAgentFsError(error)) {
    const { code, hint } = error as { code: string; hint?: unknown }
    // A policy's refusal says why, so the script's author (a model) can do otherwise.
    const policy = code === 'EPERM' || code === 'EACCES' || code === 'EROFS'
    return bashError(code, syscall, path, policy && typeof hint === 'string' ? hint : undefined)
  }
  return error
}

function encode(content: FileContent, options?: WriteFileOptions | BufferEncoding): Uint8Array {
  if (typeof content !== 'string') return content
  const encoding = typeof options === 'string' ? options : (options?.encoding ?? 'utf8')
  return Buffer.from(content, encoding as Encoding)
}

/**
 * `/dev/null` is the shell's, not a file of the database: writes vanish, reads are empty, in
 * every mode and policy (scripts redirect to it everywhere: `2>/dev/null`), and nothing about
 * it is stored or audited as a change.
 */
const isDevNull = (path: string) => posix.resolve('/', path) === '/dev/null'

const DEV_NULL_STAT: FsStat = {
  isFile: false,
  isDirectory: false,
  isSymbolicLink: false,
  mode: 0o666,
  size: 0,
  mtime: new Date(0),
  dev: 0,
  ino: 0,
}

function bashStat(st: Stats): FsStat {
  return {
    isFile: st.isFile(),
    isDirectory: st.isDirectory(),
    isSymbolicLink: st.isSymbolicLink(),
    // Permission bits only, as just-bash's filesystems report them.
    mode: st.mode & 0o7777,
    size: st.size,
    mtime: st.mtime,
    dev: st.dev,
    ino: st.ino,
  }
}
