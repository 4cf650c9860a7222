import { AgentFsError, type Queryable } from '@agentfs/core'
import mime from 'mime'

/** A file's media type, as `mimeType(path)` answers (Stream-FS's `mimeType` and `contentType`). */
export interface MimeInfo {
  /** `text/markdown`, `image/png`, … */
  readonly mimeType: string
  /** Whether the content reads as text (no NUL byte in its first 8 KiB). */
  readonly contentType: 'text' | 'binary'
  /** True when the type was set (on create, `writeFile`'s `mimeType`); false when derived. */
  readonly stored: boolean
}

/** `type/subtype` with RFC 6838's name characters, at most 255 characters. */
const MIME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$/

/** Whether `value` is a media type this library stores (and trusts when it reads one back). */
export const isMimeType = (value: unknown): value is string =>
  typeof value === 'string' && value.length <= 255 && MIME_PATTERN.test(value)

/** Validates a media type given by a caller; INVALID_ARGUMENT, before any effect, otherwise. */
export function checkMimeType(value: unknown): string {
  if (!isMimeType(value))
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `mimeType must be a media type such as text/markdown (type/subtype, at most 255 characters), got ${JSON.stringify(value)?.slice(0, 80)}`,
    )
  return value.toLowerCase()
}

const startsWith = (bytes: Uint8Array, prefix: readonly (number | null)[]) =>
  bytes.length >= prefix.length && prefix.every((b, i) => b === null || bytes[i] === b)

/** The media type of content by its magic number (formats whose names may lie), or undefined. */
export function sniffMimeType(head: Uint8Array): string | undefined {
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png'
  if (startsWith(head, [0xff, 0xd8, 0xff])) return 'image/jpeg'
  if (startsWith(head, [0x47, 0x49, 0x46, 0x38])) return 'image/gif'
  if (startsWith(head, [0x52, 0x49, 0x46, 0x46, null, null, null, null, 0x57, 0x45, 0x42, 0x50]))
    return 'image/webp'
  if (startsWith(head, [0x25, 0x50, 0x44, 0x46, 0x2d])) return 'application/pdf'
  if (startsWith(head, [0x1f, 0x8b])) return 'application/gzip'
  if (startsWith(head, [0x50, 0x4b, 0x03, 0x04])) return 'application/zip'
  return undefined
}

/** Text when no NUL byte is in the first 8 KiB. */
export const contentTypeOf = (head: Uint8Array): 'text' | 'binary' =>
  head.subarray(0, 8192).includes(0) ? 'binary' : 'text'

/**
 * A media type derived from a file's content and name: the magic number first (a PNG named
 * `notes.txt` is a PNG), then the name's extension, then `text/plain` for text and
 * `application/octet-stream` for anything else.
 */
export function deriveMimeType(path: string, head: Uint8Array): string {
  const sniffed = sniffMimeType(head)
  if (sniffed !== undefined) return sniffed
  const name = path.slice(path.lastIndexOf('/') + 1)
  const text = contentTypeOf(head) === 'text'
  const byName = mime.getType(name)
  // An extension that names a binary format (.ts is an MPEG transport stream, .rs a Rust
  // source as often as anything) says nothing about content that is text.
  if (byName !== null && !(text && BINARY_TYPE.test(byName))) return byName
  if (text) return SOURCE_TYPES[name.slice(name.lastIndexOf('.') + 1).toLowerCase()] ?? 'text/plain'
  return byName ?? 'application/octet-stream'
}

/** Media types only binary content can have (SVG is text). */
const BINARY_TYPE =
  /^(audio|video|font|model)\/|^image\/(?!svg)|^application\/(rls-services|octet-stream)/

/** Source files whose extensions the registry gives to binary formats. */
const SOURCE_TYPES: Record<string, string> = {
  ts: 'text/typescript',
  mts: 'text/typescript',
  cts: 'text/typescript',
}

/** The stored type of inode `ino`; a stored value that is not a media type is ignored. */
export async function storedMimeType(q: Queryable, ino: number): Promise<string | undefined> {
  const { rows } = await q.execute<{ mime_type: unknown }>({
    sql: 'SELECT mime_type FROM agentfs_mime WHERE ino = ?',
    params: [ino],
  })
  const value = rows[0]?.mime_type
  return isMimeType(value) ? value : undefined
}

/** Stores (or replaces) inode `ino`'s type, in the caller's transaction. */
export async function storeMimeType(q: Queryable, ino: number, mimeType: string): Promise<void> {
  // A delete and an insert rather than an upsert: a synced database's change capture records
  // plain statements.
  await q.execute({ sql: 'DELETE FROM agentfs_mime WHERE ino = ?', params: [ino] })
  await q.execute({
    sql: 'INSERT INTO agentfs_mime (ino, mime_type) VALUES (?, ?)',
    params: [ino, mimeType],
  })
}

/** Makes `to`'s stored type `from`'s (none if `from` has none), in the caller's transaction. */
export async function copyMimeType(q: Queryable, from: number, to: number): Promise<void> {
  await q.execute({ sql: 'DELETE FROM agentfs_mime WHERE ino = ?', params: [to] })
  await q.execute({
    sql: 'INSERT INTO agentfs_mime (ino, mime_type) SELECT ?, mime_type FROM agentfs_mime WHERE ino = (SELECT ?)',
    params: [to, from],
  })
}
