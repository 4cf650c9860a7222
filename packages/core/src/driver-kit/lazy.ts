import { realpathSync } from 'node:fs'
import { type Mutex, sharedMutex } from '../mutex.js'

/**
 * A connection a driver was given: an open one, or a (lazy) factory. `open` returns it on first
 * use; `reopenable` says whether a connection the driver had to close (after a failed
 * ROLLBACK) can be replaced by calling the factory again.
 */
export function lazyConnection<T extends object>(
  given: T | (() => T | Promise<T>),
): { open(): Promise<T>; readonly reopenable: boolean } {
  const reopenable = typeof given === 'function'
  return {
    reopenable,
    open: async () => (reopenable ? await (given as () => T | Promise<T>)() : (given as T)),
  }
}

/**
 * The lock of one database file, shared by every connection of this process to it (see
 * `sharedMutex`): transactions and scripts run `exclusive`ly; a single statement takes the fast
 * path unless another connection of this process uses the file (`contended`). Before `attach`
 * (memory and remote databases) nothing waits.
 */
export class FileLock {
  #lock: { mutex: Mutex; readonly shared: boolean; release(): void } | undefined
  readonly #timeoutMs: number

  constructor(timeoutMs: number) {
    this.#timeoutMs = timeoutMs
  }

  /** Joins the lock of `file` (resolved through links, so two spellings share one lock). */
  attach(file: string): void {
    this.#lock?.release()
    this.#lock = sharedMutex(realpathSync(file))
  }

  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.#lock ? this.#lock.mutex.run(fn, this.#timeoutMs) : fn()
  }

  get contended(): boolean {
    return this.#lock !== undefined && (this.#lock.shared || this.#lock.mutex.locked)
  }

  release(): void {
    this.#lock?.release()
    this.#lock = undefined
  }
}
