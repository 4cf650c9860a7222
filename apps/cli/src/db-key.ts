import { readFileSync, statSync } from 'node:fs'
import type { DatabaseKey } from '@agentfs/core'
import { BETTER_SQLITE3_CIPHERS, type BetterSqlite3Cipher } from '@agentfs/driver-better-sqlite3'
import { TURSO_CIPHERS, type TursoCipher } from '@agentfs/driver-turso'
import type { Command } from 'commander'
import { AUDIT_KEY_ENV } from './audit-key.js'

/** The variable holding the database key itself (kept out of shell history and `ps`). */
export const KEY_ENV = 'AGENTFS_KEY'
/** The variable naming a file that holds the database key. */
export const KEY_FILE_ENV = 'AGENTFS_KEY_FILE'
/** The variable naming the cipher (default `sqlcipher`). */
export const CIPHER_ENV = 'AGENTFS_CIPHER'

/** Every cipher a command takes: better-sqlite3-multiple-ciphers' and the Turso engine's. */
const CIPHERS: readonly string[] = [...BETTER_SQLITE3_CIPHERS, ...Object.keys(TURSO_CIPHERS)]

/** What every command opens its databases with: a key and its cipher, or nothing. */
export interface DatabaseEncryption {
  readonly key?: DatabaseKey
  /** A Turso engine cipher opens the file with the Turso engine (the Turso project's format). */
  readonly cipher?: BetterSqlite3Cipher | TursoCipher
}

/** True for a cipher of the Turso engine's (files of `tursodb` and the Turso project's CLI). */
export const isTursoCipher = (cipher: string | undefined): cipher is TursoCipher =>
  cipher !== undefined && Object.hasOwn(TURSO_CIPHERS, cipher)

let current: DatabaseEncryption = {}

/** The key and cipher of this command, to spread into `AgentFS.open` and the driver. */
export const encryption = (): DatabaseEncryption => current

/**
 * Reads a database key from a file: its text without the surrounding whitespace (a passphrase,
 * or hex digits from `openssl rand -hex 32`), or its bytes when they are not text. At most
 * 4 KiB; a file others can read is used with a warning.
 */
export function readDatabaseKey(file: string): DatabaseKey {
  let size: number
  let mode: number
  try {
    ;({ size, mode } = statSync(file))
  } catch {
    throw new Error(
      `the key file ${file} cannot be read; create one only you can read: (umask 077; openssl rand -hex 32 > ${file})`,
    )
  }
  if (size > 4096)
    throw new Error(`the key file ${file} has ${size} bytes; a key file holds at most 4096`)
  if ((mode & 0o077) !== 0)
    process.stderr.write(
      `agentfs: warning: the key file ${file} can be read by other users (mode ${(mode & 0o777).toString(8)}); chmod 600 ${file}\n`,
    )
  const bytes = readFileSync(file)
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes)
  const key = text.includes('\uFFFD') ? new Uint8Array(bytes) : text.trim()
  if (key.length === 0)
    throw new Error(`the key file ${file} is empty; put the database's key in it`)
  return key
}

/** The options every command takes for an encrypted database, as commander parsed them. */
interface KeyOptions {
  readonly key?: string
  readonly keyFile?: string
  readonly cipher?: string
}

/**
 * Sets this command's key from its options, else `$AGENTFS_KEY`, else the file
 * `$AGENTFS_KEY_FILE` names; the cipher from `--cipher`, else `$AGENTFS_CIPHER`.
 */
export function chooseEncryption(o: KeyOptions, env: NodeJS.ProcessEnv = process.env): void {
  if (o.key !== undefined && o.keyFile !== undefined)
    throw new Error('give the key once: --key or --key-file, not both')
  let key: DatabaseKey | undefined
  if (o.key !== undefined) key = o.key
  else if (o.keyFile !== undefined) key = readDatabaseKey(o.keyFile)
  else if (env[KEY_ENV]) key = env[KEY_ENV]
  else if (env[KEY_FILE_ENV]) key = readDatabaseKey(env[KEY_FILE_ENV])
  if (key !== undefined && key.length === 0) throw new Error('the key is empty')
  const cipher = o.cipher ?? (env[CIPHER_ENV] || undefined)
  if (cipher !== undefined && !CIPHERS.includes(cipher))
    throw new Error(`unknown cipher ${JSON.stringify(cipher)}; one of ${CIPHERS.join(', ')}`)
  if (cipher !== undefined && key === undefined)
    throw new Error(
      `--cipher needs a key: --key-file FILE or $${KEY_ENV} (a database without a key is not encrypted)`,
    )
  current = {
    ...(key === undefined ? {} : { key }),
    ...(cipher === undefined ? {} : { cipher: cipher as BetterSqlite3Cipher | TursoCipher }),
  }
}

/**
 * Adds `--key-file`, `--key` and `--cipher` to every command that runs (not to groups such as
 * `fs`), and sets the key before each runs. `verify`'s own `--key-file` is the audit key's, so
 * there the database key is `--db-key-file` (or the variables).
 */
export function addKeyOptions(program: Command): void {
  const visit = (command: Command) => {
    if (command.commands.length > 0) {
      for (const sub of command.commands) visit(sub)
      return
    }
    const taken = command.options.some((o) => o.long === '--key-file')
    command
      .option(
        taken ? '--db-key-file <file>' : '--key-file <file>',
        `the database's key is in this file (encrypted databases; or $${KEY_ENV}, $${KEY_FILE_ENV})`,
      )
      .option(
        '--key <key>',
        `the key itself (seen by other users in ps: prefer the file or $${KEY_ENV})`,
      )
      .option(
        '--cipher <name>',
        `the key's cipher (default sqlcipher; aegis256 and the Turso engine's others open files of tursodb; or $${CIPHER_ENV})`,
      )
  }
  for (const command of program.commands) visit(command)
  program.hook('preAction', (_program, action) => {
    const o = action.opts<KeyOptions & { dbKeyFile?: string }>()
    const own = action.options.some((option) => option.long === '--db-key-file')
    chooseEncryption({
      ...(o.key === undefined ? {} : { key: o.key }),
      ...(o.cipher === undefined ? {} : { cipher: o.cipher }),
      ...((own ? o.dbKeyFile : o.keyFile) === undefined
        ? {}
        : { keyFile: (own ? o.dbKeyFile : o.keyFile)! }),
    })
  })
}

/**
 * The environment for a program an agent runs (`exec`, `run`): without the database key, the
 * audit key's file or the sync token, which are for AgentFS, not for the agent.
 */
export function agentEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra }
  for (const name of [KEY_ENV, KEY_FILE_ENV, CIPHER_ENV, AUDIT_KEY_ENV, 'AGENTFS_SYNC_TOKEN'])
    delete env[name]
  return env
}
