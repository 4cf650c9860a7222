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
  // Every hunk is checked against the file as it is, where its header puts it (headers count
  // lines of the original), in one pass; then the library applies them all at once — work in
  // proportion to the file and the diff, not to their product.
  const lines = text.split('\n')
  let end = 0
  for (const [i, hunk] of patch.hunks.entries()) {
    const old = hunk.lines.filter((l) => l[0] === ' ' || l[0] === '-').map((l) => bare(l.slice(1)))
    // An insertion into an empty range (oldLines 0) goes after line `oldStart`.
    const from = hunk.oldLines === 0 ? hunk.oldStart : hunk.oldStart - 1
    const refuse = (where: string) =>
      new MemoryError(
        'PATCH_FAILED',
        `hunk ${i + 1} of ${patch.hunks.length} (${header(hunk)}) does not apply: ${where}; nothing was written — read the file again and make the diff against it`,
      )
    if (from < end) throw refuse(`it overlaps the hunk before it or comes before it`)
    const k = old.findIndex((l, j) => from + j >= lines.length || bare(lines[from + j]!) !== l)
    if (from < 0 || k !== -1) {
      const found = k === -1 ? undefined : lines[from + k]
      throw refuse(
        found === undefined
          ? `the file ends before line ${from + old.length}`
          : `line ${from + k + 1} is ${JSON.stringify(bare(found).slice(0, 80))}, the hunk expects ${JSON.stringify(old[k]!.slice(0, 80))}`,
      )
    }
    end = from + old.length
  }
  const out = applyPatch(text, patch, { fuzzFactor: 0 })
  if (out === false)
    throw new MemoryError(
      'PATCH_FAILED',
      'the diff does not apply as a whole (its hunks fit one by one but not together); nothing was written — make one diff against the file as it is',
    )
  return out
}
