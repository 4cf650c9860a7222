import { fileURLToPath } from 'node:url'
import { fsError } from '../errors.js'

/** Longest name of one path component, in UTF-8 bytes (Linux NAME_MAX). */
export const NAME_MAX = 255
/** Longest path, in UTF-8 bytes (Linux PATH_MAX less the terminating NUL). */
export const PATH_MAX = 4096

/** A path accepted by the filesystem API. */
export type PathLike = string | URL

/** A path split for resolution. */
export interface ParsedPath {
  /** Components in order, without empty and `.` parts; `..` is kept for the resolver. */
  readonly parts: readonly string[]
  /** The input ended in `/` (POSIX: the last component must then be a directory). */
  readonly trailingSlash: boolean
  /** The input as a string, for error messages. */
  readonly input: string
}

const encoder = new TextEncoder()

function byteLength(text: string): number {
  // Fast path: ASCII-only strings have one byte per code unit.
  return /^[\x00-\x7f]*$/.test(text) ? text.length : encoder.encode(text).byteLength
}

/**
 * Whether `text` holds a UTF-16 surrogate without its pair: such a string has no UTF-8 form, and
 * SQLite would store U+FFFD in its place, a different name than the one given.
 */
export function hasLoneSurrogate(text: string): boolean {
  // The cheap scan first: most strings have no surrogate at all.
  return /[\uD800-\uDFFF]/.test(text) && /\p{Cs}/u.test(text)
}

/** Converts a {@link PathLike} to a string, rejecting anything else with EINVAL. */
export function pathToString(input: unknown, syscall: string): string {
  if (typeof input === 'string') return input
  if (input instanceof URL) {
    if (input.protocol !== 'file:') {
      throw fsError('EINVAL', syscall, String(input), { hint: 'only file: URLs are paths' })
    }
    return fileURLToPath(input)
  }
  throw fsError('EINVAL', syscall, String(input), {
    hint: `path must be a string or a file: URL, got ${input === null ? 'null' : typeof input}`,
  })
}

/**
 * Splits and validates a path: NUL or a lone surrogate → EINVAL, a component over 255 bytes or a path over 4096
 * bytes → ENAMETOOLONG, empty → ENOENT. Relative paths are taken from `/`.
 */
export function parsePath(input: unknown, syscall: string): ParsedPath {
  const text = pathToString(input, syscall)
  if (text.length === 0) throw fsError('ENOENT', syscall, text)
  if (text.includes('\0')) {
    throw fsError('EINVAL', syscall, text.replaceAll('\0', '\\0'), {
      hint: 'path contains a NUL byte',
    })
  }
  if (hasLoneSurrogate(text)) {
    throw fsError('EINVAL', syscall, text.replace(/\p{Cs}/gu, '\uFFFD'), {
      hint: 'path is not valid Unicode (a lone UTF-16 surrogate cannot be stored as UTF-8)',
    })
  }
  if (text.length > PATH_MAX / 4 && byteLength(text) > PATH_MAX) {
    throw fsError('ENAMETOOLONG', syscall, `${text.slice(0, 64)}...`)
  }
  const parts: string[] = []
  for (const part of text.split('/')) {
    if (part === '' || part === '.') continue
    if (part.length > NAME_MAX / 4 && byteLength(part) > NAME_MAX) {
      throw fsError('ENAMETOOLONG', syscall, text.length > 300 ? `${text.slice(0, 64)}...` : text)
    }
    parts.push(part)
  }
  return { parts, trailingSlash: text.length > 1 && text.endsWith('/'), input: text }
}

/**
 * Lexical normalisation to an absolute path: collapses `//` and `.`, applies `..` without going
 * above `/`. Validates like {@link parsePath}.
 */
export function normalizePath(input: unknown, syscall = 'open'): string {
  const { parts } = parsePath(input, syscall)
  const out: string[] = []
  for (const part of parts) {
    if (part === '..') out.pop()
    else out.push(part)
  }
  return `/${out.join('/')}`
}

/** Parent of a normalised absolute path; `/` for `/` itself (the spec's whiteout rule). */
export function parentPath(path: string): string {
  const cut = path.lastIndexOf('/')
  return cut <= 0 ? '/' : path.slice(0, cut)
}

/** Last component of a normalised absolute path; empty for `/`. */
export function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1)
}

/** Joins a normalised absolute directory and a child name. */
export function joinPath(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`
}

/** True when `path` is `ancestor` or lies below it (both normalised). */
export function isWithin(path: string, ancestor: string): boolean {
  return ancestor === '/' || path === ancestor || path.startsWith(`${ancestor}/`)
}

/**
 * Why `name` cannot be a directory entry, or undefined when it can: an entry name is never
 * empty, `.` or `..`, and holds no `/` or NUL. Names read from a database are checked before
 * they are joined into a path that reaches the host (export, commit, mount), because a crafted
 * database can hold any text in `fs_dentry.name`.
 */
export function badEntryName(name: unknown): string | undefined {
  if (typeof name !== 'string') return 'it is not text'
  if (name === '') return 'it is empty'
  if (name === '.' || name === '..') return `it is "${name}"`
  if (name.includes('/')) return 'it contains "/"'
  if (name.includes('\0')) return 'it contains NUL'
  return undefined
}
