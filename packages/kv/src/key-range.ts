const encoder = new TextEncoder()

/**
 * The exclusive upper bound of all keys starting with `prefix`, as the UTF-8 bytes SQLite's
 * BINARY collation compares: the prefix with its last byte incremented (0xFF bytes, which UTF-8
 * never contains, are dropped first). Undefined means "no upper bound".
 */
export function prefixUpperBound(prefix: string): Uint8Array | undefined {
  const bytes = encoder.encode(prefix)
  let end = bytes.length
  while (end > 0 && bytes[end - 1] === 0xff) end--
  if (end === 0) return undefined
  const bound = bytes.slice(0, end)
  bound[end - 1]! += 1
  return bound
}

/**
 * SQL conditions (to AND together) and their parameters selecting the keys in `column` that
 * start with `prefix`, as a range on the primary key: `column >= prefix AND column < upper`.
 * No conditions for the empty prefix.
 */
export function prefixConditions(
  column: string,
  prefix: string,
): { where: string[]; params: Array<string | Uint8Array> } {
  if (!prefix) return { where: [], params: [] }
  const where = [`${column} >= ?`]
  const params: Array<string | Uint8Array> = [prefix]
  const upper = prefixUpperBound(prefix)
  if (upper) {
    where.push(`${column} < CAST(? AS TEXT)`)
    params.push(upper)
  }
  return { where, params }
}
