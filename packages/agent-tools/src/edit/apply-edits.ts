import { ToolFailure } from '../failure.js'
import { nearMissText } from './near-miss.js'
import {
  applyMatches,
  describeTolerance,
  findMatches,
  linesOf,
  MAX_MATCHES,
} from './tolerant-edit.js'

/** One edit of `edit_file`/`multi_edit`: text to find and what replaces it. */
export interface PlannedEdit {
  readonly old: string
  readonly replacement: string
  readonly all: boolean
}

/**
 * Applies edits to text, each found exactly or else by the tolerance ladder of `findMatches`
 * (a unique match only, unless replace_all); throws ToolFailure with near-miss diagnostics.
 */
export function applyEdits(
  text: string,
  edits: readonly PlannedEdit[],
  display: string,
  maxLineLength = 2000,
): { text: string; firstLine: number; tolerances: string[] } {
  let firstLine = Number.POSITIVE_INFINITY
  const tolerances: string[] = []
  for (const edit of edits) {
    if (edit.old === edit.replacement) {
      throw new ToolFailure(
        'NO_CHANGE',
        'No changes to make: old_string and new_string are exactly the same.',
      )
    }
    if (edit.old.length === 0)
      throw new ToolFailure(
        'EINVAL',
        'old_string is empty. To create a file use create_file or write_file; to add to one, include the neighbouring text in old_string.',
      )
    // replace_all of an exact text: every occurrence, however many.
    if (edit.all && text.includes(edit.old)) {
      firstLine = Math.min(firstLine, linesOf(text, [text.indexOf(edit.old)])[0]!)
      text = text.split(edit.old).join(edit.replacement)
      continue
    }
    const found = findMatches(text, edit.old, edit.replacement)
    if (found.matches.length === 0) {
      throw new ToolFailure(
        'NOT_FOUND',
        `String to replace not found in file.\nString: ${edit.old.length > 500 ? `${edit.old.slice(0, 500)}…` : edit.old}\n(Not even with line endings, trailing whitespace, tabs vs spaces or look-alike characters tolerated.)\n${nearMissText(text, edit.old, display, maxLineLength)}`,
      )
    }
    if (found.matches.length > MAX_MATCHES)
      throw new ToolFailure(
        'AMBIGUOUS',
        `The string to replace matches more than ${MAX_MATCHES} places only with ${describeTolerance(found)} tolerated; nothing was changed. Copy the text exactly as it is in the file.`,
      )
    const lines = linesOf(
      text,
      found.matches.map((m) => m.start),
    )
    if (found.matches.length > 1 && !edit.all) {
      const how = describeTolerance(found)
      throw new ToolFailure(
        'AMBIGUOUS',
        `Found ${found.matches.length} matches of the string to replace${how ? ` (with ${how} tolerated)` : ''}, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: ${edit.old}\nMatches at lines: ${lines.slice(0, 50).join(', ')} of ${display}`,
      )
    }
    const how = describeTolerance(found)
    if (how !== undefined && !tolerances.includes(how)) tolerances.push(how)
    firstLine = Math.min(firstLine, lines[0]!)
    text = applyMatches(text, found)
  }
  return { text, firstLine, tolerances }
}
