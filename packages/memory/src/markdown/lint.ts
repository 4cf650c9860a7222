import { canonicalText } from '@agentfs/fs'
import { type GardenDocument, parseGardenDocument, type Section, sliceLines } from './document.js'
import { checkEdit } from './guard.js'

/**
 * Seed 003's lint: warnings that never block a write by themselves, though passing a cap (the
 * evidence list, a narrative section's length) needs a one-line `override_rationale`. With the
 * text before an edit, the hard blocks are reported too (`blocked`, `blocked_reasons`).
 */

export interface LintOptions {
  /** Items an evidence section (anchor `evidence…`) holds before the cap (default 7). */
  readonly evidenceCap?: number
  /** Words a narrative section holds before the cap (default 300). */
  readonly wordBudget?: number
  /**
   * The canonical heading of each anchor name (`concerns` → `Concerns`); by default the name
   * with `-`/`_` as spaces and its first letter upper-case.
   */
  readonly canonicalHeadings?: Readonly<Record<string, string>>
}

export type LintCode =
  | 'evidence-cap'
  | 'section-length'
  | 'heading-not-canonical'
  | 'heading-without-anchor'
  | 'anchor-malformed'
  | 'format-drift'

export interface LintDiagnostic {
  readonly code: LintCode
  readonly message: string
  readonly line?: number
  /** The section's anchor, for a section's warning. */
  readonly section?: string
  /** What would fix it (a heading line to use, or `canonical form`). */
  readonly fix?: string
  /** True for a cap: writing past it needs an `override_rationale`. */
  readonly cap: boolean
}

export interface LintResult {
  readonly warnings: string[]
  readonly diagnostics: LintDiagnostic[]
  /** A cap is passed: a write needs an `override_rationale`. */
  readonly caps_exceeded: boolean
  readonly blocked: boolean
  readonly blocked_reasons?: string[]
}

export const DEFAULT_EVIDENCE_CAP = 7
export const DEFAULT_WORD_BUDGET = 300

const LIST_ITEM = /^ {0,3}(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]|$)/
const nameOf = (anchor: string) => anchor.replace(/\s+v[0-9]+$/, '')

function canonicalHeading(anchor: string, options: LintOptions): string {
  const name = nameOf(anchor)
  const given = options.canonicalHeadings?.[name]
  if (given !== undefined) return given
  const words = name.replace(/[-_.]+/g, ' ').trim()
  return words.replace(/(^|\s)(\S)/g, (_, space: string, c: string) => space + c.toUpperCase())
}

function body(doc: GardenDocument, s: Section): string {
  return s.body_line > s.end_line ? '' : sliceLines(doc, s.body_line, s.end_line)
}

/** Lints `text`; with `before`, also checks the edit's hard blocks. */
export function lintDocument(
  text: string,
  options: LintOptions & { readonly before?: string | null } = {},
): LintResult {
  const doc = parseGardenDocument(text)
  const cap = options.evidenceCap ?? DEFAULT_EVIDENCE_CAP
  const budget = options.wordBudget ?? DEFAULT_WORD_BUDGET
  const out: LintDiagnostic[] = []
  for (const s of doc.sections) {
    if (s.anchor === null) {
      out.push({
        code: 'heading-without-anchor',
        message: `line ${s.start_line}: heading '${s.heading}' has no hidden anchor on the next line, so tools cannot target it`,
        line: s.start_line,
        cap: false,
      })
      continue
    }
    const expected = canonicalHeading(s.anchor, options)
    if (s.heading !== expected)
      out.push({
        code: 'heading-not-canonical',
        message: `line ${s.start_line}: heading '${s.heading}' of '${s.anchor}' is not the canonical '${expected}'`,
        line: s.start_line,
        section: s.anchor,
        fix: `## ${expected}`,
        cap: false,
      })
    const text = body(doc, s)
    const name = nameOf(s.anchor)
    if (name.startsWith('evidence')) {
      const items = text.split('\n').filter((line) => LIST_ITEM.test(line)).length
      if (items > cap)
        out.push({
          code: 'evidence-cap',
          message: `section '${s.anchor}' has ${items} items, over the cap of ${cap}: prune or merge, or give an override_rationale`,
          line: s.start_line,
          section: s.anchor,
          cap: true,
        })
    } else if (name !== 'change-log' && name !== 'changelog') {
      const words = text.split(/\s+/).filter((w) => w !== '' && !w.startsWith('<!--')).length
      if (words > budget)
        out.push({
          code: 'section-length',
          message: `section '${s.anchor}' has ${words} words, over the budget of ${budget}: tighten it, or give an override_rationale`,
          line: s.start_line,
          section: s.anchor,
          cap: true,
        })
    }
  }
  for (const m of doc.malformed_anchors)
    out.push({
      code: 'anchor-malformed',
      message: `line ${m.line}: '${m.text.trim()}' looks like an anchor but is not '<!-- @anchor: name v1 -->'`,
      line: m.line,
      cap: false,
    })
  const drift: string[] = []
  if (text.includes('\r')) drift.push('CR line ends')
  if (/[ \t]+\r?$/m.test(text)) drift.push('trailing whitespace')
  if (text !== '' && !text.endsWith('\n')) drift.push('no final newline')
  if (/\n[ \t]*\r?\n$/.test(text)) drift.push('blank lines at the end')
  if (drift.length > 0 && canonicalText(text) !== text)
    out.push({
      code: 'format-drift',
      message: `format drift: ${drift.join(', ')}`,
      fix: 'canonical form (LF, no trailing whitespace, one final newline)',
      cap: false,
    })
  const edit = options.before === undefined ? undefined : checkEdit(options.before, doc)
  return {
    warnings: out.map((d) => d.message),
    diagnostics: out,
    caps_exceeded: out.some((d) => d.cap),
    blocked: edit?.blocked ?? false,
    ...(edit?.blocked ? { blocked_reasons: [...edit.reasons] } : {}),
  }
}
