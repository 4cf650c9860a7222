import type { Inspection } from '../context.js'
import { HttpError, LIMITS } from '../limits.js'
import { fsCall } from './files.js'

/** One line of a file that holds the text searched for. */
export interface SearchMatch {
  readonly path: string
  /** 1-based. */
  readonly line: number
  /**
   * The line, or past `LIMITS.searchLineChars` a window of that many characters around the
   * first match (`cut`).
   */
  readonly text: string
  readonly cut: boolean
}

/** What a search found: matching lines in path order, at most `limit` of them. */
export interface SearchPage {
  readonly query: string
  readonly path: string
  readonly matches: SearchMatch[]
  /** More lines match than were returned: narrow the directory or the text. */
  readonly truncated: boolean
}

/**
 * The lines of the files under `path` that hold `query` as it is written (never a pattern: no
 * regular expression from a request runs here), through the inspection's filesystem — so a
 * policy hides what it hides — within the search budgets of {@link LIMITS}. It reads what is
 * stored and writes nothing (no index is brought up to date).
 */
export async function search(
  ins: Inspection,
  query: string,
  path: string,
  limit: number,
  ignoreCase: boolean,
): Promise<SearchPage> {
  let found: Awaited<ReturnType<typeof ins.fs.grep>>
  try {
    found = await fsCall(() =>
      ins.fs.grep(query, {
        path,
        fixedStrings: true,
        ignoreCase,
        maxMatches: limit + 1,
        maxBytes: LIMITS.searchBytes,
        timeoutMs: LIMITS.searchMs,
      }),
    )
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code === 'ETIMEDOUT' || code === 'EFBIG')
      throw new HttpError(
        413,
        `the search under ${path} went past its budget (${LIMITS.searchBytes} bytes, ${LIMITS.searchMs} ms): search a smaller directory`,
      )
    throw error
  }
  const needle = ignoreCase ? query.toLowerCase() : query
  return {
    query,
    path,
    matches: found
      .slice(0, limit)
      .map((m) => ({ path: m.path, line: m.line, ...around(m.text, needle, ignoreCase) })),
    truncated: found.length > limit,
  }
}

/** `text` whole, or the window of `LIMITS.searchLineChars` characters around `needle`'s first place. */
function around(text: string, needle: string, ignoreCase: boolean): { text: string; cut: boolean } {
  const width = LIMITS.searchLineChars
  if (text.length <= width) return { text, cut: false }
  const at = Math.max(0, (ignoreCase ? text.toLowerCase() : text).indexOf(needle))
  const start = Math.max(
    0,
    Math.min(at - Math.floor((width - needle.length) / 2), text.length - width),
  )
  return { text: text.slice(start, start + width), cut: true }
}
