import { isAgentFsError } from '@agentfs/core'
import type { FileVersion } from '@agentfs/fs'
import { createTwoFilesPatch, diffLines } from 'diff'
import type { Inspection } from '../context.js'
import { HttpError, LIMITS } from '../limits.js'

/** One entry of a directory listing. */
export interface TreeEntry {
  readonly name: string
  readonly path: string
  readonly type: 'file' | 'directory' | 'symlink' | 'other'
  readonly size: number | null
}

/** A page of a directory, in name order; `cursor` continues it. */
export interface TreePage {
  readonly path: string
  readonly entries: TreeEntry[]
  readonly cursor: string | null
}

/** A file's content as shown: text up to `LIMITS.fileBytes`, else a note. */
export interface FileView {
  readonly path: string
  readonly version: string | null
  /** Whether this is the content the file holds now. */
  readonly current: boolean
  readonly size: number
  readonly mimeType: string
  readonly contentType: 'text' | 'binary'
  /** The text (the first `LIMITS.fileBytes` of it when `truncated`); null for binary content. */
  readonly text: string | null
  readonly truncated: boolean
}

/** The line-by-line answer to "which change last touched this line". */
export interface BlameLine {
  readonly line: number
  /** The change (feed `seq`) that made the line what it is; null when history does not say. */
  readonly seq: number | null
  readonly version: string | null
  readonly at: number | null
  readonly sessionId: string | null
  readonly toolCallId: number | null
}

/** Blame of a file: one entry per line of its current text. */
export interface Blame {
  readonly path: string
  readonly lines: BlameLine[]
  /** The versions walked (oldest first); fewer than the file has when `partial`. */
  readonly versions: number
  /** True when older versions could not be read (or were beyond the walk): lines from before are attributed to the oldest one read. */
  readonly partial: boolean
}

const joinPath = (dir: string, name: string) => (dir === '/' ? `/${name}` : `${dir}/${name}`)

/** Maps the filesystem's errors to answers: ENOENT → 404, EACCES/EPERM → 403, … */
export async function fsCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (error) {
    if (isAgentFsError(error) || (error as { code?: unknown }).code !== undefined) {
      const code = (error as { code?: string }).code
      const message = (error as Error).message.split('\n')[0] ?? String(error)
      if (code === 'ENOENT') throw new HttpError(404, message)
      if (code === 'EACCES' || code === 'EPERM') throw new HttpError(403, message)
      if (code === 'ENOTDIR' || code === 'EISDIR' || code === 'EINVAL' || code === 'ELOOP')
        throw new HttpError(400, message)
    }
    throw error
  }
}

/** A page of the directory at `path`, after the name `cursor`. */
export async function tree(
  ins: Inspection,
  path: string,
  cursor: string | undefined,
  limit: number,
): Promise<TreePage> {
  return fsCall(async () => {
    const dir = await ins.fs.opendir(path, { bufferSize: Math.min(limit + 1, 500) })
    const entries: TreeEntry[] = []
    let more = false
    for await (const d of dir) {
      if (cursor !== undefined && d.name <= cursor) continue
      if (entries.length === limit) {
        more = true
        break
      }
      const full = joinPath(dir.path, d.name)
      const type = d.isDirectory()
        ? 'directory'
        : d.isFile()
          ? 'file'
          : d.isSymbolicLink()
            ? 'symlink'
            : 'other'
      const size = type === 'file' ? (await ins.fs.lstat(full)).size : null
      entries.push({ name: d.name, path: full, type, size })
    }
    return { path: dir.path, entries, cursor: more ? (entries.at(-1)?.name ?? null) : null }
  })
}

/** The file at `path` (at `version` when given), as text when it is text. */
export async function fileView(
  ins: Inspection,
  path: string,
  version: string | undefined,
): Promise<FileView> {
  return fsCall(async () => {
    const stat = await ins.fs.stat(path)
    if (stat.isDirectory())
      throw new HttpError(400, `${path} is a directory; list it with /api/tree`)
    // The file now is read only as far as it is shown; a version (kept only for files up to
    // the retention's size) whole.
    const bytes =
      version === undefined
        ? await head(ins, path, LIMITS.fileBytes + 4)
        : ((await ins.fs.readFile(path, { version })) as Buffer)
    const size = version === undefined ? stat.size : bytes.length
    const mime = await ins.fs.mimeType(path)
    const text = mime.contentType === 'text' ? decodeText(bytes, LIMITS.fileBytes) : null
    return {
      path,
      version: version ?? stat.version ?? null,
      current: version === undefined || version === stat.version,
      size,
      mimeType: mime.mimeType,
      contentType: mime.contentType,
      text,
      truncated: text !== null && size > LIMITS.fileBytes,
    }
  })
}

/** The first `max` bytes of the file at `path`, through a handle. */
async function head(ins: Inspection, path: string, max: number): Promise<Buffer> {
  const handle = await ins.fs.open(path, 'r')
  try {
    const buffer = Buffer.alloc(max)
    const { bytesRead } = await handle.read(buffer, 0, max, 0)
    return buffer.subarray(0, bytesRead)
  } finally {
    await handle.close()
  }
}

