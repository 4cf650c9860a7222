import { createHash } from 'node:crypto'
import { z } from 'zod'
import { ToolFailure } from './failure.js'
import { numbered, splitLines } from './text.js'
import type { OutputLimits, ToolEnvironment, ToolOutput } from './types.js'

/**
 * Where a read stopped, as a token the next call passes back: a line (and a character within it,
 * for a line longer than a page), or a byte offset. Bound to the file's path; made at a version.
 */
interface Cursor {
  readonly mode: 'line' | 'byte'
  readonly line: number
  readonly column: number
  readonly byte: number
  readonly version: string
}

const TOKEN_PREFIX = 'rf1.'
/** Longest token accepted (a real one is under 120 characters). */
const MAX_TOKEN = 512
/** Most ranges one call reads. */
export const MAX_RANGES = 20

const pathTag = (fsPath: string) =>
  createHash('sha256').update(fsPath).digest('base64url').slice(0, 10)

function encode(fsPath: string, cursor: Cursor): string {
  const body = {
    m: cursor.mode === 'byte' ? 'b' : 'l',
    l: cursor.line,
    c: cursor.column,
    b: cursor.byte,
    v: cursor.version,
    h: pathTag(fsPath),
  }
  return TOKEN_PREFIX + Buffer.from(JSON.stringify(body)).toString('base64url')
}

function decode(token: string, fsPath: string, display: string): Cursor {
  const bad = (why: string) =>
    new ToolFailure(
      'EINVAL',
      `Error: continuation ${JSON.stringify(token.slice(0, 40))} ${why}. Pass back the token a read_file answer gave, with the same path, or read with offset instead.`,
    )
  if (token.length > MAX_TOKEN || !token.startsWith(TOKEN_PREFIX))
    throw bad('is not a read_file token')
  let body: Record<string, unknown>
  try {
    body = JSON.parse(Buffer.from(token.slice(TOKEN_PREFIX.length), 'base64url').toString('utf8'))
  } catch {
    throw bad('is not a read_file token')
  }
  const whole = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
  if (
    typeof body !== 'object' ||
    body === null ||
    (body.m !== 'l' && body.m !== 'b') ||
    !whole(body.l) ||
    !whole(body.c) ||
    !whole(body.b) ||
    typeof body.v !== 'string' ||
    typeof body.h !== 'string'
  )
    throw bad('is not a read_file token')
  if (body.h !== pathTag(fsPath)) throw bad(`was made for another file than ${display}`)
  return {
    mode: body.m === 'b' ? 'byte' : 'line',
    line: Math.max(1, body.l as number),
    column: body.c as number,
    byte: body.b as number,
    version: body.v,
  }
}

/** The last index at or before `at` that starts a UTF-8 character. */
function charStart(bytes: Uint8Array, at: number): number {
  let i = Math.min(at, bytes.length)
  while (i > 0 && i < bytes.length && (bytes[i]! & 0xc0) === 0x80) i--
  return i
}

const fmt = (n: number) => n.toLocaleString('en-US')

interface Reader {
  readonly fsPath: string
  readonly display: string
  readonly version: string
  readonly limits: OutputLimits
  readonly token: (cursor: Omit<Cursor, 'version'>) => string
}

/** Lines `offset`… (at most `limit`, and within the character budget); long lines cut with a token. */
function lineSection(
  r: Reader,
  lines: readonly string[],
  offset: number,
  limit: number,
  budget: number,
): { text: string; next: number | undefined } {
  const shown: string[] = []
  let used = 0
  let line = offset
  const end = Math.min(lines.length, offset - 1 + limit)
  for (; line <= end; line++) {
    const raw = lines[line - 1]!
    let rendered = numbered([raw], line, r.limits.maxLineLength)
    if (raw.length > r.limits.maxLineLength)
      rendered += ` — continuation "${r.token({ mode: 'line', line, column: r.limits.maxLineLength, byte: 0 })}" reads on in this line`
    if (shown.length > 0 && used + rendered.length + 1 > budget) break
    shown.push(rendered)
    used += rendered.length + 1
  }
  return { text: shown.join('\n'), next: line <= lines.length ? line : undefined }
}

/** The rest of one long line from `column`, a page of characters at a time. */
function lineTail(r: Reader, lines: readonly string[], cursor: Cursor): string {
  const text = lines[cursor.line - 1]
  if (text === undefined)
    throw new ToolFailure(
      'EINVAL',
      `Error: the continuation points at line ${cursor.line}, past the end of ${r.display} (${lines.length} lines); the file changed — read it again.`,
    )
  const from = Math.min(cursor.column, text.length)
  const to = Math.min(text.length, from + Math.max(1000, r.limits.maxChars - 500))
  let out = `[line ${fmt(cursor.line)}, characters ${fmt(from + 1)}–${fmt(to)} of ${fmt(text.length)}]\n${text.slice(from, to)}`
  if (to < text.length)
    out += `\n… [continuation "${r.token({ mode: 'line', line: cursor.line, column: to, byte: 0 })}" reads on in this line]`
  else if (cursor.line < lines.length)
    out += `\n[end of line ${fmt(cursor.line)} — continue with offset ${cursor.line + 1}]`
  return out
}

