import { closeSync, openSync, readSync } from 'node:fs'
import { AgentFsError } from '../errors.js'

/** A key for an encrypted database: a passphrase, or bytes (at most 4 KiB, never empty). */
export type DatabaseKey = string | Uint8Array

const MAX_KEY_BYTES = 4096

/** The key's bytes (a string as UTF-8), refused when empty or longer than 4 KiB. */
export function keyBytes(key: DatabaseKey, driverName: string): Buffer {
  if (typeof key !== 'string' && !(key instanceof Uint8Array))
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `${driverName}: key must be a string or a Uint8Array, not ${key === null ? 'null' : typeof key}`,
    )
  const bytes = typeof key === 'string' ? Buffer.from(key, 'utf8') : Buffer.from(key)
  if (bytes.length === 0)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `${driverName}: the key is empty; give the database's key, or no key option for a database that is not encrypted`,
    )
  if (bytes.length > MAX_KEY_BYTES)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `${driverName}: the key has ${bytes.length} bytes; a key has at most ${MAX_KEY_BYTES}`,
    )
  return bytes
}

const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1')

/**
 * What the first 16 bytes of a file say: `plain` (SQLite's header), `empty` (no such file, or
 * shorter than a header: a new database), or `other` (encrypted, or not a database at all).
 */
export function fileHeader(path: string): 'plain' | 'empty' | 'other' {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch {
    return 'empty'
  }
  try {
    const head = Buffer.alloc(16)
    const read = readSync(fd, head, 0, 16, 0)
    if (read < 16) return 'empty'
    return head.equals(SQLITE_HEADER) ? 'plain' : 'other'
  } finally {
    closeSync(fd)
  }
}

/**
 * The error for a file the engine cannot read (`SQLITE_NOTADB`), said from the file's header
 * with what to do. Without a key it stays `CORRUPT` (an encrypted file and a damaged one look
 * alike), and says both; with one it is `WRONG_KEY`.
 */
export function wrongKeyError(path: string, keyed: boolean, cause: unknown): AgentFsError {
  if (!keyed)
    return new AgentFsError(
      'CORRUPT',
      `${path} is encrypted, damaged, or not a SQLite database: if it is encrypted, open it with its key (the key option; agentfs --key-file FILE or AGENTFS_KEY), else restore it from a backup`,
      { cause },
    )
  const header = fileHeader(path)
  if (header === 'plain')
    return new AgentFsError(
      'WRONG_KEY',
      `${path} is not encrypted, and a key was given: open it without one, or encrypt it first (agentfs encrypt)`,
      { cause },
    )
  return new AgentFsError(
    'WRONG_KEY',
    `${path} does not open with this key: the key or the cipher is wrong, or the file is not a database; give the key it was encrypted with`,
    { cause },
  )
}

/**
 * Proves a just-opened file reads (`readSchema` reads `sqlite_schema`): when it was keyed, or
 * when its header is not SQLite's (encrypted, or no database). A plain file is not read here.
 * The engine's "not a database" becomes {@link wrongKeyError}; other errors pass through.
 */
export function proveOpens(path: string, keyed: boolean, readSchema: () => unknown): void {
  if (path === ':memory:' || path === '') return
  if (!keyed && fileHeader(path) !== 'other') return
  try {
    readSchema()
  } catch (error) {
    if (isNotADatabase(error)) throw wrongKeyError(path, keyed, error)
    throw error
  }
}

/** True for the engine's "file is not a database" (SQLITE_NOTADB, code 26), whatever the binding. */
export function isNotADatabase(error: unknown): boolean {
  const e = error as { code?: unknown; rawCode?: unknown; message?: unknown } | null
  return (
    e?.code === 'SQLITE_NOTADB' ||
    e?.rawCode === 26 ||
    /file is not a database|file is encrypted or is not a database|not a database/i.test(
      String(e?.message ?? ''),
    )
  )
}