/** UTF-8 text of at most `max` bytes (cut at a character boundary). */
function decodeText(bytes: Uint8Array, max: number): string {
  let end = Math.min(bytes.length, max)
  while (end < bytes.length && end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--
  return new TextDecoder().decode(bytes.subarray(0, end))
}

/** The file's versions, newest first (`fs.history`). */
export function fileHistory(ins: Inspection, path: string, limit: number): Promise<FileVersion[]> {
  return fsCall(() => ins.fs.history(path, { limit }))
}

/** A version's text for diffing, or a clear refusal. */
async function versionText(ins: Inspection, path: string, version: string | null): Promise<string> {
  if (version === null) return ''
  if (version === 'current') {
    const { size } = await ins.fs.stat(path)
    if (size > LIMITS.diffBytes)
      throw new HttpError(
        413,
        `${path} is ${size} bytes; the inspector diffs files up to ${LIMITS.diffBytes} bytes (use agentfs diff)`,
      )
  }
  const bytes = (await ins.fs.readFile(path, version === 'current' ? {} : { version })) as Buffer
  if (bytes.length > LIMITS.diffBytes)
    throw new HttpError(
      413,
      `${path} at ${version} is ${bytes.length} bytes; the inspector diffs files up to ${LIMITS.diffBytes} bytes (use agentfs diff)`,
    )
  if (bytes.includes(0 as number))
    throw new HttpError(400, `${path} at ${version} is binary; no text diff`)
  return new TextDecoder().decode(bytes)
}

/**
 * The unified diff of `path` between two versions (`current` for what it holds now; `none`
 * for nothing, to show a creation), within `LIMITS.diffMs`.
 */
export async function fileDiff(
  ins: Inspection,
  path: string,
  from: string,
  to: string,
): Promise<{ path: string; from: string; to: string; diff: string }> {
  return fsCall(async () => {
    const a = await versionText(ins, path, from === 'none' ? null : from)
    const b = await versionText(ins, path, to === 'none' ? null : to)
    const diff = createTwoFilesPatch(path, path, a, b, from, to, {
      context: 3,
      timeout: LIMITS.diffMs,
    })
    if (diff === undefined)
      throw new HttpError(413, `the diff of ${path} took longer than ${LIMITS.diffMs} ms`)
    return { path, from, to, diff }
  })
}

/**
 * For each line of the file now, the change that last touched it: the readable versions are
 * walked oldest first (at most `LIMITS.blameVersions`), each diffed against the next by lines;
 * a line a version added or changed is that version's.
 */
export async function blame(ins: Inspection, path: string): Promise<Blame> {
  return fsCall(async () => {
    const all = await ins.fs.history(path, { limit: 10_000 })
    const content = all.filter((v) => v.readable && ['create', 'write', 'truncate'].includes(v.op))
    const walked = content.slice(0, LIMITS.blameVersions).reverse()
    const partial =
      walked.length < content.length || all.some((v) => !v.readable && v.op === 'write')
    let owners: Owner[] = []
    let previous = ''
    for (const v of walked) {
      const text = await versionText(ins, path, v.version)
      const owner: BlameLine = {
        line: 0,
        seq: v.seq,
        version: v.version,
        at: v.at,
        sessionId: v.sessionId,
        toolCallId: v.toolCallId,
      }
      owners = carry(owners, previous, text, owner, path)
      previous = text
    }
    const current = await versionText(ins, path, 'current')
    if (current !== previous) {
      // Content changed since the newest readable version (history off, or trimmed): those
      // lines have no known change.
      owners = carry(owners, previous, current, null, path)
    }
    const lines = owners.map((o, i) =>
      o
        ? { ...o, line: i + 1 }
        : { line: i + 1, seq: null, version: null, at: null, sessionId: null, toolCallId: null },
    )
    return { path, lines, versions: walked.length, partial }
  })
}

type Owner = BlameLine | null

/**
 * The owners of `next`'s lines: a line kept from `previous` keeps its owner (or takes `owner`
 * when it had none: the first version walked), a line added or changed is `owner`'s.
 */
function carry(
  owners: Owner[],
  previous: string,
  next: string,
  owner: Owner,
  path: string,
): Owner[] {
  const parts = diffLines(previous, next, { timeout: LIMITS.diffMs })
  if (parts === undefined)
    throw new HttpError(413, `blaming ${path} took longer than ${LIMITS.diffMs} ms`)
  const out: Owner[] = []
  let at = 0
  for (const part of parts) {
    const n = part.count ?? 0
    if (part.removed) at += n
    else if (part.added) for (let i = 0; i < n; i++) out.push(owner)
    else {
      for (let i = 0; i < n; i++) out.push(owners[at + i] ?? owner)
      at += n
    }
  }
  return out
}
