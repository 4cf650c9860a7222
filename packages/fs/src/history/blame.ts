import { createHash } from 'node:crypto'
import {
  type ChangeOp,
  type Executor,
  fsError,
  hashesOf,
  normalizePath,
  readBlob,
} from '@agentfs/core'
import type { FsContext } from '../sql/context.js'
import { readAll } from '../storage/chunks.js'
import { versionOf } from '../storage/inode.js'
import { lookup } from '../storage/resolver.js'
import { type Chunked, chunkedOf, LineState } from './line-state.js'

/** A change that gave lines their text, as {@link Blame} names it. */
export interface BlameChange {
  /** The change feed's sequence number. */
  readonly seq: number
  /** When, ms since the epoch. */
  readonly at: number
  readonly op: ChangeOp
  /** The file's version token after it (`readFile(path, { version })`). */
  readonly version: string | null
  /** The path it was made through (renames keep a file's history). */
  readonly path: string | null
  readonly sessionId: string | null
  /** The tool call it ran in, once that call is recorded. */
  readonly toolCall: { readonly id: number; readonly name: string } | null
  /** Why, when it was given a message. */
  readonly message: string | null
}

/** One line of a {@link Blame}. */
export interface BlameLine {
  /** 1-based. */
  readonly line: number
  readonly text: string
  /** The change that gave the line its current text; null when the history cannot say. */
  readonly change: BlameChange | null
  /**
   * For an unattributed line, what is known: it appeared after change `after` (null: before the
   * oldest change walked) and at or before change `by` (null: after the newest recorded one).
   */
  readonly between?: { readonly after: number | null; readonly by: number | null }
}

/** Who wrote each line of a file: `fs.blame(path)`. */
export interface Blame {
  readonly path: string
  /** The version blamed (the current one unless `version` was given). */
  readonly version: string
  readonly lines: BlameLine[]
  /** The changes the lines come from, newest first. */
  readonly changes: BlameChange[]
  /** Lines no change could be named for (history off, trimmed, or past `maxVersions`). */
  readonly unattributed: number
  /** Versions walked, oldest to newest. */
  readonly walked: number
  /** Whether the walk reached the file's creation with every version readable. */
  readonly complete: boolean
}

/** Options of `fs.blame`. */
export interface BlameOptions {
  /** Blame this version (a token from `history` or `stat`) instead of the current one. */
  readonly version?: string
  /** Walk at most this many versions back (default 1,000, at most 10,000). */
  readonly maxVersions?: number
  /** Give up with ETIMEDOUT past this many milliseconds (default 5,000). */
  readonly timeoutMs?: number
}

/** Largest file blamed (the default `maxFileBytes` of version retention). */
const MAX_BLAME_BYTES = 8 * 1024 * 1024
/** Chunks kept between versions (consecutive versions share most of theirs). */
const CHUNK_CACHE = 4096

interface Row {
  seq: number
  at_us: number
  op: ChangeOp
  version: string | null
  path: string | null
  hash: Uint8Array | null
  session_id: string | null
  message: string | null
  call_id: number | null
  call_name: string | null
  kept_size: number | null
  kept_chunks: Uint8Array | null
}

const CONTENT = "('create', 'write', 'truncate')"
const COLUMNS = `c.seq, c.at_us, c.op, c.version, c.path, c.hash, c.session_id, c.message,
  m.id AS call_id, t.name AS call_name, v.size AS kept_size, v.chunks AS kept_chunks
FROM agentfs_change c
LEFT JOIN agentfs_tool_call_meta m ON m.call_token = c.call_token
LEFT JOIN tool_calls t ON t.id = m.id
LEFT JOIN agentfs_file_version v ON v.id = (SELECT max(id) FROM agentfs_file_version w WHERE w.ino = c.ino AND w.version = c.version)`

const toChange = (r: Row): BlameChange => ({
  seq: r.seq,
  at: Math.floor(r.at_us / 1000),
  op: r.op,
  version: r.version,
  path: r.path,
  sessionId: r.session_id,
  toolCall:
    r.call_id !== null && r.call_name !== null ? { id: r.call_id, name: r.call_name } : null,
  message: r.message,
})

