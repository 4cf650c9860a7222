import { AgentFsError } from '@agentfs/core'

/**
 * The engine (0.7.2) copies a typed-array parameter into a BLOB one element at a time (about
 * 0.35 ms for 4 KiB); the same bytes as hex text through `unhex(?)` bind 3–4× faster. BLOB
 * parameters at least this long take that route.
 */
export const HEX_BLOB_MIN_BYTES = 512

/**
 * Offsets of the positional `?` parameters of `sql`, skipping string literals, quoted names
 * and comments; undefined when the statement numbers or names its parameters (`?1`, `:a`, `@a`,
 * `$a`), which this rewrite leaves alone.
 */
export function placeholderOffsets(sql: string): number[] | undefined {
  const offsets: number[] = []
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i]!
    if (c === "'" || c === '"' || c === '`' || c === '[') {
      const close = c === '[' ? ']' : c
      i = sql.indexOf(close, i + 1)
      if (i === -1) return undefined
    } else if (c === '-' && sql[i + 1] === '-') {
      i = sql.indexOf('\n', i)
      if (i === -1) break
    } else if (c === '/' && sql[i + 1] === '*') {
      i = sql.indexOf('*/', i + 2)
      if (i === -1) return undefined
      i++
    } else if (c === '?') {
      if (/[0-9]/.test(sql[i + 1] ?? '')) return undefined
      offsets.push(i)
    } else if ((c === ':' || c === '@' || c === '$') && /[A-Za-z_]/.test(sql[i + 1] ?? '')) {
      return undefined
    }
  }
  return offsets
}

/** `sql` with the placeholders at the given parameter indexes wrapped in `unhex(…)`. */
export function withHexPlaceholders(
  sql: string,
  offsets: readonly number[],
  indexes: readonly number[],
): string {
  let out = ''
  let from = 0
  for (const index of indexes) {
    const at = offsets[index]!
    out += `${sql.slice(from, at)}unhex(?)`
    from = at + 1
  }
  return out + sql.slice(from)
}

/** Indexes of the parameters worth binding as hex (long byte arrays). */
export function longBlobs(params: readonly unknown[]): number[] {
  const indexes: number[] = []
  for (let i = 0; i < params.length; i++) {
    const value = params[i]
    if (value instanceof Uint8Array && value.byteLength >= HEX_BLOB_MIN_BYTES) indexes.push(i)
  }
  return indexes
}

/** The parameters with the given byte arrays as hex text. */
export function hexParams(params: readonly unknown[], indexes: readonly number[]): unknown[] {
  const out = params.slice()
  for (const i of indexes) {
    const bytes = params[i] as Uint8Array
    out[i] = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')
  }
  return out
}

/** Hex-binding variants kept per statement (one per pattern of long BLOB parameters). */
const MAX_VARIANTS = 8

/**
 * The hex-binding variants of one statement: for a call's parameters, which variant it needs
 * (`plan`), the variant when already prepared (`get`), and a place to keep a new one (`keep`,
 * closing the oldest past {@link MAX_VARIANTS}). Shared by the synchronous and promise drivers,
 * which differ only in how they prepare.
 */
export class HexVariants<S extends { close(): void }> {
  readonly #sql: string
  readonly #offsets: number[] | undefined
  readonly #variants = new Map<string, S>()

  constructor(sql: string) {
    this.#sql = sql
    this.#offsets = placeholderOffsets(sql)
  }

  /**
   * Which long BLOBs of `params` go as hex, or undefined when the plain statement serves. The
   * engine binds a missing parameter as NULL and ignores an extra one, silently: a count that
   * does not match the statement's `?` placeholders is refused (`MISUSE`) before it runs.
   */
  plan(params: readonly unknown[]): { key: string; blobs: number[] } | undefined {
    if (this.#offsets === undefined) return undefined
    if (this.#offsets.length !== params.length)
      throw new AgentFsError(
        'MISUSE',
        `"${this.#sql.slice(0, 80)}" takes ${this.#offsets.length} parameter${this.#offsets.length === 1 ? '' : 's'}, got ${params.length}; pass one value per ?`,
      )
    const blobs = longBlobs(params)
    return blobs.length === 0 ? undefined : { key: blobs.join(','), blobs }
  }

  /** The statement's SQL with those parameters' placeholders as `unhex(?)`. */
  sqlFor(blobs: readonly number[]): string {
    return withHexPlaceholders(this.#sql, this.#offsets!, blobs)
  }

  get(key: string): S | undefined {
    return this.#variants.get(key)
  }

  keep(key: string, variant: S): S {
    if (this.#variants.size >= MAX_VARIANTS) {
      const [oldest, first] = this.#variants.entries().next().value as [string, S]
      this.#variants.delete(oldest)
      first.close()
    }
    this.#variants.set(key, variant)
    return variant
  }

  close(): void {
    for (const variant of this.#variants.values()) variant.close()
    this.#variants.clear()
  }
}
