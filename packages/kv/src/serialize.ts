import { AgentFsError } from '@agentfs/core'

function rejection(path: string, what: string): AgentFsError {
  return new AgentFsError(
    'INVALID_ARGUMENT',
    `Cannot store ${what} at ${path}: values must be JSON (null, booleans, finite numbers, strings, arrays, plain objects); convert it first`,
  )
}

/** Deepest nesting accepted: deeper values overflow the stack of JSON.parse/stringify readers. */
export const MAX_DEPTH = 1000

function check(value: unknown, path: string, seen: Set<object>, depth = 0): void {
  switch (typeof value) {
    case 'undefined':
      throw rejection(path, 'undefined')
    case 'function':
      throw rejection(path, 'a function')
    case 'symbol':
      throw rejection(path, 'a symbol')
    case 'bigint':
      throw rejection(path, 'a bigint (store it as a string)')
    case 'number':
      if (!Number.isFinite(value)) throw rejection(path, String(value))
      return
    case 'object': {
      if (value === null) return
      if (seen.has(value)) throw rejection(path, 'a circular reference')
      if (depth >= MAX_DEPTH) throw rejection(path, `nesting deeper than ${MAX_DEPTH} levels`)
      if (value instanceof Map || value instanceof Set) {
        throw rejection(path, `a ${value.constructor.name} (use an object or array)`)
      }
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return
      seen.add(value)
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) check(value[i], `${path}[${i}]`, seen, depth + 1)
      } else {
        for (const [key, item] of Object.entries(value)) {
          if (item !== undefined) check(item, `${path}.${key}`, seen, depth + 1)
        }
      }
      seen.delete(value)
      return
    }
    default:
      return
  }
}

/**
 * Serialises a value to the JSON text stored in `kv_store.value`, refusing anything JSON would
 * drop or mangle (undefined, functions, symbols, bigints, NaN/Infinity, Maps, Sets, cycles).
 * `undefined` object properties are omitted, as in JSON.
 */
export function serialize(value: unknown): string {
  check(value, 'value', new Set())
  return JSON.stringify(value)
}

/** Parses a stored value; text that is not JSON (written by another tool) comes back as a string. */
export function deserialize<T>(text: string): T {
  try {
    return JSON.parse(text) as T
  } catch {
    return text as T
  }
}
