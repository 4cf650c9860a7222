import { type ChangeObject, diffChars, diffLines } from 'diff'
import {
  type Normalized,
  normalize,
  normalizedIndex,
  TOLERANCES,
  type Tolerance,
} from './normalize.js'

/** Where an edit's old text was found: a span of the original text and how it was found. */
export interface EditMatch {
  readonly start: number
  readonly end: number
  readonly tolerances: readonly Tolerance[]
  readonly tabWidth: number
  /** The normalised old text and the file's normalisation, to map kept text back. */
  readonly normalizedOld: Normalized
  readonly normalizedFile: Normalized
  readonly normalizedStart: number
}

export interface FoundMatches {
  readonly matches: readonly EditMatch[]
  /** The tolerances of the rung that found them (empty: exact). */
  readonly tolerances: readonly Tolerance[]
  /** `old_string` lost a `read_file` line-number prefix on every line. */
  readonly strippedLineNumbers: boolean
  readonly old: string
  readonly replacement: string
}

const TAB_WIDTHS = [4, 2, 8] as const
/** Largest file searched tolerantly (larger ones are matched exactly only). */
export const MAX_TOLERANT_CHARS = 4 << 20
/** Most matches collected at one rung (replace_all beyond this is refused as too broad). */
export const MAX_MATCHES = 10_000

function occurrences(haystack: string, needle: string): number[] {
  const at: number[] = []
  if (needle.length === 0) return at
  for (let from = 0; at.length <= MAX_MATCHES; ) {
    const i = haystack.indexOf(needle, from)
    if (i === -1) break
    at.push(i)
    from = i + needle.length
  }
  return at
}