/** Bytes from `start` (moved to a character boundary), a page at a time. */
function byteSection(
  r: Reader,
  bytes: Uint8Array,
  start: number,
  length: number | undefined,
): string {
  if (start > bytes.length)
    throw new ToolFailure(
      'EINVAL',
      `Error: byte_offset ${start} is past the end of ${r.display}, which has ${bytes.length} bytes.`,
    )
  const from = charStart(bytes, start)
  const to = charStart(
    bytes,
    Math.min(bytes.length, from + (length ?? Math.max(1000, r.limits.maxChars - 500))),
  )
  const end = to > from ? to : Math.min(bytes.length, from + 4)
  let out = `[bytes ${fmt(from)}–${fmt(end)} of ${fmt(bytes.length)}]\n${Buffer.from(bytes.subarray(from, end)).toString('utf8')}`
  if (end < bytes.length)
    out += `\n… [continuation "${r.token({ mode: 'byte', line: 0, column: 0, byte: end })}" reads the next bytes]`
  return out
}

export type ReadFileInput = {
  path: string
  offset?: number | undefined
  limit?: number | undefined
  ranges?: Array<{ offset: number; limit?: number | undefined }> | undefined
  byte_offset?: number | undefined
  byte_limit?: number | undefined
  continuation?: string | undefined
}

/** Reads a text file's content as the tool shows it (the file's stats are known to be a file). */
export function readTextContent(
  input: ReadFileInput,
  env: ToolEnvironment,
  limits: OutputLimits,
  fsPath: string,
  content: Buffer | string,
  version: string,
): ToolOutput {
  const display = env.paths.display(fsPath)
  const r: Reader = {
    fsPath,
    display,
    version,
    limits,
    token: (c) => encode(fsPath, { ...c, version }),
  }
  const size = typeof content === 'string' ? Buffer.byteLength(content) : content.length
  const data = { version, size }
  const done = (text: string, extra: Record<string, unknown> = {}): ToolOutput => ({
    text: `${text}\n[version: ${version}]`,
    data: { ...data, ...extra },
  })
  const cursor =
    input.continuation === undefined ? undefined : decode(input.continuation, fsPath, display)
  const changed =
    cursor !== undefined && cursor.version !== version
      ? `[note: ${display} changed since that token was made (version ${cursor.version}, now ${version}); this is the current content]\n`
      : ''
  if (
    cursor?.mode === 'byte' ||
    (cursor === undefined && (input.byte_offset ?? input.byte_limit) !== undefined)
  )
    return done(
      changed +
        byteSection(
          r,
          typeof content === 'string' ? Buffer.from(content) : content,
          cursor?.byte ?? input.byte_offset ?? 0,
          input.byte_limit,
        ),
    )
  const lines = splitLines(typeof content === 'string' ? content : content.toString('utf8'))
  if (lines.length === 0) return done(`The file ${display} exists but is empty.`)
  if (cursor !== undefined && cursor.column > 0) return done(changed + lineTail(r, lines, cursor))
  const ranges =
    cursor !== undefined
      ? [{ offset: cursor.line, limit: input.limit }]
      : (input.ranges ?? [{ offset: input.offset ?? 1, limit: input.limit }])
  const sections: string[] = []
  let budget = limits.maxChars
  let next: number | undefined
  for (const [i, range] of ranges.entries()) {
    if (range.offset > lines.length) {
      if (ranges.length === 1)
        throw new ToolFailure(
          'EINVAL',
          `Error: offset ${range.offset} is past the end of ${display}, which has ${lines.length} lines.`,
        )
      sections.push(`[lines from ${range.offset}: past the end (${lines.length} lines)]`)
      continue
    }
    if (budget <= 0) {
      sections.push(
        `[lines from ${range.offset}: not shown, the answer is full — read them in another call]`,
      )
      continue
    }
    const s = lineSection(r, lines, range.offset, range.limit ?? limits.maxLines, budget)
    budget -= s.text.length
    const header =
      ranges.length > 1
        ? `[range ${i + 1}: lines ${range.offset}–${(s.next ?? lines.length + 1) - 1}]\n`
        : ''
    let text = header + s.text
    const asked = range.offset - 1 + (range.limit ?? limits.maxLines)
    if (s.next !== undefined) {
      const more = lines.length - s.next + 1
      text +=
        s.next <= asked
          ? `\n… [output capped at ${fmt(limits.maxChars)} characters; ${more} more lines — continue with offset ${s.next} or continuation "${r.token({ mode: 'line', line: s.next, column: 0, byte: 0 })}"]`
          : `\n… [${more} more lines — continue with offset ${s.next}]`
      next = s.next
    }
    sections.push(changed && i === 0 ? changed + text : text)
  }
  return done(sections.join('\n\n'), {
    lines: lines.length,
    ...(next === undefined ? {} : { next }),
  })
}

export const readFileSchema = z
  .object({
    path: z.string().describe('Absolute path, e.g. /src/index.ts'),
    offset: z.number().int().min(1).optional().describe('First line to read, 1-based'),
    limit: z.number().int().min(1).optional().describe('How many lines to read (default 2000)'),
    ranges: z
      .array(
        z.object({
          offset: z.number().int().min(1).describe('First line, 1-based'),
          limit: z.number().int().min(1).optional().describe('Lines (default 2000)'),
        }),
      )
      .min(1)
      .max(MAX_RANGES)
      .optional()
      .describe(`Several line ranges in one call (at most ${MAX_RANGES}), instead of offset/limit`),
    byte_offset: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('Read raw text from this byte instead of by lines (for huge single-line files)'),
    byte_limit: z.number().int().min(1).optional().describe('Bytes to read from byte_offset'),
    continuation: z
      .string()
      .optional()
      .describe('Token from a previous read_file answer: continues where it stopped'),
  })
  .refine((v) => v.ranges === undefined || (v.offset === undefined && v.limit === undefined), {
    message: 'give either ranges or offset/limit, not both',
  })
