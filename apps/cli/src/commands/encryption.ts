import { existsSync } from 'node:fs'
import type { DatabaseKey } from '@agentfs/core'
import {
  BETTER_SQLITE3_CIPHERS,
  type BetterSqlite3Cipher,
  type KeySpec,
  rekeyDatabase,
} from '@agentfs/driver-better-sqlite3'
import type { Command } from 'commander'
import { encryption, isTursoCipher, KEY_ENV, readDatabaseKey } from '../db-key.js'
import { databasePath, isSyncedFile, refuseDirectory } from '../open.js'
import { print } from './shared.js'

/** The variable holding the new key of `rekey`. */
export const NEW_KEY_ENV = 'AGENTFS_NEW_KEY'

/** The file a command rewrites: it must exist, be a file, and not be a synced replica. */
function target(db: string): string {
  const path = databasePath(db)
  if (!existsSync(path)) throw new Error(`no database at ${path}`)
  refuseDirectory(path, db)
  if (isSyncedFile(path))
    throw new Error(
      `${path} is a synced database: its local file belongs to the sync engine; the server encrypts what it stores`,
    )
  return path
}

/** This command's key (from --key-file, --key or the variables), which it must have. */
function givenKey(what: string): KeySpec {
  const { key, cipher } = encryption()
  if (key === undefined)
    throw new Error(
      `${what} needs the key: --key-file FILE (or $${KEY_ENV}); make one only you can read with (umask 077; openssl rand -hex 32 > db.key)`,
    )
  if (isTursoCipher(cipher))
    throw new Error(
      `${what} works on better-sqlite3-multiple-ciphers' formats; a file of the Turso engine (cipher ${cipher}) is re-keyed with tursodb`,
    )
  return { key, ...(cipher === undefined ? {} : { cipher }) }
}

function cipherArg(value: string): BetterSqlite3Cipher {
  if (!(BETTER_SQLITE3_CIPHERS as readonly string[]).includes(value))
    throw new Error(
      `unknown cipher ${JSON.stringify(value)}; one of ${BETTER_SQLITE3_CIPHERS.join(', ')}`,
    )
  return value as BetterSqlite3Cipher
}

/** `encrypt`, `decrypt` and `rekey`: one crash-safe pass over the whole file each. */
export function registerEncryption(program: Command): void {
  program
    .command('encrypt')
    .description(
      'encrypt a database at rest with the key of --key-file (or $AGENTFS_KEY); one crash-safe pass',
    )
    .argument('<db>')
    .action((db: string) => {
      const path = target(db)
      const to = givenKey('encrypt')
      rekeyDatabase({ path, to })
      print(
        `encrypted ${path} (${to.cipher ?? 'sqlcipher'}); open it with the same key from now on`,
      )
    })
  program
    .command('decrypt')
    .description(
      'store an encrypted database as plain SQLite again (its key: --key-file or $AGENTFS_KEY)',
    )
    .argument('<db>')
    .action((db: string) => {
      const path = target(db)
      rekeyDatabase({ path, from: givenKey('decrypt') })
      print(`decrypted ${path}; anyone who can read the file can read its contents`)
    })
  program
    .command('rekey')
    .description(
      'change the key (and cipher) of an encrypted database: its key now from --key-file or $AGENTFS_KEY, the new one from --new-key-file or $AGENTFS_NEW_KEY',
    )
    .argument('<db>')
    .option('--new-key-file <file>', `the new key is in this file (or $${NEW_KEY_ENV})`)
    .option('--new-cipher <name>', 'the new cipher (default: the current one)', cipherArg)
    .action((db: string, o: { newKeyFile?: string; newCipher?: BetterSqlite3Cipher }) => {
      const path = target(db)
      const from = givenKey('rekey')
      const key: DatabaseKey | undefined =
        o.newKeyFile !== undefined
          ? readDatabaseKey(o.newKeyFile)
          : process.env[NEW_KEY_ENV] || undefined
      if (key === undefined)
        throw new Error(`rekey needs the new key: --new-key-file FILE (or $${NEW_KEY_ENV})`)
      const cipher = o.newCipher ?? from.cipher
      rekeyDatabase({ path, from, to: { key, ...(cipher === undefined ? {} : { cipher }) } })
      print(`rekeyed ${path} (${cipher ?? 'sqlcipher'}); the old key no longer opens it`)
    })
}
