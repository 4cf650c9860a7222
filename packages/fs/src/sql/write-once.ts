import { createHash } from 'node:crypto'
import { applyOnce, type Clock, micros, type Queryable } from '@agentfs/core'
import type { WriteFileOptions } from '../types.js'

/** `writeFile`/`appendFile` options without the idempotency key (what the keyed write runs). */
export type UnkeyedWriteOptions = Omit<WriteFileOptions, 'idempotencyKey' | 'idempotencyTtlMs'>

/**
 * A `writeFile` (`w`) or `appendFile` (`a`) carrying `idempotencyKey`, applied once: in one
 * transaction of `q`, the key is claimed, `apply` writes on the transaction, and the key's
 * record commits with the write. The arguments compared on a retry are the path as given, the
 * SHA-256 and size of the bytes, and the other options (the encoding is in the bytes already).
 */
export async function writeOnce(
  q: Queryable,
  clock: Clock,
  kind: 'w' | 'a',
  path: string,
  bytes: Uint8Array,
  options: WriteFileOptions,
  apply: (tx: Queryable, options: UnkeyedWriteOptions) => Promise<void>,
): Promise<void> {
  const { idempotencyKey, idempotencyTtlMs, ...rest } = options
  const { encoding: _, ...compared } = rest
  await applyOnce(
    q,
    {
      scope: kind === 'a' ? 'fs:appendFile' : 'fs:writeFile',
      key: idempotencyKey as string,
      args: {
        path,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        size: bytes.byteLength,
        ...compared,
      },
      nowUs: () => micros(clock.now()),
      ...(idempotencyTtlMs === undefined ? {} : { ttlMs: idempotencyTtlMs }),
    },
    (tx) => apply(tx, { ...compared }),
  )
}
