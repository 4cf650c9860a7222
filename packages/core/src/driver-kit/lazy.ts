import { realpathSync } from 'node:fs'
import { type Mutex, sharedMutex } from '../driver/mutex.js'
import { AgentFsError } from '../errors.js'
import type { SyncDriverOptions } from './kit-types.js'

/**
 * The options of a local driver built with the kit: a path it opens itself, or a database
 * opened by the caller. Give exactly one.
 */
export interface LocalDriverConfig<Database> extends SyncDriverOptions {
  /** A file path, or `:memory:`. The driver opens it on first use. */
  readonly path?: string
  /** An open database, or a (lazy) factory for one. The driver closes it on `close()`. */
  readonly database?: Database | (() => Database | Promise<Database>)
}

/**
 * Where a local driver's connection comes from: `config.database`, or `openPath(config.path)` on
 * first use. Refuses a config with both or neither; `memory` says whether the path is
 * `:memory:`.
 */
export function localSource<Database extends object>(
  driverName: string,
  config: LocalDriverConfig<Database>,
  openPath: (path: string) => Database | Promise<Database>,
): { open(): Promise<Database>; readonly reopenable: boolean; readonly memory: boolean } {
  if ((config.path === undefined) === (config.database === undefined))
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `${driverName} needs exactly one of \`path\` and \`database\``,
    )
  const given =
    config.database === undefined
      ? lazyConnection(() => openPath(config.path!))
      : lazyConnection(config.database)
  return { ...given, memory: config.path === ':memory:' || config.path === '' }
}

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

const NOTHING_HELD = { unlock(): void {} }

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

  /**
   * Takes the lock now if it is free, without waiting: what to unlock when done, or undefined
   * when another caller holds it. Before `attach` there is nothing to take (see the class).
   */
  tryHold(): { unlock(): void } | undefined {
    const lock = this.#lock
    if (lock === undefined) return NOTHING_HELD
    // The mutex itself is returned: a connection closed while holding it (a failed ROLLBACK
    // drops this lock's reference) still unlocks the one it took.
    return lock.mutex.tryLock() ? lock.mutex : undefined
  }

  get contended(): boolean {
    return this.#lock !== undefined && (this.#lock.shared || this.#lock.mutex.locked)
  }

  release(): void {
    this.#lock?.release()
    this.#lock = undefined
  }
}
