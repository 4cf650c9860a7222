import { applyPatch, parsePatch, type StructuredPatchHunk } from 'diff'
import { MemoryError } from '../errors.js'

/** Longest diff accepted, in characters. */
export const MAX_DIFF_CHARS = 1 << 20
/** Most hunks one diff may carry. */
export const MAX_HUNKS = 1000

function header(h: StructuredPatchHunk): string {
  return `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`
}

const bare = (line: string) => line.replace(/\r$/, '')

/**
 * Applies a unified diff of one file to `text`, hunk by hunk, exactly: each hunk's context and
 * removed lines must be at the line its header names (moved by what earlier hunks added or
 * removed), with no fuzz. The first hunk that does not fit refuses the whole diff, naming it.
 * Parsing and applying are the `diff` library's.
 */
export function applyUnifiedDiff(text: string, diffText: string): string {
  if (typeof diffText !== 'string' || diffText.length === 0)
    throw new MemoryError('INVALID_ARGUMENT', 'diff_text must be a non-empty unified diff')
  if (diffText.length > MAX_DIFF_CHARS)
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `a diff is at most ${MAX_DIFF_CHARS} characters; split it into several patches`,
    )
  let patches: ReturnType<typeof parsePatch>
  try {
    patches = parsePatch(diffText)
  } catch (error) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `diff_text is not a unified diff: ${(error as Error).message}`,
    )
  }
  const withHunks = patches.filter((p) => p.hunks.length > 0)
  if (withHunks.length !== 1)
    throw new MemoryError(
      'INVALID_ARGUMENT',
      withHunks.length === 0
        ? 'diff_text has no hunks (lines starting with @@); make a unified diff with context'
        : 'diff_text changes several files; send one patch per file',
    )
  const patch = withHunks[0]!
  if (patch.hunks.length > MAX_HUNKS)
    throw new MemoryError('INVALID_ARGUMENT', `a diff has at most ${MAX_HUNKS} hunks`)
  let current = text
  let shift = 0
  for (const [i, hunk] of patch.hunks.entries()) {
    const lines = current.split('\n')
    const start = hunk.oldStart + shift
    const old = hunk.lines.filter((l) => l[0] === ' ' || l[0] === '-').map((l) => bare(l.slice(1)))
    // An insertion into an empty range (oldLines 0) goes after line `start`.
    const from = hunk.oldLines === 0 ? start : start - 1
    const found = lines.slice(from, from + old.length).map(bare)
    const fits =
      from >= 0 && from + old.length <= lines.length && old.every((l, k) => l === found[k])
    const next = fits
      ? applyPatch(
          current,
          { ...patch, hunks: [{ ...hunk, oldStart: start, newStart: hunk.newStart + shift }] },
          { fuzzFactor: 0 },
        )
      : false
    if (next === false) {
      const k = old.findIndex((l, j) => l !== found[j])
      const where =
        k === -1 || found[k] === undefined
          ? `the file ends before line ${from + old.length}`
          : `line ${from + k + 1} is ${JSON.stringify(found[k]!.slice(0, 80))}, the hunk expects ${JSON.stringify(old[k]!.slice(0, 80))}`
      throw new MemoryError(
        'PATCH_FAILED',
        `hunk ${i + 1} of ${patch.hunks.length} (${header(hunk)}) does not apply: ${where}; nothing was written — read the file again and make the diff against it`,
      )
    }
    current = next
    shift += hunk.newLines - hunk.oldLines
  }
  return current
}
