/**
 * Normalisations behind tolerant matching. Each maps a text to a normalised text and remembers,
 * for every normalised character, where in the original it came from, so a match found in the
 * normalised text is a span of the original.
 */

/** A normalised text: `origin[i]` is the original index of character i; `origin[length]` the original's length. */
export interface Normalized {
  readonly text: string
  readonly origin: Int32Array
}

/** The drifts tolerated, in the order the ladder tries them (each rung keeps those before it). */
export const TOLERANCES = ['line-endings', 'trailing-whitespace', 'indentation', 'unicode'] as const
export type Tolerance = (typeof TOLERANCES)[number]

class Builder {
  private readonly parts: string[] = []
  private origins = new Int32Array(64)
  private length = 0
  private reserve(n: number) {
    if (this.length + n + 1 <= this.origins.length) return
    const grown = new Int32Array(Math.max(this.origins.length * 2, this.length + n + 1))
    grown.set(this.origins.subarray(0, this.length))
    this.origins = grown
  }
  /** `text` (a replacement of one original character, or several) from original index `origin`. */
  push(text: string, origin: number) {
    this.reserve(text.length)
    this.parts.push(text)
    this.origins.fill(origin, this.length, this.length + text.length)
    this.length += text.length
  }
  /** Original characters `from` to `to` of `source`, unchanged. */
  copy(source: string, from: number, to: number) {
    if (to <= from) return
    this.reserve(to - from)
    this.parts.push(source.slice(from, to))
    for (let i = from; i < to; i++) this.origins[this.length++] = i
  }
  done(originalLength: number): Normalized {
    const origin = this.origins.slice(0, this.length + 1)
    origin[this.length] = originalLength
    return { text: this.parts.join(''), origin }
  }
}

/** CRLF and lone CR become LF. */
function lineEndings(text: string): Normalized {
  const b = new Builder()
  let from = 0
  for (let i = text.indexOf('\r'); i !== -1; i = text.indexOf('\r', from)) {
    b.copy(text, from, i)
    b.push('\n', i)
    from = text[i + 1] === '\n' ? i + 2 : i + 1
  }
  b.copy(text, from, text.length)
  return b.done(text.length)
}

/**
 * Look-alikes a model types as ASCII: curly quotes, dashes and minus signs, non-breaking and
 * other fixed-width spaces, the ellipsis; zero-width characters and the BOM are dropped.
 */
const LOOK_ALIKES: Record<string, string> = {
  '\u2018': "'",
  '\u2019': "'",
  '\u201a': "'",
  '\u201b': "'",
  '\u2032': "'",
  '\u201c': '"',
  '\u201d': '"',
  '\u201e': '"',
  '\u201f': '"',
  '\u2033': '"',
  '\u2010': '-',
  '\u2011': '-',
  '\u2012': '-',
  '\u2013': '-',
  '\u2014': '-',
  '\u2015': '-',
  '\u2212': '-',
  '\u00a0': ' ',
  '\u2007': ' ',
  '\u202f': ' ',
  '\u3000': ' ',
  '\u2026': '...',
  '\u200b': '',
  '\u200c': '',
  '\u200d': '',
  '\u2060': '',
  '\ufeff': '',
}
for (let c = 0x2000; c <= 0x200a; c++) LOOK_ALIKES[String.fromCharCode(c)] = ' '

const LOOK_ALIKE = new RegExp(`[${Object.keys(LOOK_ALIKES).join('')}]`, 'g')
const LOOK_ALIKE_TEST = new RegExp(LOOK_ALIKE.source)

function unicode(text: string): Normalized {
  const b = new Builder()
  let from = 0
  for (const m of text.matchAll(LOOK_ALIKE)) {
    b.copy(text, from, m.index)
    b.push(LOOK_ALIKES[m[0]]!, m.index)
    from = m.index + 1
  }
  b.copy(text, from, text.length)
  return b.done(text.length)
}

/** Spaces and tabs at the end of each line are dropped. */
function trailingWhitespace(text: string): Normalized {
  const b = new Builder()
  let from = 0
  for (const m of text.matchAll(/[ \t]+(?=\n|$)/g)) {
    b.copy(text, from, m.index)
    from = m.index + m[0].length
  }
  b.copy(text, from, text.length)
  return b.done(text.length)
}

/** The leading whitespace of each line becomes spaces, tabs stopping every `width` columns. */
function indentation(text: string, width: number): Normalized {
  const b = new Builder()
  let from = 0
  for (const m of text.matchAll(/^[ \t]*\t[ \t]*/gm)) {
    b.copy(text, from, m.index)
    let column = 0
    for (let k = 0; k < m[0].length; k++) {
      const spaces = m[0][k] === '\t' ? width - (column % width) : 1
      b.push(' '.repeat(spaces), m.index + k)
      column += spaces
    }
    from = m.index + m[0].length
  }
  b.copy(text, from, text.length)
  return b.done(text.length)
}

/** Composes `next` after `first`: origins point into the text `first` was given. */
function compose(first: Normalized, next: Normalized): Normalized {
  const origin = new Int32Array(next.origin.length)
  for (let i = 0; i < origin.length; i++) origin[i] = first.origin[next.origin[i]!]!
  return { text: next.text, origin }
}

const identity = (text: string): Normalized => {
  const origin = new Int32Array(text.length + 1)
  for (let i = 0; i <= text.length; i++) origin[i] = i
  return { text, origin }
}

/** Applies the tolerances of a rung (in a fixed order) with tab stops of `tabWidth`. */
export function normalize(
  text: string,
  tolerances: readonly Tolerance[],
  tabWidth = 4,
): Normalized {
  let out = identity(text)
  const on = new Set(tolerances)
  // A step with nothing to change is skipped (most texts have no CR, look-alike or tab).
  if (on.has('line-endings') && out.text.includes('\r')) out = compose(out, lineEndings(out.text))
  if (on.has('unicode') && LOOK_ALIKE_TEST.test(out.text)) out = compose(out, unicode(out.text))
  if (on.has('trailing-whitespace') && /[ \t](\n|$)/.test(out.text))
    out = compose(out, trailingWhitespace(out.text))
  if (on.has('indentation') && /^[ \t]*\t/m.test(out.text))
    out = compose(out, indentation(out.text, tabWidth))
  return out
}

/** The first normalised index whose origin is at or after original index `at`. */
export function normalizedIndex(n: Normalized, at: number): number {
  let lo = 0
  let hi = n.origin.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (n.origin[mid]! < at) lo = mid + 1
    else hi = mid
  }
  return lo
}
