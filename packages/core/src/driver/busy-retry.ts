import { classifySqliteCode } from './map-error.js'

/** True for an engine error that means "locked by another connection, try again". */
export function isBusyError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const source = error as {
    code?: unknown
    rawCode?: unknown
    errcode?: unknown
    message?: unknown
  }
  // better-sqlite3 and libSQL say `code`/`rawCode`; node:sqlite says `errcode` (a number).
  if (classifySqliteCode(source.code, source.rawCode ?? source.errcode) === 'BUSY') return true
  return typeof source.message === 'string' && /database (table )?is locked/i.test(source.message)
}

/**
 * Runs `attempt` and retries it with async backoff while the engine reports BUSY, until
 * `timeoutMs` has passed; then the last error is thrown.
 *
 * Why not SQLite's own busy_timeout: it sleeps inside the call and so blocks the thread. With a
 * synchronous engine, a second connection in the same process would then block the very event
 * loop the lock holder needs to finish its transaction, a deadlock that only ends at the
 * timeout. Waiting asynchronously lets the holder run.
 */
export async function retryBusy<T>(attempt: () => T | Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let delay = 1
  for (;;) {
    try {
      return await attempt()
    } catch (error) {
      if (!isBusyError(error) || Date.now() >= deadline) throw error
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(delay, Math.max(1, deadline - Date.now()))),
      )
      delay = Math.min(delay * 2, 50)
    }
  }
}