function rung(text: string, old: string, tolerances: readonly Tolerance[]): EditMatch[] {
  const byStart = new Map<string, EditMatch>()
  const widths = tolerances.includes('indentation') ? TAB_WIDTHS : ([4] as const)
  for (const tabWidth of widths) {
    const nf = normalize(text, tolerances, tabWidth)
    const no = normalize(old, tolerances, tabWidth)
    for (const s of occurrences(nf.text, no.text)) {
      // A match starting or ending inside what one original character became (two of a tab's
      // spaces, part of an ellipsis' dots) is not a match of whole characters.
      const e = s + no.text.length
      if (s > 0 && nf.origin[s - 1] === nf.origin[s]) continue
      if (e < nf.text.length && nf.origin[e - 1] === nf.origin[e]) continue
      const start = nf.origin[s]!
      // The span ends after its last character: whitespace a tolerance dropped after it (at
      // the end of a line) stays the file's.
      let end = nf.origin[s + no.text.length]!
      const last = nf.origin[s + no.text.length - 1]!
      while (end > last + 1 && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--
      const key = `${start}:${end}`
      if (!byStart.has(key))
        byStart.set(key, {
          start,
          end,
          tolerances,
          tabWidth,
          normalizedOld: no,
          normalizedFile: nf,
          normalizedStart: s,
        })
    }
  }
  // Spans found at two tab widths that overlap without being equal are different readings of
  // the same text: both count, and the edit is then ambiguous.
  return [...byStart.values()].sort((a, b) => a.start - b.start)
}

const sameSpans = (a: readonly EditMatch[], b: readonly EditMatch[]) =>
  a.length === b.length && a.every((m, i) => m.start === b[i]!.start && m.end === b[i]!.end)

/** `read_file`'s `cat -n` prefix (number right-aligned, then a tab), as models copy it. */
const LINE_NUMBER = /^(?: {5}\d| {4}\d{2}| {3}\d{3}| {2}\d{4}| \d{5}|\d{6,})\t/

function stripLineNumbers(text: string): string | undefined {
  const lines = text.split('\n')
  if (!lines.every((l) => LINE_NUMBER.test(l))) return undefined
  return lines.map((l) => l.replace(LINE_NUMBER, '')).join('\n')
}

/**
 * The ladder: the exact text, then each tolerance added in turn ({@link TOLERANCES}); the first
 * rung where the text occurs decides. Last, if every line of `old` starts with a `read_file`
 * line-number prefix, the ladder again without the prefixes (in `replacement` too when every
 * line of it has one). Tolerances touch only line ends, whitespace at line ends and starts, and
 * look-alike characters, so a real content difference never matches.
 */
export function findMatches(text: string, old: string, replacement: string): FoundMatches {
  // A file larger than MAX_TOLERANT_CHARS is matched exactly only (each rung normalises it).
  const top = text.length > MAX_TOLERANT_CHARS ? 0 : TOLERANCES.length
  const climb = (o: string): { matches: EditMatch[]; tolerances: Tolerance[] } => {
    for (let k = 0; k <= top; k++) {
      const tolerances = TOLERANCES.slice(0, k)
      let matches = rung(text, o, tolerances)
      if (matches.length === 0) continue
      // Name only the tolerances this match needs: drop each earlier one that finds the same.
      let needed = tolerances
      for (const t of tolerances.slice(0, -1)) {
        const without = needed.filter((u) => u !== t)
        const again = rung(text, o, without)
        if (sameSpans(again, matches)) {
          needed = without
          matches = again
        }
      }
      return { matches, tolerances: needed }
    }
    return { matches: [], tolerances: [] }
  }
  const first = climb(old)
  if (first.matches.length > 0 || old.length === 0)
    return { ...first, strippedLineNumbers: false, old, replacement }
  const stripped = stripLineNumbers(old)
  if (stripped !== undefined && stripped.trim() !== '') {
    const again = climb(stripped)
    if (again.matches.length > 0)
      return {
        ...again,
        strippedLineNumbers: true,
        old: stripped,
        // Lines the model added carry no number: each line that has one loses it.
        replacement: replacement
          .split('\n')
          .map((l) => l.replace(LINE_NUMBER, ''))
          .join('\n'),
      }
  }
  return { matches: [], tolerances: [], strippedLineNumbers: false, old, replacement }
}

/** The line ending a text uses throughout: CRLF only when every line ending is one. */
export function lineEndingOf(text: string): '\r\n' | '\n' {
  const crlf = text.split('\r\n').length - 1
  if (crlf === 0) return '\n'
  const lf = text.split('\n').length - 1
  return lf === crlf ? '\r\n' : '\n'
}

/** Tabs or spaces: what the lines of `region` (else of the file) are indented with. */
export function indentStyle(region: string, file: string): 'tabs' | 'spaces' | undefined {
  for (const text of [region, file]) {
    const tabs = (text.match(/^\t/gm) ?? []).length
    const spaces = (text.match(/^ {2,}/gm) ?? []).length
    if (tabs > spaces) return 'tabs'
    if (spaces > tabs) return 'spaces'
  }
  return undefined
}

export interface Style {
  readonly eol: '\r\n' | '\n'
  readonly indent: 'tabs' | 'spaces' | undefined
  readonly tabWidth: number
}

/** Text the model added, in the file's style: its line ends and, when tolerated, its indentation. */
export function styled(added: string, atLineStart: boolean, style: Style): string {
  let out = added.replace(/\r?\n/g, '\n')
  if (style.indent !== undefined) {
    const w = style.tabWidth
    const reindent = (lead: string) => {
      if (style.indent === 'spaces') return lead.replace(/\t/g, ' '.repeat(w))
      const columns = [...lead].reduce((c, ch) => (ch === '\t' ? c + w - (c % w) : c + 1), 0)
      return '\t'.repeat(Math.floor(columns / w)) + ' '.repeat(columns % w)
    }
    out = out.replace(/(^|\n)([ \t]+)/g, (m, nl: string, lead: string, at: number) =>
      nl === '' && !(at === 0 && atLineStart) ? m : nl + reindent(lead),
    )
  }
  return style.eol === '\r\n' ? out.replace(/\n/g, '\r\n') : out
}

/** Longest line pair diffed character by character (beyond it, a line is replaced whole). */
const CHAR_DIFF_LINE = 2_000

type Change = Pick<ChangeObject<string>, 'value' | 'added' | 'removed'>

/**
 * What the model changed between its old and new text: by lines first (so an added line is never
 * stitched from spaces of the lines around it), then, where a block of lines was replaced by as
 * many lines, character by character within each pair.
 */
function changes(old: string, replacement: string): Change[] | undefined {
  const blocks = diffLines(old, replacement, { maxEditLength: 2_000 })
  if (blocks === undefined) return undefined
  const out: Change[] = []
  for (let i = 0; i < blocks.length; i++) {
    const block = blocks[i]!
    const next = blocks[i + 1]
    if (block.removed && next?.added) {
      const a = block.value.split(/(?<=\n)/)
      const b = next.value.split(/(?<=\n)/)
      if (a.length === b.length) {
        for (const [k, line] of a.entries()) {
          const pair =
            line.length + b[k]!.length <= CHAR_DIFF_LINE
              ? diffChars(line, b[k]!, { maxEditLength: 200 })
              : undefined
          out.push(
            ...(pair ?? [
              { value: line, removed: true, added: false },
              { value: b[k]!, added: true, removed: false },
            ]),
          )
        }
        i++
        continue
      }
    }
    out.push(block)
  }
  return out
}

/**
 * `text` with every match of `found` replaced (right to left, so earlier spans stay where they
 * were found), each in the file's style; the model's change is diffed once for all of them.
 */
export function applyMatches(text: string, found: FoundMatches): string {
  const tolerant = found.matches.some((m) => m.tolerances.length > 0)
  const parts = tolerant ? changes(found.old, found.replacement) : undefined
  let out = text
  for (const match of [...found.matches].reverse())
    out =
      out.slice(0, match.start) +
      replacementWith(out, match, found.replacement, parts) +
      out.slice(match.end)
  return out
}

/**
 * The text that replaces a match: what the model kept of its old text is the file's own text
 * (byte for byte: its line ends, indentation, quotes), what it added takes the file's line ends
 * and, when indentation was tolerated, its tabs or spaces.
 */
export function replacementFor(
  text: string,
  match: EditMatch,
  old: string,
  replacement: string,
): string {
  const parts = match.tolerances.length > 0 ? changes(old, replacement) : undefined
  return replacementWith(text, match, replacement, parts)
}

/** `replacementFor` with the model's change (old → replacement) already diffed. */
function replacementWith(
  text: string,
  match: EditMatch,
  replacement: string,
  parts: Change[] | undefined,
): string {
  const region = text.slice(match.start, match.end)
  const tolerant = match.tolerances.length > 0
  const eol = lineEndingOf(region.includes('\n') ? region : text)
  const style: Style = {
    eol,
    indent: match.tolerances.includes('indentation') ? indentStyle(region, text) : undefined,
    tabWidth: match.tabWidth,
  }
  const lineStart = match.start === 0 || text[match.start - 1] === '\n'
  if (!tolerant) return eol === '\r\n' ? styled(replacement, lineStart, style) : replacement
  if (parts === undefined) return styled(replacement, lineStart, style)
  const no = match.normalizedOld
  const nf = match.normalizedFile
  const fileAt = (n: number) =>
    n <= 0 ? match.start : n >= no.text.length ? match.end : nf.origin[match.normalizedStart + n]!
  let out = ''
  let oldAt = 0
  for (const part of parts) {
    if (part.added) {
      const atLineStart = out === '' ? lineStart : out.endsWith('\n')
      out += styled(part.value, atLineStart, style)
      continue
    }
    const next = oldAt + part.value.length
    if (!part.removed) {
      // Kept text is the file's own, when the file's span reads as the kept text does; a
      // boundary inside a normalised run (half of a tab's spaces) keeps the model's text.
      const kept = text.slice(fileAt(normalizedIndex(no, oldAt)), fileAt(normalizedIndex(no, next)))
      const same =
        normalize(kept, match.tolerances, match.tabWidth).text ===
        normalize(part.value, match.tolerances, match.tabWidth).text
      out += same ? kept : styled(part.value, out === '' ? lineStart : out.endsWith('\n'), style)
    }
    oldAt = next
  }
  return out
}

/** 1-based lines of ascending character indexes, in one pass over the text. */
export function linesOf(text: string, at: readonly number[]): number[] {
  const out: number[] = []
  let line = 1
  let i = text.indexOf('\n')
  for (const index of at) {
    for (; i !== -1 && i < index; i = text.indexOf('\n', i + 1)) line++
    out.push(line)
  }
  return out
}

/** How a tolerant match is described to the model. */
export function describeTolerance(found: FoundMatches): string | undefined {
  const names: Record<Tolerance, string> = {
    'line-endings': 'line endings',
    'trailing-whitespace': 'trailing whitespace',
    indentation: 'tabs vs spaces in indentation',
    unicode: 'look-alike characters (curly quotes, dashes, non-breaking spaces)',
  }
  const used = found.tolerances.map((t) => names[t])
  if (found.strippedLineNumbers) used.push('read_file line-number prefixes')
  return used.length === 0 ? undefined : used.join(', ')
}
