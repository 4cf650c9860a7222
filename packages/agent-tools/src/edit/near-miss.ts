import { numbered, shortDiff, splitLines } from '../text.js'
import { normalize, TOLERANCES } from './normalize.js'

/** A region of the file that resembles the text the model looked for. */
export interface NearMiss {
  /** 1-based first and last line. */
  readonly from: number
  readonly to: number
  /** Lines of the sought text found alike in the region. */
  readonly alike: number
}

/** A line compared with every tolerance on and its ends trimmed. */
const key = (line: string) => normalize(line, TOLERANCES).text.trim()

/** Lines that occur more often than this say nothing about where the text is (`}`, blank). */
const COMMON = 200
/** Lines of the sought text compared (the rest only widen the window). */
const SOUGHT_LINES = 200
/** Candidates shown. */
const SHOWN = 2

function bigrams(s: string): Map<string, number> {
  const m = new Map<string, number>()
  for (let i = 0; i + 1 < s.length; i++) {
    const b = s.slice(i, i + 2)
    m.set(b, (m.get(b) ?? 0) + 1)
  }
  return m
}

/** Sørensen–Dice similarity of two strings' character bigrams (0 to 1). */
function dice(a: string, b: string, aGrams = bigrams(a)): number {
  if (a.length < 2 || b.length < 2) return a === b ? 1 : 0
  const bGrams = bigrams(b)
  let shared = 0
  for (const [g, n] of aGrams) shared += Math.min(n, bGrams.get(g) ?? 0)
  return (2 * shared) / (a.length - 1 + (b.length - 1))
}

/**
 * The regions of `text` most like `sought`, best first: windows of as many lines as `sought`
 * has, voted for by each of its distinctive lines found (tolerantly) in the file; when no line
 * is found, the window around the line most like `sought`'s longest line (bigram similarity of
 * at least one half). Work is linear in the file's lines and the sought lines.
 */
export function nearMisses(text: string, sought: string): NearMiss[] {
  return missesIn(splitLines(text.replace(/\r\n?/g, '\n')), sought)
}

/** `nearMisses` over the file's lines, their ends already made `\n`. */
function missesIn(fileLines: string[], sought: string): NearMiss[] {
  // The first SOUGHT_LINES lines say where the text is as well as all of them would.
  const soughtLines = sought.replace(/\r\n?/g, '\n').split('\n', SOUGHT_LINES)
  if (fileLines.length === 0 || sought.trim() === '') return []
  const span = soughtLines.length
  const at = new Map<string, number[]>()
  fileLines.forEach((line, i) => {
    const k = key(line)
    if (k === '') return
    const list = at.get(k)
    if (list === undefined) at.set(k, [i])
    else if (list.length <= COMMON) list.push(i)
  })
  const votes = new Map<number, number>()
  soughtLines.forEach((line, j) => {
    const k = key(line)
    const list = k === '' ? undefined : at.get(k)
    if (list === undefined || list.length > COMMON) return
    for (const i of list) votes.set(i - j, (votes.get(i - j) ?? 0) + 1)
  })
  const clamp = (start: number) => Math.max(0, Math.min(start, fileLines.length - 1))
  const ranked = [...votes].sort((a, b) => b[1] - a[1] || a[0] - b[0])
  const out: NearMiss[] = []
  for (const [start, alike] of ranked) {
    const from = clamp(start)
    const to = Math.min(fileLines.length, from + span) - 1
    if (out.some((m) => from <= m.to - 1 && to >= m.from - 1)) continue
    out.push({ from: from + 1, to: to + 1, alike })
    if (out.length === SHOWN) break
  }
  if (out.length > 0) return out
  // No line alike: the line most like the longest sought line.
  const longest = soughtLines.reduce(
    (j, l, i) => (l.trim().length > soughtLines[j]!.trim().length ? i : j),
    0,
  )
  const probe = key(soughtLines[longest]!)
  const grams = bigrams(probe)
  let best = -1
  let bestScore = 0.5
  fileLines.forEach((line, i) => {
    const k = key(line)
    if (Math.abs(k.length - probe.length) > Math.max(probe.length, 8)) return
    const score = dice(probe, k, grams)
    if (score > bestScore) {
      bestScore = score
      best = i
    }
  })
  if (best === -1) return []
  const from = clamp(best - longest)
  return [{ from: from + 1, to: Math.min(fileLines.length, from + span), alike: 0 }]
}

/** Most characters of diagnostics one failed edit prints. */
const BUDGET = 3_000

/**
 * What a failed edit tells the model: the closest regions with line numbers and a short diff of
 * what differs (`-` the file, `+` the text it sent), within {@link BUDGET} characters.
 */
export function nearMissText(
  text: string,
  sought: string,
  display: string,
  maxLineLength: number,
): string {
  const lines = splitLines(text.replace(/\r\n?/g, '\n'))
  const misses = missesIn(lines, sought)
  if (misses.length === 0)
    return 'No similar text was found in the file either. Read the file again (read_file) and copy the text to replace exactly.'
  const parts: string[] = []
  for (const m of misses) {
    const region = lines.slice(m.from - 1, m.to)
    const alike =
      m.alike > 0 ? `${m.alike} of ${sought.split('\n').length} lines alike` : 'a similar line'
    const diff = shortDiff(
      display,
      `${region.join('\n')}\n`,
      `${sought.replace(/\r\n?/g, '\n')}\n`,
      24,
    )
    parts.push(
      `The closest text is at lines ${m.from}-${m.to} of ${display} (${alike}):\n${numbered(region.slice(0, 20), m.from, Math.min(maxLineLength, 200))}${region.length > 20 ? '\n…' : ''}\nWhat differs (- the file, + your old_string):\n${diff}`,
    )
  }
  let out = parts.join('\n\n')
  if (out.length > BUDGET) out = `${out.slice(0, BUDGET)}\n… [diagnostics truncated]`
  return `${out}\nCopy the text from the file exactly as it is there (read_file shows it), then try again.`
}
