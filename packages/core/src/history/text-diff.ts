import { formatPatch, type StructuredPatch, structuredPatch } from 'diff'
import { AgentFsError } from '../errors.js'

/**
 * What one unified diff may cost. Myers' algorithm (the `diff` library's) costs about
 * (lines of both sides) × (lines changed): quadratic when a whole file changes. Past the budget
 * the diff falls back to one linear hunk (the common first and last lines kept, everything
 * between them replaced); past `maxLines` it is a one-line summary. So a diff never holds the
 * event loop for more than about `timeoutMs` and never grows past `maxLines`, whatever an agent
 * wrote.
 */
export interface DiffBudget {
  /** Cells of Myers' edit graph (lines of both sides × edits) before the linear fallback. */
  readonly work?: number
  /** Wall-clock cap on the search, a backstop for slow machines (milliseconds). */
  readonly timeoutMs?: number
  /** Lines the unified diff may have; a longer one is replaced by a summary line. */
  readonly maxLines?: number
  /** Lines of context around each hunk (3, as `diff -u`). */
  readonly context?: number
}

/** The default budget: about 20 ms of diffing on a two-core machine of this project's kind; the time-out a backstop. */
export const DIFF_BUDGET: Required<DiffBudget> = {
  work: 200_000,
  timeoutMs: 50,
  maxLines: 40_000,
  context: 3,
}

/** How a {@link unifiedDiff} was made. */
export type DiffMethod = 'myers' | 'linear' | 'summary'

/** A unified diff and how it was made (see {@link DiffBudget}). */
export interface BoundedDiff {
  readonly text: string
  readonly method: DiffMethod
  readonly oldLines: number
  readonly newLines: number
}

/**
 * A unified diff of two texts, bounded in time and size (see {@link DiffBudget}): minimal while
 * the budget allows, else one hunk from the first to the last differing line, else a summary
 * line (`files differ: N vs M lines …`).
 *
 * @example
 * unifiedDiff('a/notes.md', 'b/notes.md', before, after).text
 */
export function unifiedDiff(
  oldName: string,
  newName: string,
  before: string,
  after: string,
  budget: DiffBudget = {},
): BoundedDiff {
  const { work, timeoutMs, maxLines, context } = { ...DIFF_BUDGET, ...budget }
  const a = linesOf(before)
  const b = linesOf(after)
  const total = a.keys.length + b.keys.length
  const oldLines = a.keys.length
  const newLines = b.keys.length
  const summary = (why: string): BoundedDiff => ({
    text: `--- ${oldName}\n+++ ${newName}\nfiles differ: ${oldLines} vs ${newLines} lines; ${why}\n`,
    method: 'summary',
    oldLines,
    newLines,
  })
  // Myers' search stops once its edit length passes what the budget's cells allow.
  const maxEditLength = Math.max(1, Math.floor(work / Math.max(1, total)))
  const minimal = structuredPatch(oldName, newName, before, after, undefined, undefined, {
    context,
    maxEditLength,
    timeout: timeoutMs,
  })
  const patch = minimal ?? linearPatch(oldName, newName, a, b, context)
  const size = patch.hunks.reduce((sum, h) => sum + h.lines.length + 1, 2)
  if (size > maxLines)
    return summary(`the diff would have ${size} lines, over the budget of ${maxLines}`)
  return {
    text: formatPatch(patch),
    method: minimal ? 'myers' : 'linear',
    oldLines,
    newLines,
  }
}

/** A text's lines without their line ends; the last one marked when it has no newline. */
interface Lines {
  readonly lines: readonly string[]
  /** What lines are compared by: the last line without a newline differs from one with. */
  readonly keys: readonly string[]
  readonly finalNewline: boolean
}

const NO_NEWLINE = '\\ No newline at end of file'

function linesOf(text: string): Lines {
  const lines = text.split('\n')
  const finalNewline = lines.at(-1) === ''
  if (finalNewline) lines.pop()
  const keys = finalNewline || lines.length === 0 ? lines : [...lines]
  if (!finalNewline && keys.length > 0)
    (keys as string[])[keys.length - 1] = `${keys.at(-1)}\n${NO_NEWLINE}`
  return { lines, keys, finalNewline }
}

/**
 * One hunk replacing everything between the common first and last lines: linear in the size of
 * the texts, correct (it applies), not minimal.
 */
function linearPatch(
  oldName: string,
  newName: string,
  a: Lines,
  b: Lines,
  context: number,
): StructuredPatch {
  const n = a.keys.length
  const m = b.keys.length
  let prefix = 0
  while (prefix < n && prefix < m && a.keys[prefix] === b.keys[prefix]) prefix++
  let suffix = 0
  while (
    suffix < n - prefix &&
    suffix < m - prefix &&
    a.keys[n - 1 - suffix] === b.keys[m - 1 - suffix]
  )
    suffix++
  const patch: StructuredPatch = {
    oldFileName: oldName,
    newFileName: newName,
    oldHeader: undefined,
    newHeader: undefined,
    hunks: [],
  }
  if (prefix === n && prefix === m) return patch
  const start = Math.max(0, prefix - context)
  const oldEnd = Math.min(n, n - suffix + context)
  const newEnd = Math.min(m, m - suffix + context)
  const lines: string[] = []
  const push = (mark: string, side: Lines, i: number) => {
    lines.push(`${mark}${side.lines[i]}`)
    if (i === side.lines.length - 1 && !side.finalNewline) lines.push(NO_NEWLINE)
  }
  for (let i = start; i < prefix; i++) push(' ', a, i)
  for (let i = prefix; i < n - suffix; i++) push('-', a, i)
  for (let i = prefix; i < m - suffix; i++) push('+', b, i)
  for (let i = n - suffix; i < oldEnd; i++) push(' ', a, i)
  patch.hunks.push({
    oldStart: start + 1,
    oldLines: oldEnd - start,
    newStart: start + 1,
    newLines: newEnd - start,
    lines,
  })
  return patch
}

/** Default of `maxTextBytes`: the file text one tree diff makes unified diffs of at most. */
export const DIFF_TEXT_BUDGET = 64 * 1024 * 1024

/**
 * The file text a tree diff (history's, an overlay's) makes unified diffs of in one call:
 * `take(bytes)` says whether the next file's diff fits, and counts it when it does. A tree of
 * many large text files cannot make one call hold them all in memory.
 */
export function diffTextBudget(maxTextBytes: number = DIFF_TEXT_BUDGET): {
  take(bytes: number): boolean
} {
  if (!Number.isSafeInteger(maxTextBytes) || maxTextBytes < 0)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `diff: maxTextBytes must be a whole number of bytes ≥ 0, not ${String(maxTextBytes)}`,
    )
  let left = maxTextBytes
  return {
    take(bytes) {
      if (bytes > left) return false
      left -= bytes
      return true
    },
  }
}
