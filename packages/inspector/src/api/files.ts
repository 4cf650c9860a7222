import { isAgentFsError } from '@agentfs/core'
import type { FileVersion } from '@agentfs/fs'
import { createTwoFilesPatch } from 'diff'
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
  readonly toolName: string | null
  /** The change's message, when it was given one. */
  readonly message: string | null
}

/** Blame of a file: one entry per line of its current text. */
export interface Blame {
  readonly path: string
  readonly lines: BlameLine[]
  /** The versions walked (oldest first); fewer than the file has when `partial`. */
  readonly versions: number
  /** True when some lines have no known change (versions not kept, or beyond the walk): their `seq` is null. */
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
 * For each line of the file now, the change that gave it its text (`fs.blame`): at most
 * `LIMITS.blameVersions` versions back, within the diff time budget.
 */
export async function blame(ins: Inspection, path: string): Promise<Blame> {
  return fsCall(async () => {
    try {
      const b = await ins.fs.blame(path, {
        maxVersions: LIMITS.blameVersions,
        timeoutMs: LIMITS.diffMs,
      })
      const lines = b.lines.map(
        ({ line, change: c }): BlameLine => ({
          line,
          seq: c?.seq ?? null,
          version: c?.version ?? null,
          at: c?.at ?? null,
          sessionId: c?.sessionId ?? null,
          toolCallId: c?.toolCall?.id ?? null,
          toolName: c?.toolCall?.name ?? null,
          message: c?.message ?? null,
        }),
      )
      return { path, lines, versions: b.walked, partial: !b.complete }
    } catch (error) {
      const code = (error as { code?: string }).code
      if (code === 'ETIMEDOUT' || code === 'EFBIG')
        throw new HttpError(413, `blaming ${path}: ${(error as Error).message.split('\n')[0]}`)
      throw error
    }
  })
}
