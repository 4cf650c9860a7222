import { readFileSync, statSync } from 'node:fs'
import type { AuditKey } from '@agentfs/core'

/** The environment variable naming the key file every command seals the audit with. */
export const AUDIT_KEY_ENV = 'AGENTFS_AUDIT_KEY_FILE'

/**
 * Reads an audit key from a file: 32 or more hex digits (as `openssl rand -hex 32` prints), or
 * else the file's raw bytes (at most 4 KiB).
 */
export function readAuditKey(file: string): AuditKey {
  let size: number
  try {
    size = statSync(file).size
  } catch {
    throw new Error(
      `the key file ${file} cannot be read; create one with: openssl rand -hex 32 > ${file}`,
    )
  }
  if (size > 4096)
    throw new Error(`the key file ${file} has ${size} bytes; a key file holds at most 4096`)
  const bytes = readFileSync(file)
  const text = bytes.toString('utf8').trim()
  if (/^(?:[0-9a-fA-F]{2}){16,}$/.test(text)) return { key: Buffer.from(text, 'hex') }
  return { key: new Uint8Array(bytes) }
}

/** The audit options of commands: sealed at close with the key `$AGENTFS_AUDIT_KEY_FILE` names, if any. */
export function auditFromEnv(): { key?: AuditKey; sealOnClose: boolean } {
  const file = process.env[AUDIT_KEY_ENV]
  // Without a key the CLI leaves sealing to `verify --seal`: sealing unkeyed a chain the user
  // keys elsewhere would make those rows unprovable.
  if (file === undefined || file === '') return { sealOnClose: false }
  return { key: readAuditKey(file), sealOnClose: true }
}
