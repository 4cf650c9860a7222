import { FsError } from '@agentfs/core'
import { RE2JS } from 're2js'

// Matching that an agent cannot turn into a denial of service: globs are matched by dynamic
// programming over segments and characters (time bounded by pattern × path), and regular
// expressions run on RE2 (linear in the text), never on a backtracking engine.

/** Most alternatives one glob may expand to through `{a,b}` braces. */
export const MAX_GLOB_ALTERNATIVES = 1024
/** Longest glob accepted, in characters. */
export const MAX_GLOB_LENGTH = 4096
/** Longest regular expression accepted, in characters. */
export const MAX_REGEX_LENGTH = 4096

/** Options of {@link compileGlob}. */
export interface GlobMatchOptions {
  /** Let wildcards match names that start with a dot (default false, like shells). */
  readonly dot?: boolean
  /** A pattern without `/` matches the last component of a path (like picomatch's `matchBase`). */
  readonly matchBase?: boolean
}

type Token =
  | { readonly kind: 'char'; readonly char: string }
  | { readonly kind: 'any' }
  | { readonly kind: 'star' }
  | {
      readonly kind: 'class'
      readonly negated: boolean
      readonly items: readonly (readonly [string, string])[]
    }

/** One `/`-separated piece of a pattern: `**` alone, or a sequence of tokens. */
type Segment = 'globstar' | readonly Token[]

function globError(pattern: string, hint: string): FsError {
  return new FsError({ code: 'EINVAL', syscall: 'glob', path: pattern.slice(0, 200), hint })
}

/** Expands `{a,b}` braces (nested too) into alternatives, at most {@link MAX_GLOB_ALTERNATIVES}. */
function expandBraces(pattern: string, whole: string): string[] {
  // Find the first top-level brace group with a comma at its own depth.
  let depth = 0
  let open = -1
  const commas: number[] = []
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]
    if (c === '\\') {
      i++
      continue
    }
    if (c === '[') {
      const close = classEnd(pattern, i)
      if (close !== -1) {
        i = close
        continue
      }
    }
    if (c === '{') {
      if (depth === 0) {
        open = i
        commas.length = 0
      }
      depth++
    } else if (c === '}' && depth > 0) {
      depth--
      if (depth === 0) {
        if (commas.length > 0) {
          const head = pattern.slice(0, open)
          const tail = pattern.slice(i + 1)
          const bounds = [open, ...commas, i]
          const out: string[] = []
          for (let k = 0; k + 1 < bounds.length; k++) {
            const middle = pattern.slice(bounds[k]! + 1, bounds[k + 1])
            for (const expanded of expandBraces(head + middle + tail, whole)) {
              out.push(expanded)
              if (out.length > MAX_GLOB_ALTERNATIVES)
                throw globError(
                  whole,
                  `braces expand to more than ${MAX_GLOB_ALTERNATIVES} patterns; use fewer alternatives`,
                )
            }
          }
          return out
        }
        open = -1
      }
    } else if (c === ',' && depth === 1) {
      commas.push(i)
    }
  }
  return [pattern]
}

/** Index of the `]` closing a class opened at `start`, or -1 when it is a literal `[`. */
function classEnd(pattern: string, start: number): number {
  let i = start + 1
  if (pattern[i] === '!' || pattern[i] === '^') i++
  if (pattern[i] === ']') i++
  for (; i < pattern.length; i++) {
    if (pattern[i] === '\\') i++
    else if (pattern[i] === ']') return i
    else if (pattern[i] === '/') return -1
  }
  return -1
}

function parseSegment(text: string): Segment {
  if (text === '**') return 'globstar'
  const tokens: Token[] = []
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (c === '\\' && i + 1 < text.length) {
      tokens.push({ kind: 'char', char: text[++i]! })
    } else if (c === '?') {
      tokens.push({ kind: 'any' })
    } else if (c === '*') {
      // Runs of stars (`**` inside a segment) match like one.
      if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star' })
    } else if (c === '[' && classEnd(text, i) !== -1) {
      const end = classEnd(text, i)
      let j = i + 1
      const negated = text[j] === '!' || text[j] === '^'
      if (negated) j++
      const items: (readonly [string, string])[] = []
      let first = true
      while (j < end) {
        let from = text[j]!
        if (from === '\\') from = text[++j]!
        else if (from === ']' && !first) break
        first = false
        j++
        if (text[j] === '-' && j + 1 < end) {
          let to = text[j + 1]!
          j += 2
          if (to === '\\') to = text[j++]!
          items.push([from, to])
        } else items.push([from, from])
      }
      tokens.push({ kind: 'class', negated, items })
      i = end
    } else {
      tokens.push({ kind: 'char', char: c })
    }
  }
  return tokens
}

const tokenMatches = (token: Token, c: string): boolean => {
  switch (token.kind) {
    case 'char':
      return token.char === c
    case 'any':
      return true
    case 'star':
      return true
    case 'class': {
      const inside = token.items.some(([from, to]) => c >= from && c <= to)
      return inside !== token.negated
    }
  }
}

/**
 * Whether a segment's tokens match a whole name. Linear memory, time tokens × characters: the
 * classic wildcard matcher that remembers only the last star, which is exact for `*`.
 */
