import { ToolFailure } from '../failure.js'
import { nearMissText } from './near-miss.js'
import { normalize, TOLERANCES, type Tolerance } from './normalize.js'
import type { PatchHunk } from './patch-parse.js'
import { indentStyle, lineEndingOf, styled } from './tolerant-edit.js'

/** A file as lines, each with its own line ending (the last may have none). */
interface Lines {
  readonly text: string[]
  readonly ends: string[]
}

function toLines(text: string): Lines {
  const out: Lines = { text: [], ends: [] }
  const re = /\r\n|\n/g
  let from = 0
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    out.text.push(text.slice(from, m.index))
    out.ends.push(m[0])
    from = m.index + m[0].length
  }
  if (from < text.length) {
    out.text.push(text.slice(from))
    out.ends.push('')
  }
  return out
}

const TAB_WIDTHS = [4, 2, 8] as const
/** Line comparisons one patch may take to place its hunks (a bound on hostile patches). */
export const MAX_COMPARISONS = 50_000_000

/** The work placing one patch's hunks has done, and the lines' normalised forms so far. */
interface Budget {
  spent: number
  readonly keys: Map<string, Array<string | undefined>>
}

/** Compares lines under a rung's tolerances (with one tab width). */
function keyer(tolerances: readonly Tolerance[], tabWidth: number) {
  if (tolerances.length === 0) return (line: string) => line
  return (line: string) => normalize(line, tolerances, tabWidth).text
}

/** Where the hunk's old lines occur at or after `from`: exact first, then rung by rung. */
function locate(
  file: Lines,
  old: readonly string[],
  from: number,
  budget: Budget,
  near: number | undefined,
): { at: number[]; tolerances: Tolerance[]; tabWidth: number } {
  for (let k = 0; k <= TOLERANCES.length; k++) {
    const tolerances = TOLERANCES.slice(0, k).filter((t) => t !== 'line-endings')
    if (k > 0 && TOLERANCES[k - 1] === 'line-endings') continue
    const widths = tolerances.includes('indentation') ? TAB_WIDTHS : ([4] as const)
    for (const tabWidth of widths) {
      const key = keyer(tolerances, tabWidth)
      const want = old.map(key)
      // Each line is normalised once per rung for the whole patch (the file does not change
      // while hunks are placed).
      const name = `${tolerances.join(',')}|${tabWidth}`
      let have = budget.keys.get(name)
      if (have === undefined) {
        have = new Array<string | undefined>(file.text.length)
        budget.keys.set(name, have)
      }
      const keys = have
      const line = (i: number) => {
        let v = keys[i]
        if (v === undefined) {
          v = key(file.text[i]!)
          keys[i] = v
        }
        return v
      }
      const at: number[] = []
      for (let i = from; i + want.length <= file.text.length; i++) {
        let j = 0
        while (j < want.length && line(i + j) === want[j]) j++
        budget.spent += j + 1
        if (budget.spent > MAX_COMPARISONS)
          throw new ToolFailure(
            'PATCH_FAILED',
            `Error: the patch takes more than ${MAX_COMPARISONS} line comparisons to place (a large file and many hunks); nothing was changed. Split it into smaller patches.`,
          )
        if (j === want.length) {
          at.push(i)
          // Exactly, the first place (or the nearest to the header's line) is taken: stop once
          // no later place can be nearer. Tolerantly, every place is needed (it must be unique).
          if (tolerances.length === 0 && (near === undefined || i >= near)) break
        }
      }
      if (at.length > 0) return { at, tolerances, tabWidth }
    }
  }
  return { at: [], tolerances: [], tabWidth: 4 }
}

export interface AppliedHunks {
  readonly text: string
  /** Tolerances some hunk needed to be found. */
  readonly tolerances: readonly Tolerance[]
}

/**
 * Applies hunks in order: each is found at or after the end of the one before — a `@@ anchor`
 * line first, then its old lines, exactly (the occurrence nearest its header's line number, or
 * the first), else by the tolerance ladder, where the occurrence must be unique. Kept lines stay
 * the file's own; added lines take its line ending and, when tolerated, its indentation. The
 * first hunk that does not apply refuses all, with the closest text in the file.
 */
