import { fsError } from '../errors.js'
import { type ParsedPath, parsePath } from './path.js'

/** Linux's limit on symlinks followed while resolving one path (SYMLOOP_MAX). */
export const MAX_SYMLINK_HOPS = 40

/** What one {@link PathSteps.step} found. */
export interface PathStep<D, E> {
  /** How many of the names were found, in order (0: the first is missing). */
  readonly found: number
  /** The deepest entry found (the `found`-th name); undefined when `found` is 0. */
  readonly entry: E | undefined
  /** The directory that holds `entry` (the starting directory when `found` is 0 or 1). */
  readonly dir: D
  /**
   * True when the step also looked up the name after the last one found and it is missing
   * (so `entry`, a directory, lacks it). A step that stops early by design leaves it false.
   */
  readonly exhausted?: boolean
}

/**
 * The primitives a filesystem gives {@link resolvePath}: look up names, read a link, enter a
 * directory, go to the parent. `D` is the walker's directory state (an inode, a path, an open
 * directory), `E` an entry's lstat-like record. A walker is used linearly: after `enter`,
 * `parent` or `root`, the previous directory state is never used again (a walker may release it).
 */
export interface PathSteps<D, E> {
  /** The root directory (`/`, and where absolute link targets start). */
  root(): D | Promise<D>
  /**
   * Looks up `names[0]` in `dir`; an implementation that can may go on through directories
   * (never through links) along the following names in the same step, e.g. in one query.
   * `names` is never empty and never holds `..`.
   */
  step(dir: D, names: readonly string[]): Promise<PathStep<D, E>>
  isDirectory(entry: E): boolean
  isSymbolicLink(entry: E): boolean
  /** The target of the link `name` in `dir`; absolute targets are read from this filesystem's `/`. */
  readlink(dir: D, name: string, entry: E): Promise<string>
  /** The directory `entry` (named `name` in `dir`), to continue from. */
  enter(dir: D, name: string, entry: E): D | Promise<D>
  /**
   * `..` of `dir`: its physical parent. At the root, `..` from the path itself stays at the root
   * (POSIX); `viaLink` says it came from a link's target, which a confining walker may refuse.
   */
  parent(dir: D, viaLink: boolean): D | Promise<D>
}

/** Options of {@link resolvePath}. */
export interface ResolveOptions {
  /** Follow a symlink in the last component (stat, open) or not (lstat, unlink, rename). */
  readonly followLast: boolean
  readonly syscall: string
  /** Let the last component be missing (create). Otherwise a missing entry is ENOENT. */
  readonly allowMissing?: boolean
  /**
   * Stop where the path stops existing (a missing name, or a non-directory with names after
   * it) and return the rest instead of failing: where a path would land.
   */
  readonly partial?: boolean
}

/** Where a path leads. */
export interface Resolution<D, E> {
  /** The directory that holds `name`; the path's own directory when `name` is undefined. */
  readonly dir: D
  /** The last component reached; undefined when the path ends on a directory reached as a whole (`/`, `..`, a link to a directory). */
  readonly name: string | undefined
  /** The entry `name` names, when it exists. */
  readonly entry: E | undefined
  /** With `partial`: the names after `name` that were not resolved (empty otherwise). */
  readonly rest: readonly string[]
}

/**
 * POSIX path resolution, written once for every filesystem: symlinks in every component
 * (absolute targets from `/`, relative ones from the link's directory), `..` physically (the
 * parent of where the walk is, not a textual step back), at most {@link MAX_SYMLINK_HOPS} links
 * (ELOOP), a non-directory in the middle is ENOTDIR, a trailing slash follows a last link and
 * demands a directory. Work is bounded: each round consumes a name or a link hop, and link
 * targets are at most PATH_MAX long. `parsed` comes from {@link parsePath} (validated input).
 */
export async function resolvePath<D, E>(
  steps: PathSteps<D, E>,
  parsed: ParsedPath,
  options: ResolveOptions,
): Promise<Resolution<D, E>> {
  const fail = (code: 'ENOENT' | 'ENOTDIR' | 'ELOOP') =>
    fsError(code, options.syscall, parsed.input)
  const queue = [...parsed.parts]
  // Link targets are spliced in at the front, so the path's own names are always the queue's
  // tail: the front name came from a link while the queue is longer than `own`.
  let own = queue.length
  let dir: D = await steps.root()
  let hops = 0
  let followLast = options.followLast || parsed.trailingSlash
  const missing = (at: D): Resolution<D, E> => {
    if (queue.length === 1 && options.allowMissing)
      return { dir: at, name: queue[0], entry: undefined, rest: [] }
    if (options.partial) return { dir: at, name: queue[0], entry: undefined, rest: queue.slice(1) }
    throw fail('ENOENT')
  }
  while (queue.length > 0) {
    if (queue[0] === '..') {
      const viaLink = queue.length > own
      queue.shift()
      own = Math.min(own, queue.length)
      dir = await steps.parent(dir, viaLink)
      continue
    }
    const end = queue.indexOf('..')
    const segment = queue.slice(0, end === -1 ? queue.length : end)
    const step = await steps.step(dir, segment)
    if (step.found === 0) return missing(dir)
    const entry = step.entry as E
    const name = queue[step.found - 1]!
    if (steps.isSymbolicLink(entry) && (queue.length > step.found || followLast)) {
      if (++hops > MAX_SYMLINK_HOPS) throw fail('ELOOP')
      const target = await steps.readlink(step.dir, name, entry)
      queue.splice(
        0,
        step.found,
        ...parsePath(target.length > 0 ? target : '.', options.syscall).parts,
      )
      dir = target.startsWith('/') ? await steps.root() : step.dir
      if (queue.length === 0) followLast = true
      continue
    }
    queue.splice(0, step.found)
    own = Math.min(own, queue.length)
    if (queue.length === 0) {
      if (parsed.trailingSlash && !steps.isDirectory(entry)) throw fail('ENOTDIR')
      return { dir: step.dir, name, entry, rest: [] }
    }
    if (!steps.isDirectory(entry)) {
      if (options.partial) return { dir: step.dir, name, entry, rest: queue }
      throw fail('ENOTDIR')
    }
    dir = await steps.enter(step.dir, name, entry)
    if (step.exhausted && step.found < segment.length) return missing(dir)
  }
  return { dir, name: undefined, entry: undefined, rest: [] }
}
