import { posix } from 'node:path'
import { MemoryError } from '../errors.js'

/**
 * A user's garden: the files the memory tools may write, as path templates per user (seed
 * 003's allowed roots), and where history copies go. Paths are absolute in the AgentFS
 * filesystem, under `root`.
 */

/** Seed 003's allowed roots. */
export const DEFAULT_TEMPLATES: readonly string[] = [
  'users/{userId}/overview.md',
  'users/{userId}/notes.md',
  'users/{userId}/parts/{partId}/profile.md',
  'users/{userId}/parts/{partId}/notes.md',
  'users/{userId}/relationships/{relId}/profile.md',
  'users/{userId}/relationships/{relId}/notes.md',
]

/** Where history copies of a user's files go, under the user's folder. */
export const HISTORY_DIR = '.history'

/** An id in a path: a user, a part, a relationship. */
const ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/
const PARAM = /\{([A-Za-z][A-Za-z0-9]*)\}/g

export interface GardenOptions {
  /** The user whose garden this is. */
  readonly userId: string
  /** The allowed paths (default {@link DEFAULT_TEMPLATES}); `{name}` matches one id. */
  readonly templates?: readonly string[]
  /** The folder templates are under (default `/`). */
  readonly root?: string
}

/** A path the garden allows, with what its template's parameters matched. */
export interface GardenPath {
  readonly path: string
  readonly template: string
  readonly params: Readonly<Record<string, string>>
  /** `profile` for profile and relationship profiles (history copies on every edit). */
  readonly kind: 'profile' | 'notes' | 'overview' | 'other'
}

export interface Garden {
  readonly userId: string
  readonly root: string
  readonly templates: readonly string[]
  /** The garden path of `path`, or undefined when the garden does not allow it. */
  match(path: string): GardenPath | undefined
  /** The garden path of `path`, or a BLOCKED error saying what is allowed. */
  allow(path: string): GardenPath
  /** The user's folder (`/users/{userId}`). */
  readonly userDir: string
  /** Whether `path` is a history copy (never edited by a tool). */
  isHistory(path: string): boolean
  /** The history copy of `path` taken at `at`. */
  historyPath(path: string, at: Date): string
}

export function checkId(what: string, id: unknown): string {
  if (typeof id !== 'string' || !ID.test(id))
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `${what} must be 1 to 64 letters, digits, '_' or '-' (starting with a letter or digit), got ${JSON.stringify(id)}`,
    )
  return id
}

function compile(template: string): { regex: RegExp; names: string[] } {
  if (
    template.startsWith('/') ||
    template.split('/').some((s) => s === '..' || s === '.' || s === '')
  )
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `garden template '${template}' must be a relative path without '.', '..' or empty segments`,
    )
  const names: string[] = []
  let source = ''
  let last = 0
  for (const m of template.matchAll(PARAM)) {
    source += escapeRegex(template.slice(last, m.index))
    names.push(m[1]!)
    source += '([A-Za-z0-9][A-Za-z0-9_-]{0,63})'
    last = m.index + m[0].length
  }
  source += escapeRegex(template.slice(last))
  if (!names.includes('userId'))
    throw new MemoryError('INVALID_ARGUMENT', `garden template '${template}' must contain {userId}`)
  return { regex: new RegExp(`^${source}$`), names }
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

function kindOf(path: string): GardenPath['kind'] {
  const base = posix.basename(path)
  if (base === 'profile.md') return 'profile'
  if (base === 'notes.md') return 'notes'
  if (base === 'overview.md') return 'overview'
  return 'other'
}

/** A user's garden. */
export function createGarden(options: GardenOptions): Garden {
  const userId = checkId('userId', options.userId)
  const root = posix.resolve('/', options.root ?? '/')
  const templates = [...(options.templates ?? DEFAULT_TEMPLATES)]
  const compiled = templates.map((t) => ({ template: t, ...compile(t) }))
  const userDir = posix.join(root, 'users', userId)
  const historyRoot = posix.join(userDir, HISTORY_DIR)
  const match = (path: string): GardenPath | undefined => {
    if (typeof path !== 'string' || path.includes('\0')) return undefined
    const absolute = posix.resolve('/', path)
    const rel = posix.relative(root, absolute)
    if (rel.startsWith('..') || rel === '') return undefined
    for (const c of compiled) {
      const m = c.regex.exec(rel)
      if (!m) continue
      const params = Object.fromEntries(c.names.map((n, i) => [n, m[i + 1]!]))
      if (params.userId !== userId) continue
      return { path: absolute, template: c.template, params, kind: kindOf(absolute) }
    }
    return undefined
  }
  return {
    userId,
    root,
    templates,
    userDir,
    match,
    allow(path) {
      const found = match(path)
      if (found) return found
      throw new MemoryError(
        'BLOCKED',
        `${JSON.stringify(path)} is outside ${userId}'s garden; the files that may be written are ${templates.map((t) => posix.join(root, t.replaceAll('{userId}', userId))).join(', ')}`,
      )
    },
    isHistory(path) {
      const absolute = posix.resolve('/', path)
      return absolute === historyRoot || absolute.startsWith(`${historyRoot}/`)
    },
    historyPath(path, at) {
      const found = match(path)
      if (!found)
        throw new MemoryError(
          'BLOCKED',
          `${JSON.stringify(path)} is not a garden file; only garden files have history copies`,
        )
      const rel = posix.relative(userDir, found.path).replace(/\.md$/, '')
      const stamp = at.toISOString().replace(/:/g, '-')
      return posix.join(historyRoot, rel, `${stamp}.md`)
    },
  }
}