export function applyHunks(
  text: string,
  hunks: readonly PatchHunk[],
  display: string,
  maxLineLength: number,
): AppliedHunks {
  const file = toLines(text)
  const eol = lineEndingOf(text)
  const hadFinalNewline = text === '' || file.ends.at(-1) !== ''
  const used = new Set<Tolerance>()
  const edits: Array<{ at: number; remove: number; text: string[]; ends: string[] }> = []
  let cursor = 0
  const budget: Budget = { spent: 0, keys: new Map() }
  hunks.forEach((hunk, n) => {
    const fail = (why: string, sought: string) =>
      new ToolFailure(
        'PATCH_FAILED',
        `Error: hunk ${n + 1} of ${hunks.length} for ${display} (${hunk.header}) does not apply: ${why}. Nothing was changed.\n${nearMissText(text, sought, display, maxLineLength)}`,
      )
    if (hunk.anchor !== undefined) {
      const anchor = hunk.anchor.trim()
      let found = -1
      for (let i = cursor; i < file.text.length && found === -1; i++)
        if (file.text[i]!.trim() === anchor) found = i
      if (found === -1) throw fail(`its @@ line ${JSON.stringify(anchor)} was not found`, anchor)
      cursor = found + 1
    }
    const old = hunk.lines.filter((l) => l.op !== '+').map((l) => l.text.replace(/\r$/, ''))
    let at: number
    let tolerances: Tolerance[] = []
    let tabWidth = 4
    if (old.length === 0) {
      // Pure addition: after the line its header names, else at the end of the file.
      at =
        hunk.oldStart !== undefined && !hunk.endOfFile
          ? Math.min(Math.max(hunk.oldStart, cursor), file.text.length)
          : file.text.length
    } else {
      // Where the hunk says it is: at the end (End of File), else its header's line, if any.
      const near = hunk.endOfFile
        ? file.text.length - old.length
        : hunk.oldStart === undefined
          ? undefined
          : hunk.oldStart - 1
      const found = locate(file, old, cursor, budget, near)
      if (found.at.length === 0)
        throw fail(
          `its ${old.length} old line(s) were not found${cursor > 0 ? ` after line ${cursor}` : ''}, not even with whitespace or look-alike characters tolerated`,
          old.join('\n'),
        )
      tolerances = found.tolerances
      tabWidth = found.tabWidth
      if (tolerances.length > 0 && found.at.length > 1)
        throw fail(
          `its old lines match ${found.at.length} places (lines ${found.at
            .slice(0, 10)
            .map((i) => i + 1)
            .join(', ')}) only with ${tolerances.join(', ')} tolerated; add context lines`,
          old.join('\n'),
        )
      at =
        near === undefined
          ? found.at[0]!
          : found.at.reduce((a, b) => (Math.abs(b - near) < Math.abs(a - near) ? b : a))
    }
    for (const t of tolerances) used.add(t)
    const region = file.text.slice(at, at + old.length).join('\n')
    const indent = tolerances.includes('indentation') ? indentStyle(region, text) : undefined
    const out = { at, remove: old.length, text: [] as string[], ends: [] as string[] }
    let k = 0
    for (const l of hunk.lines) {
      if (l.op === ' ') {
        out.text.push(file.text[at + k]!)
        out.ends.push(file.ends[at + k]!)
        k++
      } else if (l.op === '-') k++
      else {
        out.text.push(styled(l.text.replace(/\r$/, ''), true, { eol: '\n', indent, tabWidth }))
        out.ends.push(eol)
      }
    }
    const atEnd = at + old.length === file.text.length
    if (atEnd && out.text.length > 0) {
      // The last line of the file: its ending is the diff's word, else what the file had.
      const keep = hunk.oldStart !== undefined ? !hunk.noFinalNewline : hadFinalNewline
      out.ends[out.ends.length - 1] = keep ? out.ends.at(-1) || eol : ''
    }
    edits.push(out)
    cursor = at + old.length
  })
  // In order and not overlapping (each found after the one before); applied last to first.
  for (const e of edits.reverse()) {
    file.text.splice(e.at, e.remove, ...e.text)
    file.ends.splice(e.at, e.remove, ...e.ends)
  }
  // A line that was last and is no longer needs an ending.
  for (let i = 0; i < file.text.length - 1; i++) if (file.ends[i] === '') file.ends[i] = eol
  return {
    text: file.text.map((l, i) => l + file.ends[i]).join(''),
    tolerances: [...used],
  }
}
