import { fsError, type Queryable, type Timestamp } from '@agentfs/core'
import { compileGlob } from '../search/matchers.js'

/** Operations a policy can refuse everywhere with `deny`. */
export type FsOperation =
  | 'create'
  | 'write'
  | 'delete'
  | 'rename'
  | 'link'
  | 'symlink'
  | 'chmod'
  | 'chown'
  | 'utimes'

/** A change a {@link ContentRule} judges: the file's bytes before it and after it. */
export interface ContentChange {
  /** The file's real path (symlinks resolved). */
  readonly path: string
  /** Its content before the change; null when the change creates it. */
  readonly before: Buffer | null
  /** Its content after the change; null when the change removes it (unlink, rm, a rename away). */
  readonly after: Buffer | null
  /** The operation (`open`, `write`, `truncate`, `copyfile`, `rename`, `ftruncate`, …). */
  readonly syscall: string
}

/**
 * A check of what a change does to the content of some files, run inside the change's
 * transaction after the change and before it commits: a refusal (a returned reason, or a thrown
 * error) rolls it back, and the operation fails with EPERM and the reason. It sees every way
 * content changes — `writeFile`, `appendFile`, `truncate`, `copyFile`, `cp` and `rename` onto a
 * judged path, `open` with `w`, every handle and stream write (each on its own), and removals
 * (`unlink`, `rm`, `rmdir`, a rename away — of the file or a directory above it: `after` is
 * null). Hard links to or from judged files are refused: a second name would be a way around
 * the rule.
 */
export interface ContentRule {
  /** Globs of the real paths this rule judges (as `write`'s). */
  readonly paths: readonly string[]
  /** A reason to refuse the change, or undefined to let it be. */
  check(change: ContentChange): string | undefined
  /** Files larger than this (before or after) are refused unread (default 4 MiB). */
  readonly maxBytes?: number
}

/** Content a rule reads at most by default. */
export const CONTENT_RULE_MAX_BYTES = 4 << 20

/**
 * What an agent may do with a filesystem, enforced inside it — below every tool, adapter and
 * mount, inside transactions, on handles and streams. Globs (see `compileGlob`; dotfiles included) are
 * matched against the **resolved** absolute path: symlinks and `..` are followed first, so
 * neither can step outside an allowed root.
 *
 * @example
 * createFileSystem(db, { policy: {
 *   read: ['/workspace/**', '/docs/**'], write: ['/workspace/**'],
 *   readOnly: ['/workspace/.git/**'], protected: ['/workspace/README.md'],
 *   deny: ['delete'], maxFileSize: 10 << 20, maxTotalBytes: 1 << 30, maxInodes: 100_000,
 * } })
 */
export interface FsPolicy {
  /** Paths that may be read (default: everything). Refusals are EACCES. */
  readonly read?: readonly string[]
  /** Paths that may be changed (default: what `read` allows). Refusals are EACCES. */
  readonly write?: readonly string[]
  /** Paths that can be read but never changed, whatever `write` says. Refusals are EROFS. */
  readonly readOnly?: readonly string[]
  /** Paths that cannot be deleted, renamed or replaced; their content can be edited. EPERM. */
  readonly protected?: readonly string[]
  /**
   * Operations refused everywhere (EPERM). `delete` covers destroying content by any means:
   * unlink, rmdir, rm, a rename or copy over an existing entry, an overwrite of a non-empty
   * file (`writeFile`, `open` with `w`), a truncate to a shorter length, and a handle write
   * over existing bytes — so `['delete']` gives a memory that only grows (appends, new files).
   */
  readonly deny?: readonly FsOperation[]
  /** Largest file size in bytes; a change that makes a file larger is refused with EFBIG. */
  readonly maxFileSize?: number
  /** Total bytes of all files; a change that grows the total beyond it is refused with EDQUOT. */
  readonly maxTotalBytes?: number
  /** Number of inodes (files, directories, links); creating beyond it is refused with EDQUOT. */
  readonly maxInodes?: number
  /** Checks of what changes do to the content of some files (see {@link ContentRule}). */
  readonly content?: readonly ContentRule[]
}

type Matcher = (path: string) => boolean

