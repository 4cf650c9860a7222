import { createHash } from 'node:crypto'
import { contentChunks } from '@agentfs/core'
import { diffArrays } from 'diff'

const NL = 10
/** Bytes compared per memcmp while looking for the common start and end. */
const BLOCK = 4096
/** Edits Myers' search may make on one changed region of two versions before giving up. */
const MAX_EDIT = 2000
/**
 * Cells of Myers' edit graph (lines of both sides × edits) one diff may explore: about 20 ms.
 * A work bound, not a clock, so the same history always blames the same way.
 */
const WORK = 2_000_000

/** The edit budget of a diff of `n` items in all: deterministic, bounded work. */
const budget = (n: number) => ({
  maxEditLength: Math.max(1, Math.min(MAX_EDIT, Math.floor(WORK / Math.max(1, n)))),
})

/**
 * A content as the chunks it is stored in: each chunk's hash (as a string key) and where it
 * ends. Two versions share a chunk where their bytes are equal: kept versions are cut at
 * content-defined boundaries, so an edit leaves every other chunk as it was.
 */
export interface Chunked {
  readonly keys: readonly string[]
  readonly ends: readonly number[]
}

/** The content-defined chunks of `content`, as a kept version of it is stored. */
export function chunkedOf(content: Buffer): Chunked {
  const keys: string[] = []
  const ends: number[] = []
  let end = 0
  for (const chunk of contentChunks(content)) {
    keys.push(createHash('sha256').update(chunk).digest().toString('latin1'))
    end += chunk.byteLength
    ends.push(end)
  }
  return { keys, ends }
}

/** Bytes equal in two contents: old [oa, oa + len) and new [ob, ob + len). */
interface Segment {
  readonly oa: number
  readonly ob: number
  readonly len: number
}

/**
 * A file's content as lines, each with an owner (an index its caller gives meaning to), moved
 * from version to version: {@link next} keeps the owners of lines the new content keeps and
 * gives `owner` to the lines it adds. The contents are aligned by what is known equal without
 * looking at lines — the common start and end (memcmp) and the chunks both versions share — and
 * only the lines between those runs are diffed (Myers, bounded by `MAX_EDIT` and `WORK`; past
 * them that region's lines get `onBudget` and {@link approximate} is set). So a small edit of a
 * large file costs a copy of two typed arrays and a diff of the edit.
 */
export class LineState {
  /** Byte offset of each line's start; `starts[lines]` is the content's length. */
  readonly starts: Int32Array
  readonly owners: Int32Array
  /** Whether a diff went past its budget (its region's lines were given `onBudget`). */
  approximate = false

  constructor(
    readonly content: Buffer,
    owner: number,
    readonly chunks?: Chunked,
    starts?: Int32Array,
    owners?: Int32Array,
  ) {
    this.starts = starts ?? lineStarts(content, 0, content.length, true)
    this.owners = owners ?? new Int32Array(this.starts.length - 1).fill(owner)
  }

  get lines(): number {
    return this.starts.length - 1
  }

  /** The lines of `next` (stored as `chunks`, when known), owned as described above. */
  next(next: Buffer, owner: number, onBudget: number, chunks?: Chunked): LineState {
    const a = this.content
    const b = next
    const la = a.length
    const lb = b.length
    const n = this.lines
    const starts = this.starts
    const out = new Builder(n)
    let line = 0
    let at = 0
    let approximate = this.approximate
    // The lines of one region between equal runs: old lines [line, upTo), new bytes [at, to).
    const region = (upTo: number, to: number) => {
      const added = lineStarts(b, at, to, false)
      const m = added.length
      const base = out.length
      for (let i = 0; i < m; i++) out.push(added[i]!, owner)
      if (m > 0 && upTo > line) {
        const before: string[] = []
        for (let i = line; i < upTo; i++) before.push(key(a, starts[i]!, starts[i + 1]!))
        const after: string[] = []
        for (let i = 0; i < m; i++) after.push(key(b, added[i]!, i + 1 < m ? added[i + 1]! : to))
        const parts = diffArrays(before, after, budget(before.length + after.length))
        if (parts === undefined) {
          out.owners.fill(onBudget, base, base + m)
          approximate = true
        } else {
          let o = line
          let w = base
          for (const part of parts) {
            const c = part.count ?? part.value.length
            if (part.removed) o += c
            else if (part.added) w += c
            else {
              out.owners.set(this.owners.subarray(o, o + c), w)
              o += c
              w += c
            }
          }
        }
      }
      line = upTo
      at = to
    }
    for (const { oa, ob, len } of segments(a, b, this.chunks, chunks)) {
      // Old lines wholly inside the run that start a line in the new content too.
      let first = lowerBound(starts, oa, line, n)
      if (first < n && starts[first] === oa && ob > 0 && b[ob - 1] !== NL) first++
      let end = upperBound(starts, oa + len) - 1
      if (end > n) end = n
      // A last line without a newline is whole only where both contents end with it.
      if (end === n && n > 0 && a[la - 1] !== NL && !(oa + len === la && ob + len === lb))
        end = n - 1
      if (end <= first) continue
      const delta = ob - oa
      region(first, starts[first]! + delta)
      out.carry(starts, this.owners, first, end, delta)
      line = end
      at = starts[end]! + delta
    }
    region(n, lb)
    const state = new LineState(b, owner, chunks, out.finish(lb), out.owners.slice(0, out.length))
    state.approximate = approximate
    return state
  }
}