/**
 * For each line of a file, the change that gave it its current text, from the file's kept
 * versions (`versions: true`) and the change feed. The versions are walked oldest to newest,
 * each compared with the next by its common start and end (memcmp) and a bounded line diff of
 * what lies between, so a small edit of a large file costs the edit, not the file. Where the
 * history cannot say (a version not kept, the walk cut at `maxVersions`, a diff past its
 * budget, content changed without a recorded change), lines are unattributed with what is
 * known, never guessed.
 */
export async function blameFile(
  ctx: FsContext,
  path: string,
  options: BlameOptions = {},
): Promise<Blame> {
  const maxVersions = options.maxVersions ?? 1000
  if (!Number.isSafeInteger(maxVersions) || maxVersions < 1 || maxVersions > 10_000)
    throw fsError('EINVAL', 'blame', path, {
      hint: `maxVersions must be 1 … 10000, got ${maxVersions}`,
    })
  const timeoutMs = options.timeoutMs ?? 5000
  if (!(timeoutMs > 0))
    throw fsError('EINVAL', 'blame', path, { hint: `timeoutMs must be positive, got ${timeoutMs}` })
  const deadline = performance.now() + timeoutMs
  const target = normalizePath(path, 'blame')
  return ctx.q.transaction(async (tx) => {
    const { node } = await lookup(tx, target, { followLast: true, syscall: 'blame' })
    if (!node) throw fsError('ENOENT', 'blame', path)
    if ((node.mode & 0o170000) !== 0o100000)
      throw fsError('EINVAL', 'blame', path, { hint: 'only regular files have lines to blame' })
    const current = versionOf(node)
    const reader = new ChunkReader(tx)
    // The version blamed, and its content.
    let start: { seq: number } | undefined
    let content: Buffer
    let chunked: Chunked
    let version: string
    let unrecorded = false
    if (options.version !== undefined && options.version !== current) {
      const { rows } = await tx.execute<Row>({
        sql: `SELECT ${COLUMNS} WHERE c.ino = ? AND c.version = ? AND c.op IN ${CONTENT} ORDER BY c.seq DESC LIMIT 1`,
        params: [node.ino, options.version],
      })
      const row = rows[0]
      if (!row || row.kept_chunks === null)
        throw fsError('ENOENT', 'blame', path, {
          hint: `version ${options.version} of this file is not kept; list versions with fs.history(path)`,
        })
      checkSize(row.kept_size!, path)
      start = row
      ;({ content, chunked } = await reader.read(row.kept_chunks, row.kept_size!))
      version = options.version
    } else {
      checkSize(node.size, path)
      content = Buffer.from(await readAll(tx, node.ino, node.size, ctx.chunks, 'blame', target))
      chunked = chunkedOf(content)
      version = current
      // The change that left this content: by its version token, else by its hash (a restore
      // brings back an older content under a new token).
      const { rows } = await tx.execute<{ seq: number }>({
        sql: `SELECT seq FROM agentfs_change WHERE ino = ? AND op IN ${CONTENT} AND (version = ? OR hash = ?) ORDER BY seq DESC LIMIT 1`,
        params: [node.ino, current, createHash('sha256').update(content).digest()],
      })
      start = rows[0]
      if (!start) {
        const { rows: newest } = await tx.execute<{ seq: number }>({
          sql: `SELECT seq FROM agentfs_change WHERE ino = ? AND op IN ${CONTENT} ORDER BY seq DESC LIMIT 1`,
          params: [node.ino],
        })
        start = newest[0]
        unrecorded = true
      }
    }
    if (content.includes(0))
      throw fsError('EINVAL', 'blame', path, { hint: 'a binary file has no lines to blame' })
    // The changes back to the file's creation, or to maxVersions.
    const { rows } = start
      ? await tx.execute<Row>({
          sql: `SELECT ${COLUMNS} WHERE c.ino = (SELECT ?) AND c.op IN ${CONTENT} AND c.seq <= (SELECT ?) ORDER BY c.seq DESC LIMIT (SELECT ?)`,
          params: [node.ino, start.seq, maxVersions],
        })
      : { rows: [] as Row[] }
    const born = rows.findIndex((r) => r.op === 'create')
    const chain = (born >= 0 ? rows.slice(0, born + 1) : rows).reverse()
    const changes: BlameChange[] = []
    const gaps: Array<{ after: number | null; by: number | null }> = []
    const gap = (after: number | null, by: number | null) => -1 - (gaps.push({ after, by }) - 1)
    let complete = born >= 0 && !unrecorded
    // Walk: each readable version's content from the one before it.
    let state = new LineState(Buffer.alloc(0), 0)
    let last: number | null = null
    let lastReadable = born === -1 ? null : -1
    for (const [i, row] of chain.entries()) {
      if (performance.now() > deadline)
        throw fsError('ETIMEDOUT', 'blame', path, {
          hint: `blame took longer than ${timeoutMs} ms; pass a smaller maxVersions or a larger timeoutMs`,
        })
      const newest = i === chain.length - 1 && !unrecorded
      const readable = row.kept_chunks !== null || newest
      if (!readable) {
        complete = false
        continue
      }
      const next = newest
        ? { content, chunked }
        : await reader.read(row.kept_chunks!, row.kept_size!)
      changes.push(toChange(row))
      // Lines are this change's when the walk has every change before it; else only known to
      // be from between the last readable version and this one.
      const between = gap(last, row.seq)
      const owner = lastReadable === i - 1 ? changes.length - 1 : between
      state = state.next(next.content, owner, between, next.chunked)
      last = row.seq
      lastReadable = i
    }
    if (unrecorded || chain.length === 0) {
      complete = false
      const unknown = gap(last, null)
      state = state.next(content, unknown, unknown, chunked)
    }
    if (state.approximate) complete = false
    const texts = content.toString('utf8').split('\n')
    if (texts.at(-1) === '') texts.pop()
    const lines: BlameLine[] = []
    let unattributed = 0
    const used = new Set<BlameChange>()
    for (let i = 0; i < state.lines; i++) {
      const owner = state.owners[i]!
      if (owner >= 0) {
        const change = changes[owner]!
        used.add(change)
        lines.push({ line: i + 1, text: texts[i] ?? '', change })
      } else {
        unattributed++
        lines.push({ line: i + 1, text: texts[i] ?? '', change: null, between: gaps[-1 - owner]! })
      }
    }
    return {
      path: target,
      version,
      lines,
      changes: [...used].sort((a, b) => b.seq - a.seq),
      unattributed,
      walked: changes.length,
      complete: complete && unattributed === 0,
    }
  })
}

