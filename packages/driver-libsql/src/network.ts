/** Error codes of a failed transport (Node's sockets, undici's fetch): the server may be fine. */
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
])

/**
 * True when the request failed in transport (connection refused or reset, a timeout, `fetch
 * failed`): it may not have reached the server, or its answer was lost on the way back.
 */
export function isNetworkError(error: unknown): boolean {
  let current: unknown = error
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return true
    if (current instanceof TypeError && current.message === 'fetch failed') return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}

const READS = /^\s*(SELECT|WITH|VALUES)\b/i
/** Any of these anywhere (even in a string literal) makes the statement count as a write. */
const WRITES =
  /\b(INSERT|UPDATE|DELETE|REPLACE|UPSERT|CREATE|DROP|ALTER|ATTACH|DETACH|PRAGMA|VACUUM|REINDEX|ANALYZE|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/i

/**
 * True when running the statement twice is the same as once: a plain read. Conservative: a
 * statement that names a writing keyword anywhere is not.
 */
export function isIdempotentRead(sql: string): boolean {
  return READS.test(sql) && !WRITES.test(sql)
}

/** Waits before each retry of a read after a transport failure: about 0.75 s in all. */
export const NETWORK_RETRY_DELAYS_MS: readonly number[] = [50, 200, 500]

/**
 * Runs `attempt`; after a transport failure, and only when `retry` allows it, waits and tries
 * again, up to the given delays.
 */
export async function retryNetwork<T>(
  attempt: () => Promise<T>,
  retry: boolean,
  delays: readonly number[] = NETWORK_RETRY_DELAYS_MS,
): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await attempt()
    } catch (error) {
      if (!retry || i >= delays.length || !isNetworkError(error)) throw error
      await new Promise((resolve) => setTimeout(resolve, delays[i]))
    }
  }
}