/**
 * Rules and paths meet in Unicode NFC: a rule written `café` (one code point for é) judges a name
 * stored as `cafe` + U+0301 too, and the other way round, so no spelling of a name slips past a
 * rule written in another. (Names themselves are stored as given, as POSIX filesystems do.)
 */
const matcher = (globs: readonly string[] | undefined): Matcher | undefined => {
  if (!globs) return undefined
  const tests = globs.map((g) => compileGlob(g.normalize('NFC'), { dot: true }))
  return (path) => {
    const nfc = path.normalize('NFC')
    return tests.some((t) => t(nfc))
  }
}

function checkLimit(value: number | undefined, name: string): void {
  if (value !== undefined && (!Number.isSafeInteger(value) || value < 0))
    throw new TypeError(`policy.${name} must be a non-negative integer, got ${value}`)
}

/** A policy compiled for checking. */
export class CompiledPolicy {
  readonly #read: Matcher | undefined
  readonly #write: Matcher | undefined
  readonly #readOnly: Matcher | undefined
  readonly #protected: Matcher | undefined
  readonly #deny: ReadonlySet<FsOperation>
  readonly maxFileSize: number | undefined
  readonly maxTotalBytes: number | undefined
  readonly maxInodes: number | undefined
  /** A policy this one narrows: both must allow everything. */
  readonly #outer: CompiledPolicy | undefined
  readonly #content: readonly { readonly match: Matcher; readonly rule: ContentRule }[]