function segmentMatches(tokens: readonly Token[], name: string, dot: boolean): boolean {
  // A leading dot must be matched by a literal dot unless `dot` is set.
  if (!dot && name.startsWith('.') && (tokens[0]?.kind !== 'char' || tokens[0].char !== '.'))
    return false
  let t = 0
  let n = 0
  let starT = -1
  let starN = 0
  while (n < name.length) {
    const token = tokens[t]
    if (token && token.kind !== 'star' && tokenMatches(token, name[n]!)) {
      t++
      n++
    } else if (token?.kind === 'star') {
      starT = t++
      starN = n
    } else if (starT !== -1) {
      t = starT + 1
      n = ++starN
    } else return false
  }
  while (tokens[t]?.kind === 'star') t++
  return t === tokens.length
}

/** Matches path segments against pattern segments; `**` spans any number of segments. */
function pathMatches(
  segments: readonly Segment[],
  parts: readonly string[],
  dot: boolean,
): boolean {
  // reachable[s]: pattern prefix consumed so far can end right before path part s.
  let reachable = new Uint8Array(parts.length + 1)
  reachable[0] = 1
  for (const segment of segments) {
    const next = new Uint8Array(parts.length + 1)
    if (segment === 'globstar') {
      let on = false
      for (let s = 0; s <= parts.length; s++) {
        if (reachable[s]) on = true
        if (on) next[s] = 1
        // `**` does not walk into dot directories unless `dot` is set.
        if (s < parts.length && !dot && parts[s]!.startsWith('.')) on = false
      }
    } else {
      for (let s = 0; s < parts.length; s++)
        if (reachable[s] && segmentMatches(segment, parts[s]!, dot)) next[s + 1] = 1
    }
    reachable = next
  }
  return reachable[parts.length] === 1
}

/**
 * Compiles a glob (`*`, `?`, `[a-z]`, `[!x]`, `{a,b}`, `**` as a whole segment, `\` escapes,
 * a leading `!` negates) into a matcher of `/`-separated paths. Matching time is bounded by the
 * pattern's size times the path's, so no pattern can make it hang.
 */
export function compileGlob(
  pattern: string,
  options: GlobMatchOptions = {},
): (path: string) => boolean {
  if (typeof pattern !== 'string') throw globError(String(pattern), 'a glob must be a string')
  if (pattern.length > MAX_GLOB_LENGTH)
    throw globError(pattern, `a glob may have at most ${MAX_GLOB_LENGTH} characters`)
  let negate = false
  let body = pattern
  while (body.startsWith('!')) {
    negate = !negate
    body = body.slice(1)
  }
  const dot = options.dot ?? false
  const alternatives = expandBraces(body, pattern).map((alt) => {
    const trimmed = alt.startsWith('/') ? alt.slice(1) : alt
    return trimmed === '' ? [] : trimmed.split('/').map(parseSegment)
  })
  const basename = options.matchBase === true && !body.includes('/')
  return (path: string) => {
    const rel = path.startsWith('/') ? path.slice(1) : path
    const parts = rel === '' ? [] : rel.split('/')
    const subject = basename && parts.length > 0 ? [parts[parts.length - 1]!] : parts
    const hit = alternatives.some((segments) => pathMatches(segments, subject, dot))
    return hit !== negate
  }
}

/** Whether a string pattern contains regular-expression syntax. */
export const hasRegexSyntax = (pattern: string): boolean => /[.*+?^${}()|[\]\\]/.test(pattern)

/** Options of {@link compileRegex}. */
export interface RegexOptions {
  readonly ignoreCase?: boolean
  /** Match the pattern literally. */
  readonly fixedStrings?: boolean
  /** The operation named in errors (default `grep`). */
  readonly syscall?: string
}

/** A compiled search pattern: `test(line)` runs in time linear in the line. */
export interface LineMatcher {
  test(line: string): boolean
  /** Where the first match in `line` starts (a UTF-16 index), or -1: for columns. */
  search(line: string): number
}

/**
 * Compiles a search pattern for untrusted input: RE2 syntax (Perl-like, without backreferences
 * and lookaround), matched in linear time. A `RegExp` is taken by its source and flags. Invalid
 * or unsupported syntax is EINVAL with the reason.
 */
export function compileRegex(pattern: string | RegExp, options: RegexOptions = {}): LineMatcher {
  const syscall = options.syscall ?? 'grep'
  const source = typeof pattern === 'string' ? pattern : pattern.source
  if (typeof source !== 'string')
    throw new FsError({ code: 'EINVAL', syscall, hint: 'the pattern must be a string' })
  if (source.length > MAX_REGEX_LENGTH)
    throw new FsError({
      code: 'EINVAL',
      syscall,
      hint: `a pattern may have at most ${MAX_REGEX_LENGTH} characters`,
    })
  const ignoreCase =
    options.ignoreCase === true || (typeof pattern !== 'string' && pattern.flags.includes('i'))
  if (typeof pattern === 'string' && (options.fixedStrings || !hasRegexSyntax(pattern))) {
    if (!ignoreCase)
      return { test: (line) => line.includes(pattern), search: (line) => line.indexOf(pattern) }
    const needle = pattern.toLowerCase()
    return {
      test: (line) => line.toLowerCase().includes(needle),
      search: (line) => line.toLowerCase().indexOf(needle),
    }
  }
  let compiled: RE2JS
  try {
    compiled = RE2JS.compile(source, ignoreCase ? RE2JS.CASE_INSENSITIVE : 0)
  } catch (error) {
    throw new FsError({
      code: 'EINVAL',
      syscall,
      hint: `invalid pattern ${JSON.stringify(source.slice(0, 200))}: ${(error as Error).message} (RE2 syntax: no backreferences or lookaround)`,
      cause: error,
    })
  }
  return {
    test: (line) => compiled.matcher(line).find(),
    search(line) {
      const m = compiled.matcher(line)
      return m.find() ? m.start() : -1
    },
  }
}
