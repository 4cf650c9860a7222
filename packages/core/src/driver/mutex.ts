import { AgentFsError } from '../errors.js'

interface Waiter {
  resolve(): void
  reject(error: unknown): void
}

/**
 * A FIFO async mutex. `run` calls `fn` at once when the lock is free (no extra tick), so the
 * uncontended path costs one flag check.
 */
export class Mutex {
  #locked = false
  readonly #waiters: Waiter[] = []

  /** True while some caller holds the lock. */
  get locked(): boolean {
    return this.#locked
  }

  /** Takes the lock if it is free (no waiting); pair with {@link unlock}. */
  tryLock(): boolean {
    if (this.#locked) return false
    this.#locked = true
    return true
  }

  /** Releases a lock taken with {@link tryLock}, handing it to the next waiter. */
  unlock(): void {
    const next = this.#waiters.shift()
    if (next) next.resolve()
    else this.#locked = false
  }

  /**
   * Runs `fn` while holding the lock. With `timeoutMs`, gives up waiting after that long and
   * rejects with a `BUSY` error (`fn` is then never called).
   */
  async run<T>(fn: () => Promise<T>, timeoutMs?: number): Promise<T> {
    if (this.#locked) await this.#wait(timeoutMs)
    else this.#locked = true
    try {
      return await fn()
    } finally {
      const next = this.#waiters.shift()
      // Hand the lock straight to the next waiter: it never observes an unlocked state.
      if (next) next.resolve()
      else this.#locked = false
    }
  }

  #wait(timeoutMs: number | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject }
      this.#waiters.push(waiter)
      if (timeoutMs === undefined) return
      const timer = setTimeout(() => {
        const index = this.#waiters.indexOf(waiter)
        if (index === -1) return
        this.#waiters.splice(index, 1)
        reject(
          new AgentFsError(
            'BUSY',
            `Another connection in this process held the database's write lock for over ${timeoutMs} ms; retry, or raise the busy timeout`,
          ),
        )
      }, timeoutMs)
      waiter.resolve = () => {
        clearTimeout(timer)
        resolve()
      }
    })
  }
}

const shared = new Map<string, { mutex: Mutex; refs: number }>()

/**
 * A mutex shared by every connection of this process to one database file (keyed by its real
 * path). Synchronous engines use it so that two connections in one process never contend
 * inside SQLite, where waiting blocks the thread the lock holder needs. Call the returned
 * `release` when the connection closes.
 */
export function sharedMutex(key: string): {
  mutex: Mutex
  readonly shared: boolean
  release(): void
} {
  let entry = shared.get(key)
  if (!entry) {
    entry = { mutex: new Mutex(), refs: 0 }
    shared.set(key, entry)
  }
  entry.refs++
  let released = false
  const current = entry
  return {
    mutex: entry.mutex,
    /** True while another connection of this process uses the same file. */
    get shared() {
      return current.refs > 1
    },
    release() {
      if (released) return
      released = true
      current.refs--
      if (current.refs === 0 && shared.get(key) === current) shared.delete(key)
    },
  }
}