  /** `outer`, when given, must allow everything too (see `SqlFileSystem.restrict`). */
  constructor(policy: FsPolicy, outer?: CompiledPolicy) {
    this.#outer = outer
    for (const key of ['read', 'write', 'readOnly', 'protected'] as const) {
      const globs = policy[key]
      if (
        globs !== undefined &&
        (!Array.isArray(globs) || globs.some((g) => typeof g !== 'string'))
      )
        throw new TypeError(`policy.${key} must be an array of glob strings`)
    }
    checkLimit(policy.maxFileSize, 'maxFileSize')
    checkLimit(policy.maxTotalBytes, 'maxTotalBytes')
    checkLimit(policy.maxInodes, 'maxInodes')
    this.#read = matcher(policy.read)
    this.#write = matcher(policy.write) ?? this.#read
    this.#readOnly = matcher(policy.readOnly)
    this.#protected = matcher(policy.protected)
    this.#deny = new Set(policy.deny ?? [])
    const rules = policy.content ?? []
    if (!Array.isArray(rules)) throw new TypeError('policy.content must be an array of rules')
    this.#content = rules.map((rule, i) => {
      if (
        !rule ||
        typeof rule.check !== 'function' ||
        !Array.isArray(rule.paths) ||
        rule.paths.some((g: unknown) => typeof g !== 'string')
      )
        throw new TypeError(`policy.content[${i}] must have paths (globs) and a check function`)
      checkLimit(rule.maxBytes, `content[${i}].maxBytes`)
      return { match: matcher(rule.paths)!, rule }
    })
    const min = (a: number | undefined, b: number | undefined) =>
      a === undefined ? b : b === undefined ? a : Math.min(a, b)
    this.maxFileSize = min(policy.maxFileSize, outer?.maxFileSize)
    this.maxTotalBytes = min(policy.maxTotalBytes, outer?.maxTotalBytes)
    this.maxInodes = min(policy.maxInodes, outer?.maxInodes)
  }

  /** Whether any limit needs a check after each change. */
  get hasLimits(): boolean {
    return (
      this.maxFileSize !== undefined ||
      this.maxTotalBytes !== undefined ||
      this.maxInodes !== undefined
    )
  }

  /** Refuses reading `resolved` (the path after symlinks) unless `read` allows it. */
  checkRead(resolved: string, syscall: string, path: string): void {
    this.#outer?.checkRead(resolved, syscall, path)
    if (this.#read && !this.#read(resolved))
      throw fsError('EACCES', syscall, path, {
        hint: `the policy does not allow reading ${resolved}`,
      })
  }

  /**
   * Refuses changing `resolved` by `operation`. `replaces` marks a change that removes or
   * replaces the entry (delete, rename, overwrite by rename), which `protected` forbids.
   */
  checkWrite(
    resolved: string,
    operation: FsOperation,
    syscall: string,
    path: string,
    replaces = false,
  ): void {
    this.#outer?.checkWrite(resolved, operation, syscall, path, replaces)
    if (this.#deny.has(operation))
      throw fsError('EPERM', syscall, path, { hint: `the policy denies ${operation}` })
    if (this.#write && !this.#write(resolved))
      throw fsError('EACCES', syscall, path, {
        hint: `the policy does not allow changing ${resolved}`,
      })
    if (this.#readOnly?.(resolved))
      throw fsError('EROFS', syscall, path, { hint: `${resolved} is read-only by policy` })
    if (replaces && this.#protected?.(resolved))
      throw fsError('EPERM', syscall, path, {
        hint: `${resolved} is protected by policy: it cannot be deleted, moved or replaced`,
      })
  }

  /** Whether this policy or one it narrows has content rules. */
  get hasContentRules(): boolean {
    return this.#content.length > 0 || this.#outer?.hasContentRules === true
  }

  /** The content rules that judge the real path `resolved` (the narrowed policy's first). */
  contentRules(resolved: string): ContentRule[] {
    const own = this.#content.filter((c) => c.match(resolved)).map((c) => c.rule)
    return [...(this.#outer?.contentRules(resolved) ?? []), ...own]
  }

  /** Whether the policy refuses `operation` everywhere. */
  denies(operation: FsOperation): boolean {
    return this.#deny.has(operation) || this.#outer?.denies(operation) === true
  }

  /** Whether `resolved` may be read (for filtering search results). */
  readable(resolved: string): boolean {
    return (!this.#read || this.#read(resolved)) && this.#outer?.readable(resolved) !== false
  }
}

/**
 * Whether `policy` lets a path be read: for tools that show paths from elsewhere (the change
 * feed, file histories) and must hide what the policy hides. Throws on a malformed policy.
 */
export function policyReadable(policy: FsPolicy): (path: string) => boolean {
  const compiled = new CompiledPolicy(policy)
  return (path) => compiled.readable(path)
}

export interface Usage {
  readonly bytes: number
  readonly inodes: number
}

const USAGE = 'SELECT COALESCE(SUM(size), 0) AS bytes, COUNT(*) AS inodes FROM fs_inode'

/** Totals, for the limits (a scan of fs_inode: limits cost one per change). */
export async function usage(q: Queryable): Promise<Usage> {
  const { rows } = await q.execute<{ bytes: number; inodes: number }>({ sql: USAGE })
  return { bytes: rows[0]?.bytes ?? 0, inodes: rows[0]?.inodes ?? 0 }
}

/**
 * Checks the limits after a change, inside its transaction (so a refusal rolls it back). Totals
 * only fail when the change grew them (`before`), so deleting is always possible.
 */
export async function enforceLimits(
  q: Queryable,
  policy: CompiledPolicy,
  before: Usage | undefined,
  now: Timestamp,
  syscall: string,
): Promise<void> {
  if (policy.maxFileSize !== undefined) {
    const { rows } = await q.execute<{ size: number }>({
      sql: 'SELECT MAX(size) AS size FROM fs_inode WHERE size > ? AND (ctime > ? OR (ctime = ? AND ctime_nsec >= ?))',
      params: [policy.maxFileSize, now.sec, now.sec, now.nsec],
    })
    const size = rows[0]?.size
    if (size !== null && size !== undefined)
      throw fsError('EFBIG', syscall, undefined, {
        hint: `the policy limits files to ${policy.maxFileSize} bytes; this change makes one ${size} bytes`,
      })
  }
  if (before && (policy.maxTotalBytes !== undefined || policy.maxInodes !== undefined)) {
    const after = await usage(q)
    // A total may stay over its limit (set after the fact) as long as this change did not grow it.
    const grew = (limit: number | undefined, key: keyof Usage) =>
      limit !== undefined && after[key] > limit && after[key] > before[key]
    if (grew(policy.maxTotalBytes, 'bytes'))
      throw fsError('EDQUOT', syscall, undefined, {
        hint: `the policy limits all files to ${policy.maxTotalBytes} bytes; this change needs ${after.bytes}`,
      })
    if (grew(policy.maxInodes, 'inodes'))
      throw fsError('EDQUOT', syscall, undefined, {
        hint: `the policy limits the filesystem to ${policy.maxInodes} inodes; this change needs ${after.inodes}`,
      })
  }
}
