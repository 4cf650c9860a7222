import { fsError, normalizePath, type Queryable } from '@agentfs/core'
import {
  type SearchOptions,
  type SearchResult,
  searchFullText,
} from '../search/fulltext/full-text.js'
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
import type { InodeRow } from '../storage/inode.js'
import type { FileSystem, ReaddirOptions } from '../types.js'
import { applyRules, contentOf, type Judged, limitOf } from './content-judge.js'
import { PermissionGate } from './permissions.js'
import type { ContentRule, FsOperation } from './policy.js'
import { PolicyGate, type WriteCheck } from './policy-gate.js'

/** A path a change writes or removes, for the content rules (see {@link Guard.guarded}). */
export interface JudgedPath {
  readonly path: string
  readonly syscall: string
  /** Follow a symlink in the last component (default true). */
  readonly follow?: boolean
  /** The change removes or moves the entry, and what is below it. */
  readonly under?: boolean
}

/** Entries of a directory the content rules look through at most in one removal or move. */
export const MAX_JUDGED = 10_000

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
    // Nothing to check: no copy of the context either (an open reads this on every call).
    if (!this.checks) return undefined
    const { policy, caller, ...ctx } = this.ctx
    return new PolicyGate(
      policy,
      q,
      this.unchecked({ ...ctx, q }),
      caller && new PermissionGate(caller, q),
    )
  }

  /** Whether anything is checked (a policy, or permissions enforced). */
  get checks(): boolean {
    return this.ctx.policy !== undefined || this.ctx.caller !== undefined
  }

  /**
   * Runs `op`; with a policy, after `check` and in the same transaction — and when content
   * rules judge one of `judged` (paths the change writes, with its syscall), their content
   * before and after `op` goes through the rules before the transaction commits.
   */
  guarded<T>(
    check: (gate: PolicyGate) => Promise<unknown>,
    op: (ctx: FsContext) => Promise<T>,
    judged: readonly JudgedPath[] = [],
  ): Promise<T> {
    if (!this.checks) return op(this.ctx)
    return this.withGate(async (gate, ctx) => {
      await check(gate)
      const judging: Judged[] = []
      for (const j of judged) {
        if (j.under) judging.push(...(await this.judgingUnder(gate, j.path, j.syscall)))
        else {
          const found = await this.judging(gate, j.path, j.syscall, j.follow ?? true)
          if (found) judging.push(found)
        }
      }
      const out = await op(ctx)
      for (const j of judging) await this.judge(gate, j)
      return out
    })
  }

  /** What content rules judge `path` (with its content now), or undefined when none. */
  async judging(
    gate: PolicyGate,
    path: string,
    syscall: string,
    follow = true,
  ): Promise<Judged | undefined> {
    const policy = this.ctx.policy
    if (!policy?.hasContentRules) return undefined
    const real = await gate.real(path, follow, syscall)
    const rules = policy.contentRules(real.path)
    if (rules.length === 0) return undefined
    const before = await this.#content(gate, real.node, rules, syscall, path)
    return { real: real.path, rules, before, syscall }
  }

  /**
   * The judged files a removal or move of `path` takes along: the entry itself (not followed)
   * and, for a directory, every file below it; at most {@link MAX_JUDGED} of them.
   */
  async judgingUnder(gate: PolicyGate, path: string, syscall: string): Promise<Judged[]> {
    if (!this.ctx.policy?.hasContentRules) return []
    const out: Judged[] = []
    const self = await this.judging(gate, path, syscall, false)
    if (self) out.push(self)
    const stats = await gate.unchecked.lstat(path).catch(() => undefined)
    if (!stats?.isDirectory()) return out
    const base = (await gate.real(path, false, syscall)).path
    const names = (await gate.unchecked.readdir(path, { recursive: true })) as string[]
    if (names.length > MAX_JUDGED)
      throw fsError('EPERM', syscall, path, {
        hint: `${path} holds more than ${MAX_JUDGED} entries; content rules judge at most that many in one change — move or remove less at once`,
      })
    for (const rel of names) {
      const found = await this.judging(gate, `${base}/${rel}`, syscall, false)
      if (found) out.push(found)
    }
    return out
  }

  /** Applies the rules of `judged` to its file's content now. */
  async judge(gate: PolicyGate, judged: Judged): Promise<void> {
    const now = await gate.real(judged.real, false, judged.syscall)
    applyRules(
      judged,
      await this.#content(gate, now.node, judged.rules, judged.syscall, judged.real),
    )
  }

  /** The bytes of `node` for `rules`, read on the gate's transaction. */
  #content(
    gate: PolicyGate,
    node: InodeRow | undefined,
    rules: readonly ContentRule[],
    syscall: string,
    path: string,
  ): Promise<Buffer | null> {
    return contentOf(gate.q, this.ctx.chunks, node, limitOf(rules), syscall, path)
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

  /** {@link guarded} for a change of `path` (`content`: it changes the file's bytes). */
  writing<T>(
    path: string,
    syscall: string,
    operation: FsOperation,
    check: WriteCheck,
    op: (ctx: FsContext) => Promise<T>,
    content: 'write' | 'remove' | false = false,
  ): Promise<T> {
    return this.guarded(
      (gate) => gate.write(path, syscall, operation, check),
      op,
      content === false
        ? []
        : [{ path, syscall, ...(content === 'remove' ? { under: true } : {}) }],
    )
  }

  /**
   * With a policy, checks an open in the transaction that creates or truncates the file; when
   * content rules judge it and the open may write, returns how to judge it (before `open` runs).
   */
  async checkOpen(q: Queryable, path: string, want: OpenMode): Promise<Judged | undefined> {
    const gate = this.gateOn(q)
    if (!gate) return undefined
    await gate.permissions?.open(path, want)
    if (want.read) await gate.read(path, 'open')
    if (!want.write && !want.truncate) return undefined
    await gate.write(path, 'open', 'write', {
      create: 'create',
      destroys: (node) => want.truncate && want.write && node.size > 0,
    })
    return this.judging(gate, path, 'open')
  }

  /** Refuses a hard link to or at a judged path (a second name would escape the rules). */
  async refuseJudgedLink(gate: PolicyGate, existing: string, newPath: string): Promise<void> {
    const policy = this.ctx.policy
    if (!policy?.hasContentRules) return
    for (const p of [existing, newPath]) {
      const real = (await gate.real(p, false, 'link')).path
      if (policy.contentRules(real).length > 0)
        throw fsError('EPERM', 'link', p, {
          hint: `${real} is judged by a content rule of the policy; files under content rules have one name`,
        })
    }
  }

  /** After an open that created or truncated a judged file: the rules on what it left. */
  async judgeOpen(q: Queryable, judged: Judged): Promise<void> {
    await this.judge(this.gateOn(q)!, judged)
  }

  /** A directory's entries; with a policy, only those it lets this caller read. */
  readdir(path: string, options: ReaddirOptions): Promise<string[] | Dirent[]> {
    if (!this.checks) return listDirectory(this.ctx, path, options)
    return this.withGate(async (gate) => {
      const real = await gate.read(path, 'scandir')
      const entries = (await gate.unchecked.readdir(path, options)) as (string | Dirent)[]
      return gate.readableEntries(path, real, entries) as string[] | Dirent[]
    })
  }

  /** The directory `opendir` iterates, and the filter its pages pass through. */
  opendir(path: string): ReturnType<typeof openDirectory> {
    if (!this.checks) return openDirectory(this.ctx.q, path)
    return this.withGate((gate, { q }) => openDirectory(q, path, gate))
  }

  glob(pattern: string, options?: GlobOptions): Promise<GlobMatch[]> {
    if (!this.checks) return glob(this.ctx.q, pattern, options)
    return this.withGate(async (gate, { q }) => {
      const cwd = normalizePath(options?.cwd ?? '/', 'glob')
      await gate.read(cwd, 'glob')
      // Each match is judged where it really is: the pattern's static part may pass links.
      return gate.readablePaths(await glob(q, pattern, options), 'glob', false)
    })
  }

  grep(pattern: string | RegExp, options?: GrepOptions): Promise<GrepMatch[]> {
    const { chunks } = this.ctx
    if (!this.checks) return grep(this.ctx.q, chunks, pattern, options)
    return this.withGate(async (gate, { q }) => {
      await gate.read(options?.path ?? '/', 'grep')
      return gate.readablePaths(await grep(q, chunks, pattern, options), 'grep')
    })
  }

  /**
   * Full-text search: the index catches up outside the policy's transaction (it reveals
   * nothing), the ranking runs inside it and passes only paths the policy lets be read, before
   * the limit (hidden files take no place).
   */
  search(query: string, options?: SearchOptions): Promise<SearchResult> {
    const { q, chunks, embedder } = this.ctx
    if (!this.checks) return searchFullText(q, chunks, query, options, undefined, embedder)
    return searchFullText(
      q,
      chunks,
      query,
      options,
      (read) =>
        this.withGate(async (gate, ctx) => {
          await gate.read(options?.path ?? '/', 'search')
          return read(ctx.q, {
            readable: async (paths) =>
              new Set(
                (
                  await gate.readablePaths(
                    paths.map((path) => ({ path })),
                    'search',
                  )
                ).map((p) => p.path),
              ),
          })
        }),
      embedder,
    )
  }
}
