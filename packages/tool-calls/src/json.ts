import { AgentFsError } from '@agentfs/core'

/** JSON text of a value for the audit log; throws INVALID_ARGUMENT when it cannot be JSON. */
export function toJson(value: unknown, what: string): string {
  let text: string | undefined
  try {
    text = JSON.stringify(value, (_key, item: unknown) => {
      if (typeof item === 'bigint') return item.toString()
      if (typeof item === 'number' && !Number.isFinite(item)) return String(item)
      return item
    })
  } catch (error) {
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `The ${what} of a tool call must be JSON-serialisable: ${(error as Error).message}`,
      {
        cause: error,
      },
    )
  }
  // A bare `undefined` (or a function) has no JSON form; record it as null.
  return text ?? 'null'
}

/** Like {@link toJson}, but never throws: what cannot be serialised is described instead. */
export function toJsonLenient(value: unknown, what: string): string {
  try {
    return toJson(value, what)
  } catch (error) {
    return JSON.stringify({ $unserializable: (error as Error).message })
  }
}

/** Parses stored JSON; text that is not JSON (another tool's rows) comes back as is. */
export function fromJson(text: string | null): unknown {
  if (text === null) return null
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** The message stored in `tool_calls.error`. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message || error.name
  if (typeof error === 'string') return error
  try {
    return JSON.stringify(error) ?? String(error)
  } catch {
    return String(error)
  }
}
