import { normalizePath, type Queryable } from '@agentfs/core'
import {
  type GlobMatch,
  type GlobOptions,
  type GrepMatch,
  type GrepOptions,
  glob,
  grep,
} from '../search/search.js'
import type { FsContext } from '../sql/context.js'
import type { OpenMode } from '../sql/flags.js'
import { listDirectory, openDirectory } from '../sql/listing-ops.js'
import type { Dirent } from '../stats.js'
import type { FileSystem, ReaddirOptions } from '../types.js'
import { PermissionGate } from './permissions.js'
import type { FsOperation } from './policy.js'
import { PolicyGate, type WriteCheck } from './policy-gate.js'

/**
 * The policy side of a database filesystem: every check runs in the transaction of the change
 * or read it guards, so nothing — another call of this process, another process — can change
 * what was checked before the operation runs on it (a symlink swapped in between, say). Without
 * a policy, operations run directly.
 */
export class Guard {
  constructor(
    readonly ctx: FsContext,
    /** The same filesystem without its policy, on a given context (what the gate looks with). */
    readonly unchecked: (ctx: FsContext) => FileSystem,
  ) {}

  /** The policy's checks on `q` (the transaction of the change they guard). */
  gateOn(q: Queryable): PolicyGate | undefined {
    const { policy, caller, ...ctx } = this.ctx
    if (!policy && !caller) return undefined
    return new PolicyGate(
      policy,
      q,
      this.unchecked({ ...ctx, q }),
      caller && new PermissionGate(caller, q),
    )
  }

  /** Whether anything is checked (a policy, or permissions enforced). */
  get #checks(): boolean {
    return this.ctx.policy !== undefined || this.ctx.caller !== undefined
  }

  /** Runs `op`; with a policy, after `check` and in the same transaction. */
  guarded<T>(
    check: (gate: PolicyGate) => Promise<unknown>,
    op: (ctx: FsContext) => Promise<T>,
  ): Promise<T> {
    if (!this.#checks) return op(this.ctx)
    return this.withGate(async (gate, ctx) => {
      await check(gate)
      return op(ctx)
    })
  }

  /** Runs `fn` with the policy's gate in one transaction (only call it when there is a policy). */
  withGate<T>(fn: (gate: PolicyGate, ctx: FsContext) => Promise<T>): Promise<T> {
    return this.ctx.q.transaction((tx) => fn(this.gateOn(tx)!, { ...this.ctx, q: tx }))
  }

  /** {@link guarded} for a read of `path`. */
  reading<T>(
    path: string,
    syscall: string,
    op: (ctx: FsContext) => Promise<T>,
    follow = true,
  ): Promise<T> {
    return this.guarded((gate) => gate.read(path, syscall, follow), op)
  }

  /** {@link guarded} for a change of `path`. */
  writing<T>(
    path: string,
    syscall: string,
    operation: FsOperation,
    check: WriteCheck,
    op: (ctx: FsContext) => Promise<T>,
  ): Promise<T> {
    return this.guarded((gate) => gate.write(path, syscall, operation, check), op)
  }

  /** With a policy, checks an open in the transaction that creates or truncates the file. */
  async checkOpen(q: Queryable, path: string, want: OpenMode): Promise<void> {
    const gate = this.gateOn(q)
    if (!gate) return
    await gate.permissions?.open(path, want)
    if (want.read) await gate.read(path, 'open')
    if (want.write || want.truncate)
      await gate.write(path, 'open', 'write', {
        create: 'create',
        destroys: (node) => want.truncate && want.write && node.size > 0,
      })
  }

  /** A directory's entries; with a policy, only those it lets this caller read. */
  readdir(path: string, options: ReaddirOptions): Promise<string[] | Dirent[]> {
    if (!this.#checks) return listDirectory(this.ctx, path, options)
    return this.withGate(async (gate) => {
      const real = await gate.read(path, 'scandir')
      const entries = (await gate.unchecked.readdir(path, options)) as (string | Dirent)[]
      return gate.readableEntries(path, real, entries) as string[] | Dirent[]
    })
  }

  /** The directory `opendir` iterates, and the filter its pages pass through. */
  opendir(path: string): ReturnType<typeof openDirectory> {
    if (!this.#checks) return openDirectory(this.ctx.q, path)
    return this.withGate((gate, { q }) => openDirectory(q, path, gate))
  }

  glob(pattern: string, options?: GlobOptions): Promise<GlobMatch[]> {
    if (!this.#checks) return glob(this.ctx.q, pattern, options)
    return this.withGate(async (gate, { q }) => {
      const cwd = normalizePath(options?.cwd ?? '/', 'glob')
      await gate.read(cwd, 'glob')
      // Each match is judged where it really is: the pattern's static part may pass links.
      return gate.readablePaths(await glob(q, pattern, options), 'glob', false)
    })
  }

  grep(pattern: string | RegExp, options?: GrepOptions): Promise<GrepMatch[]> {
    const { chunkSize } = this.ctx
    if (!this.#checks) return grep(this.ctx.q, chunkSize, pattern, options)
    return this.withGate(async (gate, { q }) => {
      await gate.read(options?.path ?? '/', 'grep')
      return gate.readablePaths(await grep(q, chunkSize, pattern, options), 'grep')
    })
  }
}