/** The equal runs of two contents, in order: the common start, shared chunks, the common end. */
function* segments(a: Buffer, b: Buffer, ca?: Chunked, cb?: Chunked): Generator<Segment> {
  const la = a.length
  const lb = b.length
  const min = Math.min(la, lb)
  const p = commonPrefix(a, b, min)
  const s = commonSuffix(a, b, min - p)
  if (p > 0) yield { oa: 0, ob: 0, len: p }
  if (ca && cb && ca.keys.length > 0 && cb.keys.length > 0) {
    const parts = diffArrays(
      ca.keys as string[],
      cb.keys as string[],
      budget(ca.keys.length + cb.keys.length),
    )
    let i = 0
    let j = 0
    for (const part of parts ?? []) {
      const c = part.count ?? part.value.length
      if (part.removed) i += c
      else if (part.added) j += c
      else {
        // Chunks i … i + c - 1 of the old equal j … j + c - 1 of the new: clipped to what lies
        // between the common start and end.
        const oa0 = i === 0 ? 0 : ca.ends[i - 1]!
        const ob0 = j === 0 ? 0 : cb.ends[j - 1]!
        const len0 = ca.ends[i + c - 1]! - oa0
        const d = Math.max(0, p - oa0, p - ob0)
        const len = Math.min(oa0 + len0, la - s) - (oa0 + d)
        const fit = Math.min(len, lb - s - (ob0 + d))
        if (fit > 0) yield { oa: oa0 + d, ob: ob0 + d, len: fit }
        i += c
        j += c
      }
    }
  }
  if (s > 0) yield { oa: la - s, ob: lb - s, len: s }
}

/** Growing typed arrays of the next state's line starts and owners. */
class Builder {
  starts: Int32Array
  owners: Int32Array
  length = 0

  constructor(capacity: number) {
    this.starts = new Int32Array(capacity + 64)
    this.owners = new Int32Array(capacity + 64)
  }

  #grow(need: number): void {
    if (need <= this.starts.length) return
    const size = Math.max(need, this.starts.length * 2)
    const starts = new Int32Array(size)
    starts.set(this.starts.subarray(0, this.length))
    const owners = new Int32Array(size)
    owners.set(this.owners.subarray(0, this.length))
    this.starts = starts
    this.owners = owners
  }

  push(start: number, owner: number): void {
    this.#grow(this.length + 1)
    this.starts[this.length] = start
    this.owners[this.length++] = owner
  }

  /** Lines [from, to) of the old content, moved by `delta` bytes, with their owners. */
  carry(starts: Int32Array, owners: Int32Array, from: number, to: number, delta: number): void {
    const count = to - from
    this.#grow(this.length + count)
    const at = this.length
    const target = this.starts
    for (let i = 0; i < count; i++) target[at + i] = starts[from + i]! + delta
    this.owners.set(owners.subarray(from, to), at)
    this.length += count
  }

  finish(end: number): Int32Array {
    const out = new Int32Array(this.length + 1)
    out.set(this.starts.subarray(0, this.length))
    out[this.length] = end
    return out
  }
}

/** Starts of the lines of `buf` in [from, to) (`from` is a line start); with `end`, `to` after them. */
function lineStarts(buf: Buffer, from: number, to: number, end: boolean): Int32Array {
  const out: number[] = []
  let at = from
  while (at < to) {
    out.push(at)
    const nl = buf.indexOf(NL, at)
    at = nl === -1 || nl >= to ? to : nl + 1
  }
  if (end) out.push(to)
  return Int32Array.from(out)
}

function commonPrefix(a: Buffer, b: Buffer, max: number): number {
  let p = 0
  while (p < max) {
    const e = Math.min(max, p + BLOCK)
    if (a.compare(b, p, e, p, e) === 0) {
      p = e
      continue
    }
    while (a[p] === b[p]) p++
    return p
  }
  return p
}

function commonSuffix(a: Buffer, b: Buffer, max: number): number {
  const la = a.length
  const lb = b.length
  let s = 0
  while (s < max) {
    const e = Math.min(max, s + BLOCK)
    if (b.compare(a, la - e, la - s, lb - e, lb - s) === 0) {
      s = e
      continue
    }
    while (a[la - 1 - s] === b[lb - 1 - s]) s++
    return s
  }
  return s
}

/** The first index i with `starts[i] > value`. */
function upperBound(starts: Int32Array, value: number): number {
  let lo = 0
  let hi = starts.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (starts[mid]! <= value) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** The first index i in [lo, hi] with `starts[i] >= value` (hi when none before it). */
function lowerBound(starts: Int32Array, value: number, lo: number, hi: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (starts[mid]! < value) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** A line's text without its newline (a last line gaining one keeps its author), byte for byte. */
const key = (buf: Buffer, start: number, end: number): string =>
  buf.toString('latin1', start, end > start && buf[end - 1] === NL ? end - 1 : end)
