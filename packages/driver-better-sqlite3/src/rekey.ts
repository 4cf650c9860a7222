import { chmodSync, closeSync, fsyncSync, openSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { AgentFsError, type DatabaseKey } from '@agentfs/core'
import { fileHeader, keyBytes, proveOpens } from '@agentfs/core/driver-kit'
import {
  type BetterSqlite3Cipher,
  checkCipher,
  cipherEngine,
  useCipher,
} from './better-sqlite3-driver.js'

/** A key and its cipher (default `sqlcipher`); absent: not encrypted. */
export interface KeySpec {
  readonly key: DatabaseKey
  readonly cipher?: BetterSqlite3Cipher
}

/** Options of {@link rekeyDatabase}. */
export interface RekeyOptions {
  /** The database file. Nothing may have it open: the rewrite needs it alone. */
  readonly path: string
  /** Its key now; absent for a database that is not encrypted. */
  readonly from?: KeySpec
  /** Its key after; absent to decrypt it. */
  readonly to?: KeySpec
}

interface CipherDb {
  prepare(sql: string): { all(...params: unknown[]): unknown[]; run(...p: unknown[]): unknown }
  pragma(sql: string, options?: { simple?: boolean }): unknown
  key(key: Buffer): unknown
  rekey(key: Buffer): unknown
  exec(sql: string): unknown
  close(): unknown
}

type CipherConstructor = new (path: string, options?: { timeout?: number }) => CipherDb

function syncFile(path: string): void {
  const fd = openSync(path, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * Encrypts, decrypts or changes the key (and cipher) of a database in one pass, crash-safe: a
 * copy is written beside it (`<path>.agentfs-rekey`) from a consistent snapshot taken while the
 * database is locked against every other connection, re-encrypted, flushed to disk and renamed
 * over the original. A kill at any moment leaves the old database or the new one, whole; a copy
 * left by a killed run is removed by the next. The file keeps its permissions.
 *
 * Refused, before any change: a database another connection has open (`BUSY`), a wrong `from`
 * key (`WRONG_KEY`), `from` and `to` that are both absent.
 */
export function rekeyDatabase(options: RekeyOptions): void {
  const { path, from, to } = options
  if (from === undefined && to === undefined)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'rekeyDatabase: give from (its key now), to (its key after), or both',
    )
  const fromKey = from === undefined ? undefined : keyBytes(from.key, 'rekeyDatabase')
  const toKey = to === undefined ? undefined : keyBytes(to.key, 'rekeyDatabase')
  const fromCipher = checkCipher(from?.cipher, '')
  const toCipher = checkCipher(to?.cipher, '')
  const mode = statSync(path).mode & 0o7777
  const header = fileHeader(path)
  if (header === 'empty')
    throw new AgentFsError('INVALID_ARGUMENT', `${path} is empty or missing: nothing to rekey`)
  if (from === undefined && header === 'other')
    throw new AgentFsError(
      'WRONG_KEY',
      `${path} is already encrypted (or is not a SQLite database): change its key with rekey, giving its key now`,
    )
  const Database = cipherEngine<CipherConstructor>()
  const copy = `${path}.agentfs-rekey`
  rmSync(copy, { force: true })
  rmSync(`${copy}-journal`, { force: true })
  const source = new Database(path, { timeout: 0 })
  try {
    if (fromKey !== undefined) {
      useCipher(source, fromCipher)
      source.key(fromKey)
    }
    proveOpens(path, fromKey !== undefined, () =>
      source.prepare('SELECT count(*) FROM sqlite_schema').all(),
    )
    source.pragma('temp_store = MEMORY')
    // Alone on the file from here to the rename: out of WAL (which needs every other
    // connection closed) and an exclusive lock kept until this connection closes.
    source.pragma('locking_mode = EXCLUSIVE')
    try {
      source.pragma('journal_mode = DELETE')
      source.exec('BEGIN EXCLUSIVE; COMMIT')
    } catch (error) {
      if (/locked|busy/i.test(String((error as Error).message)))
        throw new AgentFsError(
          'BUSY',
          `${path} is open in another process (a mount, an agent, a server); close it there and run again`,
          { cause: error },
        )
      throw error
    }
    // The snapshot: written with the source's own key and cipher (plain if it is plain).
    source.prepare('VACUUM INTO ?').run(copy)
    const target = new Database(copy, { timeout: 0 })
    try {
      if (fromKey !== undefined) {
        useCipher(target, fromCipher)
        target.key(fromKey)
      }
      if (toKey !== undefined) useCipher(target, toCipher)
      target.rekey(toKey ?? Buffer.alloc(0))
      target.pragma('journal_mode = WAL')
    } finally {
      target.close()
    }
    chmodSync(copy, mode)
    syncFile(copy)
    renameSync(copy, path)
    syncFile(dirname(path))
  } catch (error) {
    rmSync(copy, { force: true })
    throw error
  } finally {
    source.close()
  }
}
