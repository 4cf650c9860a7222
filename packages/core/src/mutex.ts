/**
 * A FIFO async mutex. `run` calls `fn` at once when the lock is free (no extra tick), so the
 * uncontended path costs one flag check.
 */
export class Mutex {
  #locked = false
  readonly #waiters: Array<() => void> = []

  /** True while some caller holds the lock. */
  get locked(): boolean {
    return this.#locked
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#locked) await new Promise<void>((resolve) => this.#waiters.push(resolve))
    else this.#locked = true
    try {
      return await fn()
    } finally {
      const next = this.#waiters.shift()
      // Hand the lock straight to the next waiter: it never observes an unlocked state.
      if (next) next()
      else this.#locked = false
    }
  }
}
