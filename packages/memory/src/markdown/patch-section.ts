import { MemoryError } from '../errors.js'
import {
  type GardenDocument,
  offsetOfLine,
  parseGardenDocument,
  sectionOf,
  sliceLines,
} from './document.js'

/** What `md_patch_section` does to a section's body. */
export type SectionChange = { readonly replace: string } | { readonly append: string }

/** A line that would start a section of its own, or an anchor: never inside a section's text. */
const STRUCTURE = /^(?: {0,3}#{1,2}(?:[ \t]|$)|[ \t]*<!--[ \t]*@anchor\b)/m

/** Text with one line end at its end (the file's line ending), unless empty. */
function asLines(text: string, eol: string): string {
  if (text === '') return ''
  const normal = text.replace(/\r\n?/g, '\n').replace(/\n$/, '')
  return `${normal.split('\n').join(eol)}${eol}`
}

/**
 * Rewrites the body of the section `anchor` names (the lines after its anchor, up to the next
 * H1/H2) and nothing else: the heading, the anchor and every byte outside the section stay as
 * they are. `replace` swaps the body (a blank line before the next section is kept); `append`
 * adds lines after the body's last non-blank line. Refuses text that would add a heading or an
 * anchor (a new section is a new anchor, not an edit of this one).
 */
export function patchSection(text: string, anchor: string, change: SectionChange): string {
  const doc = parseGardenDocument(text)
  const section = sectionOf(doc, anchor)
  if (!section) throw noSection(doc, anchor)
  const added = 'replace' in change ? change.replace : change.append
  if (typeof added !== 'string')
    throw new MemoryError(
      'INVALID_ARGUMENT',
      'give the section change as { replace } or { append } text',
    )
  if (STRUCTURE.test(added))
    throw new MemoryError(
      'BLOCKED',
      `the text would add a heading or an anchor inside section '${section.anchor}'; write the section's content only (no '#'/'##' lines, no @anchor comments)`,
    )
  const eol = doc.text.includes('\r\n') ? '\r\n' : '\n'
  const from = offsetOfLine(doc, section.body_line)
  const to = offsetOfLine(doc, section.end_line + 1)
  const body = doc.text.slice(from, to)
  // A heading ends the file without a line end: the body starts on a new line.
  const lead =
    from === doc.text.length && !doc.text.endsWith('\n') && doc.text.length > 0 ? eol : ''
  let next: string
  if ('replace' in change) {
    const trailing = /(?:\r?\n)*$/.exec(body)?.[0] ?? ''
    const blank = to < doc.text.length && trailing.split('\n').length > 2 ? eol : ''
    next = `${lead}${asLines(change.replace, eol)}${blank}`
  } else {
    const kept = body.replace(/(?:[ \t]*\r?\n)*$/, '')
    const tail = body.slice(kept.length)
    const sep = kept === '' ? '' : eol
    next = `${lead}${kept}${sep}${asLines(change.append, eol)}${tail.split('\n').length > 2 ? eol : ''}`
  }
  return doc.text.slice(0, from) + next + doc.text.slice(to)
}

/** The error for an anchor the document does not have, listing those it has. */
export function noSection(doc: GardenDocument, anchor: string): MemoryError {
  const have = doc.sections.flatMap((s) => (s.anchor ? [`'${s.anchor}'`] : []))
  return new MemoryError(
    'NOT_FOUND',
    `no section has the anchor '${anchor}'${have.length > 0 ? `; this file's anchors: ${have.join(', ')}` : '; this file has no anchored sections'} (md_list_sections lists them)`,
  )
}

/** The body text of a section (the lines after its anchor). */
export function sectionBody(doc: GardenDocument, anchor: string): string {
  const section = sectionOf(doc, anchor)
  if (!section) throw noSection(doc, anchor)
  return section.body_line > section.end_line
    ? ''
    : sliceLines(doc, section.body_line, section.end_line)
}
