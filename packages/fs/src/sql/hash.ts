import { createHash } from 'node:crypto'
import { AgentFsError, fsError } from '@agentfs/core'
import type { FileSystem } from '../types.js'

/** Options of {@link hashFile}. */
export interface HashOptions {
  /**
   * Hash the text normalised (seed 003's canonical form): UTF-8, every line end LF (CRLF and
   * CR become LF), whitespace at the end of each line removed, blank lines at the end removed,
   * and exactly one final newline (nothing at all for a file that is empty or only whitespace).
   * Refused for files over {@link MAX_CANONICAL_BYTES} and for bytes that are not UTF-8.
   */
  readonly canonical?: boolean
  /** Only the bytes from `start` up to, not including, `end` (default: to the end). */
  readonly range?: { readonly start: number; readonly end?: number }
}

/** What {@link hashFile} returns. */
export interface FileHash {
  /** `sha256:` and the digest in lower-case hex. */
  readonly hash: string
  /** The bytes hashed (after canonicalisation, with `canonical`). */
  readonly size: number
  /** The version token of the content hashed (`stat().version`). */
  readonly version: string
  readonly canonical: boolean
}

/** The largest file `canonical` hashes: its text is normalised in memory. */
export const MAX_CANONICAL_BYTES = 64 * 1024 * 1024
const PIECE = 1024 * 1024
/** Hashes kept per filesystem object (by inode, version and options). */
const CACHE_ENTRIES = 4096

const caches = new WeakMap<object, Map<string, FileHash>>()

/** Seed 003's canonical text: LF line ends, no trailing whitespace, one final newline. */
export function canonicalText(text: string): string {
  const lines = text.replace(/\r\n?/g, '\n').split('\n')
  const trimmed = lines.map((line) => line.trimEnd())
  while (trimmed.length > 0 && trimmed.at(-1) === '') trimmed.pop()
  return trimmed.length === 0 ? '' : `${trimmed.join('\n')}\n`
}

/**
 * The SHA-256 of a file's bytes (following links), or of its canonical text. Reads through an
 * open handle, so the hash is of one version: the version token is read before and after, and a
 * file changed meanwhile is hashed again (three tries, then EAGAIN). Cached by inode and version
 * token: hashing a file that did not change reads nothing but its metadata.
 */
export async function hashFile(
  fs: FileSystem,
  path: string,
  options: HashOptions = {},
  known?: (ino: number, version: string) => Uint8Array | undefined,
): Promise<FileHash> {
  const canonical = options.canonical === true
  const start = options.range?.start ?? 0
  const end = options.range?.end
  if (
    !Number.isSafeInteger(start) ||
    start < 0 ||
    (end !== undefined && (!Number.isSafeInteger(end) || end < start))
  )
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `range must be whole byte offsets with 0 <= start <= end, got ${JSON.stringify(options.range)}`,
    )
  let cache = caches.get(fs)
  if (!cache) {
    cache = new Map()
    caches.set(fs, cache)
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    const handle = await fs.open(path, 'r')
    try {
      const before = await handle.stat()
      if (before.isDirectory()) throw fsError('EISDIR', 'open', path)
      const key = `${before.ino}\0${before.version}\0${canonical}\0${start}\0${end ?? ''}`
      const hit = cache.get(key)
      if (hit) {
        cache.delete(key)
        cache.set(key, hit)
        return hit
      }
      const stop = Math.min(end ?? before.size, before.size)
      // The whole file, as this process just wrote or hashed it: nothing to read.
      const whole = !canonical && start === 0 && stop === before.size
      const digestKnown = whole ? known?.(before.ino, before.version) : undefined
      if (digestKnown)
        return {
          hash: `sha256:${Buffer.from(digestKnown).toString('hex')}`,
          size: before.size,
          version: before.version,
          canonical,
        }
      if (canonical && stop - start > MAX_CANONICAL_BYTES)
        throw fsError('EFBIG', 'hash', path, {
          hint: `a canonical hash reads the text whole, at most ${MAX_CANONICAL_BYTES} bytes; hash the bytes or a range instead`,
        })
      const digest = createHash('sha256')
      const parts: Uint8Array[] = []
      const buffer = new Uint8Array(Math.min(PIECE, Math.max(1, stop - start)))
      let at = start
      while (at < stop) {
        const { bytesRead } = await handle.read(
          buffer,
          0,
          Math.min(buffer.byteLength, stop - at),
          at,
        )
        if (bytesRead === 0) break
        const piece = buffer.subarray(0, bytesRead)
        if (canonical) parts.push(piece.slice())
        else digest.update(piece)
        at += bytesRead
      }
      let size = at - start
      if (canonical) {
        let text: string
        try {
          text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(parts))
        } catch {
          throw fsError('EINVAL', 'hash', path, {
            hint: 'a canonical hash is of UTF-8 text; hash the bytes instead',
          })
        }
        const bytes = Buffer.from(canonicalText(text), 'utf8')
        digest.update(bytes)
        size = bytes.byteLength
      }
      const after = await handle.stat()
      if (after.version !== before.version) continue
      const result: FileHash = {
        hash: `sha256:${digest.digest('hex')}`,
        size,
        version: before.version,
        canonical,
      }
      cache.set(key, result)
      if (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value!)
      return result
    } finally {
      await handle.close()
    }
  }
  throw fsError('EAGAIN', 'hash', path, {
    hint: 'the file changed while it was hashed, three times; try again',
  })
}
