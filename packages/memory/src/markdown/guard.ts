import { isDeepStrictEqual } from 'node:util'
import { type GardenDocument, IDENTITY_KEYS, identityOf, parseGardenDocument } from './document.js'

/**
 * The hard blocks an edit of a garden document must pass (seed 003): no hidden anchor removed
 * or altered, no identity frontmatter (`id`, `user_id`, `participants`, `schema`) edited. The
 * values are compared (YAML parsed), so reformatting the frontmatter is not an edit of it; the
 * anchors are compared byte for byte.
 */

/** Why an edit is refused (empty: it may be written). */
export interface BlockReport {
  readonly blocked: boolean
  readonly reasons: readonly string[]
}

const show = (v: unknown) => (v === undefined ? 'absent' : JSON.stringify(v))

/**
 * Checks an edit from `before` (null: a new file) to `after`. An anchor may be added, never
 * removed, renamed, moved off its line's text or duplicated away; identity values may be set in
 * a new file, never changed, added or removed in an existing one.
 */
export function checkEdit(
  before: string | GardenDocument | null,
  after: string | GardenDocument,
): BlockReport {
  const a = typeof after === 'string' ? parseGardenDocument(after) : after
  const reasons: string[] = []
  if (a.frontmatter?.error !== undefined)
    reasons.push(
      `the frontmatter does not parse as YAML (${a.frontmatter.error}); keep it as it was`,
    )
  if (before === null) return { blocked: reasons.length > 0, reasons }
  const b = typeof before === 'string' ? parseGardenDocument(before) : before

  // Anchors: every comment of `before` must still be there, as many times, byte for byte.
  const left = new Map<string, number>()
  for (const mark of a.anchors) left.set(mark.text, (left.get(mark.text) ?? 0) + 1)
  for (const mark of b.anchors) {
    const n = left.get(mark.text) ?? 0
    if (n > 0) {
      left.set(mark.text, n - 1)
      continue
    }
    const renamed = a.anchors.find((m) => m.anchor === mark.anchor)
    reasons.push(
      renamed
        ? `hidden anchor '${mark.anchor}' (line ${mark.line}) was altered; anchors must stay byte for byte as they are`
        : `hidden anchor '${mark.anchor}' (line ${mark.line}) was removed; anchors are never removed — edit the section's text below it instead`,
    )
  }

  // An anchor names one section: a second copy of an id would make edits ambiguous.
  const seen = new Set<string>()
  for (const mark of a.anchors) {
    if (seen.has(mark.anchor))
      reasons.push(
        `hidden anchor '${mark.anchor}' would appear twice (again on line ${mark.line}); an anchor names one section`,
      )
    seen.add(mark.anchor)
  }

  // Identity frontmatter: compared as values.
  if (b.frontmatter?.error === undefined) {
    const was = identityOf(b)
    const now = identityOf(a)
    for (const key of IDENTITY_KEYS)
      if (!isDeepStrictEqual(was[key], now[key]))
        reasons.push(
          `identity frontmatter '${key}' would change (${show(was[key])} → ${show(now[key])}); identity fields (${IDENTITY_KEYS.join(', ')}) are never edited`,
        )
  } else if (a.frontmatter?.raw !== b.frontmatter.raw) {
    reasons.push(
      'the frontmatter did not parse before this edit, so its identity cannot be compared: leave it byte for byte as it is',
    )
  }
  return { blocked: reasons.length > 0, reasons }
}
