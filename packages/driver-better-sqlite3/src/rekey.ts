import { chmodSync, closeSync, fsyncSync, openSync, renameSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import { AgentFsError, type DatabaseKey } from '@agentfs/core'
import { fileHeader, isNotADatabase, keyBytes, wrongKeyError } from '@agentfs/core/driver-kit'
import {
  BETTER_SQLITE3_CIPHERS,
  type BetterSqlite3Cipher,
  checkEngineVersion,
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

function engine(): CipherConstructor {
  const name = 'better-sqlite3-multiple-ciphers'
  try {
    const require = createRequire(import.meta.url)
    checkEngineVersion(
      process.versions.node,
      (require(`${name}/package.json`) as { version?: string }).version,
      name,
    )
    return require(name) as CipherConstructor
  } catch (error) {
    if ((error as { code?: unknown }).code === 'CANT_OPEN') throw error
    throw new AgentFsError(
      'CANT_OPEN',
      `encrypting, decrypting and rekeying need ${name}: npm install ${name}`,
      { cause: error },
    )
  }
}

function cipherOf(spec: KeySpec | undefined): BetterSqlite3Cipher {
  const cipher = spec?.cipher ?? 'sqlcipher'
  if (!(BETTER_SQLITE3_CIPHERS as readonly string[]).includes(cipher))
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `unknown cipher ${JSON.stringify(cipher)}; one of ${BETTER_SQLITE3_CIPHERS.join(', ')}`,
    )
  return cipher
}

function useCipher(db: CipherDb, cipher: BetterSqlite3Cipher): void {
  db.pragma(`cipher = '${cipher}'`)
  if (cipher === 'sqlcipher') db.pragma('legacy = 4')
}

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
  const fromCipher = cipherOf(from)
  const toCipher = cipherOf(to)
  const mode = statSync(path).mode & 0o7777
  const header = fileHeader(path)
  if (header === 'empty')
    throw new AgentFsError('INVALID_ARGUMENT', `${path} is empty or missing: nothing to rekey`)
  if (from === undefined && header === 'other')
    throw new AgentFsError(
      'WRONG_KEY',
      `${path} is already encrypted (or is not a SQLite database): change its key with rekey, giving its key now`,
    )
  const Database = engine()
  const copy = `${path}.agentfs-rekey`
  rmSync(copy, { force: true })
  rmSync(`${copy}-journal`, { force: true })
  const source = new Database(path, { timeout: 0 })
  try {
    if (fromKey !== undefined) {
      useCipher(source, fromCipher)
      source.key(fromKey)
    }
    try {
      source.prepare('SELECT count(*) FROM sqlite_schema').all()
    } catch (error) {
      if (isNotADatabase(error)) throw wrongKeyError(path, fromKey !== undefined, error)
      throw error
    }
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
