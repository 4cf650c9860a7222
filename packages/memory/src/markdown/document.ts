import type { Heading, Html, Nodes, Root } from 'mdast'
import { fromMarkdown } from 'mdast-util-from-markdown'
import { toString as textOf } from 'mdast-util-to-string'
import { parseDocument as parseYaml } from 'yaml'

/**
 * A garden document read the way the memory tools read it: its identity frontmatter, its
 * canonical sections (an H2 heading with a hidden anchor `<!-- @anchor: name vN -->` on the line
 * right after it), and every hidden anchor wherever it sits. Parsed with mdast (an anchor inside
 * a code block is text, not an anchor); line numbers are 1-based lines of the whole file.
 */

/** A hidden anchor comment, e.g. `<!-- @anchor: concerns v1 -->` (its id: `concerns v1`). */
export const ANCHOR_COMMENT =
  /^<!--[ \t]*@anchor:[ \t]*([A-Za-z0-9][A-Za-z0-9_.-]{0,63}[ \t]+v[0-9]{1,6})[ \t]*-->$/
/** Anything that looks like an anchor comment, well formed or not. */
const ANCHOR_LIKE = /<!--[ \t]*@anchor\b/

/** The keys of identity frontmatter: never edited by an agent. */
export const IDENTITY_KEYS = ['id', 'user_id', 'participants', 'schema'] as const

/** An H2 section. */
export interface Section {
  /** The anchor id (`concerns v1`), or null for an H2 without one (non-canonical). */
  readonly anchor: string | null
  /** The heading's text. */
  readonly heading: string
  /** The heading's first line. */
  readonly start_line: number
  /** The last line of the section (before the next H1/H2, or the file's last line). */
  readonly end_line: number
  /** The first line of the section's body: after the anchor line (or the heading). */
  readonly body_line: number
}

/** A hidden anchor where it sits. */
export interface AnchorMark {
  readonly anchor: string
  readonly line: number
  /** The comment exactly as written (an alteration of any byte of it is one). */
  readonly text: string
}

/** Frontmatter: the `---` block the file starts with. */
export interface Frontmatter {
  /** The YAML text between the fences. */
  readonly raw: string
  /** Its value, or undefined when it does not parse (see `error`). */
  readonly data: unknown
  readonly error?: string
  /** The line of the closing fence. */
  readonly end_line: number
}

export interface GardenDocument {
  readonly text: string
  readonly frontmatter: Frontmatter | null
  readonly sections: readonly Section[]
  readonly anchors: readonly AnchorMark[]
  /** Comments that look like anchors and are not well formed (a lint warning, never trusted). */
  readonly malformed_anchors: readonly { line: number; text: string }[]
  /** Offsets where each line starts (`line_starts[n - 1]` is line n), plus the text's length. */
  readonly line_starts: readonly number[]
  /** Every heading of depth 1 or 2, for lint. */
  readonly headings: readonly { depth: number; text: string; line: number }[]
}

const FRONTMATTER = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/

function lineStarts(text: string): number[] {
  const starts = [0]
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1)
  if (starts.at(-1) !== text.length) starts.push(text.length)
  return starts
}

/** Reads the frontmatter block at the start of `text`, if any. */
function readFrontmatter(text: string): { fm: Frontmatter | null; bodyStart: number } {
  const match = FRONTMATTER.exec(text)
  if (!match) return { fm: null, bodyStart: 0 }
  const raw = match[1] ?? ''
  const doc = parseYaml(raw, { uniqueKeys: true })
  const end_line = match[0].split('\n').length - (match[0].endsWith('\n') ? 1 : 0)
  const fm: Frontmatter =
    doc.errors.length > 0
      ? { raw, data: undefined, error: doc.errors[0]!.message.split('\n')[0]!, end_line }
      : { raw, data: doc.toJS({ maxAliasCount: 100 }), end_line }
  return { fm, bodyStart: match[0].length }
}

function walk(node: Nodes, visit: (node: Nodes) => void, depth = 0): void {
  visit(node)
  if (depth > 200 || !('children' in node)) return
  for (const child of node.children) walk(child as Nodes, visit, depth + 1)
}

/** Parses a garden document. */
export function parseGardenDocument(text: string): GardenDocument {
  const starts = lineStarts(text)
  const { fm, bodyStart } = readFrontmatter(text)
  // Lines before the body (the frontmatter) shift every position mdast reports.
  const offsetLines = bodyStart === 0 ? 0 : text.slice(0, bodyStart).split('\n').length - 1
  const tree: Root = fromMarkdown(text.slice(bodyStart))
  const lastLine = starts.length - (text.endsWith('\n') || text.length === 0 ? 1 : 0)

  const anchors: AnchorMark[] = []
  const malformed: { line: number; text: string }[] = []
  const htmlAt = new Map<number, Html>()
  const heads: Heading[] = []
  walk(tree, (node) => {
    if (node.type === 'heading' && node.depth <= 2) heads.push(node)
    if (node.type !== 'html' || !node.position) return
    const first = node.position.start.line + offsetLines
    htmlAt.set(first, node)
    node.value.split('\n').forEach((raw, i) => {
      const line = raw.trim()
      const match = ANCHOR_COMMENT.exec(line)
      if (match)
        anchors.push({ anchor: match[1]!.replace(/[ \t]+/, ' '), line: first + i, text: raw })
      else if (ANCHOR_LIKE.test(line)) malformed.push({ line: first + i, text: raw })
    })
  })

  const headings = heads.map((h) => ({
    depth: h.depth,
    text: textOf(h).trim(),
    line: (h.position?.start.line ?? 1) + offsetLines,
    end: (h.position?.end.line ?? 1) + offsetLines,
  }))
  const sections: Section[] = []
  headings.forEach((h, i) => {
    if (h.depth !== 2) return
    const next = headings[i + 1]
    const end_line = next ? next.line - 1 : Math.max(lastLine, h.end)
    const below = anchors.find((a) => a.line === h.end + 1)
    sections.push({
      anchor: below?.anchor ?? null,
      heading: h.text,
      start_line: h.line,
      end_line,
      body_line: below ? below.line + 1 : h.end + 1,
    })
  })
  return {
    text,
    frontmatter: fm,
    sections,
    anchors,
    malformed_anchors: malformed,
    line_starts: starts,
    headings: headings.map(({ depth, text: t, line }) => ({ depth, text: t, line })),
  }
}

/** The offset where `line` starts (the text's length past the last line). */
export function offsetOfLine(doc: GardenDocument, line: number): number {
  return doc.line_starts[line - 1] ?? doc.text.length
}

/** The text of lines `from` … `to` (inclusive), line ends kept. */
export function sliceLines(doc: GardenDocument, from: number, to: number): string {
  return doc.text.slice(offsetOfLine(doc, from), offsetOfLine(doc, to + 1))
}

/** The section an anchor names, or undefined. */
export function sectionOf(doc: GardenDocument, anchor: string): Section | undefined {
  const wanted = anchor.trim().replace(/[ \t]+/, ' ')
  return doc.sections.find((s) => s.anchor === wanted)
}

/** The identity frontmatter values (`id`, `user_id`, `participants`, `schema`) present. */
export function identityOf(doc: GardenDocument): Record<string, unknown> {
  const data = doc.frontmatter?.data
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return {}
  const out: Record<string, unknown> = {}
  for (const key of IDENTITY_KEYS)
    if (key in data) out[key] = (data as Record<string, unknown>)[key]
  return out
}
