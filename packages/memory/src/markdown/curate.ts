import { MemoryError } from '../errors.js'
import { parseGardenDocument } from './document.js'
import { patchSection, sectionBody } from './patch-section.js'

/** One operation of `md_curate_list` on a section's list. */
export type CurateOp =
  /** Adds an item at the end of the list. */
  | { readonly op: 'append'; readonly item: string }
  /** Removes the item whose text is `item` (or contains it, when only one does). */
  | { readonly op: 'prune'; readonly item: string }
  /** Replaces the `items` (two or more) with one item `into`, where the first of them was. */
  | { readonly op: 'merge'; readonly items: readonly string[]; readonly into: string }

const ITEM = /^( {0,3})([-*+]|[0-9]{1,9}[.)])[ \t]+(.*)$/
/** Operations one call takes at most. */
export const MAX_CURATE_OPS = 50

interface Item {
  /** The item's lines (its first line and the indented lines that continue it). */
  lines: string[]
  text: string
}

/** Splits a section body into what precedes the list, its items, and what follows. */
function itemsOf(body: string): { head: string[]; items: Item[]; tail: string[]; bullet: string } {
  const lines = body.replace(/\n$/, '').split('\n')
  const head: string[] = []
  const items: Item[] = []
  const tail: string[] = []
  let bullet = '-'
  for (const line of lines) {
    const m = ITEM.exec(line)
    if (m && tail.length === 0) {
      if (items.length === 0) bullet = /[0-9]/.test(m[2]!) ? '-' : m[2]!
      items.push({ lines: [line], text: m[3]!.trim() })
    } else if (items.length > 0 && tail.length === 0 && /^\s+\S/.test(line)) {
      items.at(-1)!.lines.push(line)
    } else if (items.length === 0) head.push(line)
    else tail.push(line)
  }
  return { head, items, tail, bullet }
}

function find(items: Item[], wanted: string): number {
  const text = wanted.trim()
  const exact = items.findIndex((i) => i.text === text)
  if (exact !== -1) return exact
  const partial = items.flatMap((i, n) => (i.text.includes(text) ? [n] : []))
  if (partial.length === 1) return partial[0]!
  throw new MemoryError(
    'NOT_FOUND',
    partial.length === 0
      ? `no item of the list is or contains ${JSON.stringify(text.slice(0, 100))}`
      : `${partial.length} items contain ${JSON.stringify(text.slice(0, 100))}; give more of the item's text`,
  )
}

function oneItem(text: unknown): string {
  if (typeof text !== 'string' || text.trim() === '' || /[\r\n]/.test(text) || text.length > 2000)
    throw new MemoryError(
      'INVALID_ARGUMENT',
      'an item is one non-empty line of at most 2000 characters',
    )
  return text.trim()
}

/**
 * Applies list operations to the list in section `anchor` (its top-level items; text before
 * and after the list is kept). Refused whole when one operation cannot apply.
 */
export function curateList(text: string, anchor: string, ops: readonly CurateOp[]): string {
  if (!Array.isArray(ops) || ops.length === 0 || ops.length > MAX_CURATE_OPS)
    throw new MemoryError('INVALID_ARGUMENT', `give 1 to ${MAX_CURATE_OPS} operations`)
  const body = sectionBody(parseGardenDocument(text), anchor)
  const { head, items, tail, bullet } = itemsOf(body)
  for (const op of ops) {
    if (op.op === 'append')
      items.push({ lines: [`${bullet} ${oneItem(op.item)}`], text: oneItem(op.item) })
    else if (op.op === 'prune') items.splice(find(items, op.item), 1)
    else if (op.op === 'merge') {
      if (!Array.isArray(op.items) || op.items.length < 2)
        throw new MemoryError('INVALID_ARGUMENT', 'merge takes two or more items')
      const at = op.items.map((i: string) => find(items, i))
      if (new Set(at).size !== at.length)
        throw new MemoryError('INVALID_ARGUMENT', 'merge names the same item twice')
      const first = Math.min(...at)
      const merged = { lines: [`${bullet} ${oneItem(op.into)}`], text: oneItem(op.into) }
      for (const n of [...at].sort((a, b) => b - a)) items.splice(n, 1)
      items.splice(first, 0, merged)
    } else
      throw new MemoryError(
        'INVALID_ARGUMENT',
        `unknown list operation ${JSON.stringify((op as { op: unknown }).op)}`,
      )
  }
  const lines = [...head, ...items.flatMap((i) => i.lines), ...tail]
  while (lines.length > 0 && lines.at(-1) === '') lines.pop()
  return patchSection(text, anchor, { replace: lines.join('\n') })
}
