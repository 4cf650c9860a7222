import { AgentFsError } from '../errors.js'
import { type AuditKey, checkAuditKey } from './audit-chain.js'

/**
 * The integrity keys of a database connection: the HMAC-SHA256 keys its idempotency records are
 * sealed with (the first seals, every one is accepted when checking, so keys can rotate). They
 * are never stored in the database; they belong to the connection (the engine's driver), so
 * every handle on it — the database, a group-commit wrapper, any transaction or savepoint —
 * finds them without each store being told.
 */

/** A key as checked: its bytes and its id. */
export interface IntegrityKey {
  readonly key: Uint8Array
  readonly id: string
}

const KEYS = new WeakMap<object, readonly IntegrityKey[]>()
/**
 * The connection a transaction handle belongs to: a property under this symbol, which a
 * transaction handle declares (not a weak map: one per transaction, on the write path).
 */
export const REALM: unique symbol = Symbol('agentfs.realm')
type Carrier = { [REALM]?: object | undefined }
/** `.driver` links followed from a handle to its engine's driver at most. */
const MAX_LINKS = 4

/** Records that `handle` (a transaction or savepoint) runs on `connection`. */
export function joinRealm(handle: object, connection: object): void {
  ;(handle as Carrier)[REALM] = (connection as Carrier)[REALM] ?? connection
}

/** The engine's driver under `db` (a database, a guarded driver, a wrapper, a transaction). */
function connectionOf(db: object): object {
  let at: object = (db as Carrier)[REALM] ?? db
  for (let i = 0; i < MAX_LINKS; i++) {
    const next = (at as { driver?: unknown }).driver
    if (next === null || typeof next !== 'object') break
    at = next
  }
  return at
}

/**
 * Gives the connection under `db` its integrity keys (the first seals new records; all are
 * accepted). An empty list removes them. Throws on a key under 16 bytes or a bad id.
 */
export function setIntegrityKeys(db: object, keys: readonly AuditKey[]): void {
  const checked = keys.map(checkAuditKey)
  const ids = new Set(checked.map((k) => k.id))
  if (ids.size !== checked.length)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'two integrity keys have the same id; give each key its own id (or let it be derived from the key)',
    )
  if (checked.length === 0) KEYS.delete(connectionOf(db))
  else KEYS.set(connectionOf(db), checked)
}

/** The integrity keys of the connection `db` runs on (empty when it has none). */
export function integrityKeysOf(db: object): readonly IntegrityKey[] {
  return KEYS.get(connectionOf(db)) ?? []
}