function checkSize(size: number, path: string): void {
  if (size > MAX_BLAME_BYTES)
    throw fsError('EFBIG', 'blame', path, {
      hint: `files over ${MAX_BLAME_BYTES} bytes are not blamed (versions are not kept past it)`,
    })
}

/** Reads kept versions, keeping recent chunks: consecutive versions share most of theirs. */
class ChunkReader {
  readonly #q: Executor
  readonly #cache = new Map<string, Uint8Array>()

  constructor(q: Executor) {
    this.#q = q
  }

  async read(chunks: Uint8Array, size: number): Promise<{ content: Buffer; chunked: Chunked }> {
    const hashes = hashesOf(chunks)
    const keys = hashes.map((h) => Buffer.from(h).toString('latin1'))
    // The chunks not cached, in one query per 256 of them.
    const missing = [...new Set(keys.filter((k) => !this.#cache.has(k)))]
    for (let at = 0; at < missing.length; at += 256) {
      const batch = missing.slice(at, at + 256)
      const { rows } = await this.#q.execute<{ hash: Uint8Array; data: Uint8Array }>({
        sql: `SELECT hash, data FROM agentfs_blob WHERE hash IN (${batch.map(() => '?').join(', ')})`,
        params: batch.map((k) => Buffer.from(k, 'latin1')),
      })
      for (const row of rows) {
        if (this.#cache.size >= CHUNK_CACHE) this.#cache.delete(this.#cache.keys().next().value!)
        this.#cache.set(Buffer.from(row.hash).toString('latin1'), row.data)
      }
    }
    const parts: Uint8Array[] = []
    for (const [i, key] of keys.entries()) {
      // A chunk the store lost (fsck's CORRUPT): read alone, it says so.
      parts.push(this.#cache.get(key) ?? (await readBlob(this.#q, hashes[i]!)))
    }
    const ends: number[] = []
    let end = 0
    for (const part of parts) {
      end = Math.min(size, end + part.byteLength)
      ends.push(end)
    }
    const bytes = Buffer.concat(parts)
    return {
      content: bytes.byteLength === size ? bytes : bytes.subarray(0, size),
      chunked: { keys, ends },
    }
  }
}
