import { freeOrphans, ORPHAN_RENEW_MS, type Queryable, renewOrphans } from '@agentfs/core'

/**
 * The inodes this process holds open (one count per open handle) over one database, and which
 * of them lost their last link while open: an unlinked file stays readable and writable
 * through its open handles, as POSIX keeps it, and is freed when the last one closes.
 * Handles of every filesystem made over the same database object share one registry. While it
 * keeps orphans, their records are renewed every {@link ORPHAN_RENEW_MS}, so that a process on
 * another machine sharing the database does not take them for abandoned.
 */
export class Holds {
  readonly #db: Queryable
  readonly #open = new Map<number, number>()
  /** Held inodes an unlink may have kept (checked again in the database when freed). */
  readonly #orphans = new Set<number>()
  /** Orphans whose last handle closed, freed together in the next turn of the event loop. */
  #pending: number[] = []
  #batch: Promise<void> | undefined
  /** Renews the orphans' records while there are any (it keeps no process alive). */
  #renewal: NodeJS.Timeout | undefined

  constructor(db: Queryable) {
    this.#db = db
  }

  /** Whether a handle of this process holds `ino` open. */
  held(ino: number): boolean {
    return this.#open.has(ino)
  }

  hold(ino: number): void {
    this.#open.set(ino, (this.#open.get(ino) ?? 0) + 1)
  }

  /** An unlink kept `ino` (its transaction may yet roll back: the database decides later). */
  kept(ino: number): void {
    this.#orphans.add(ino)
    this.#renewal ??= setInterval(() => {
      // A database closed or busy meanwhile: the next renewal tries again, well within the lease.
      renewOrphans(this.#db, [...this.#orphans]).catch(() => undefined)
    }, ORPHAN_RENEW_MS).unref()
  }

  /**
   * One handle of `ino` closed. When it was the last of an inode an unlink kept, frees it; the
   * inodes whose last handles close in one turn of the event loop (a mount's batch of forgets)
   * are freed in one transaction, which this waits for.
   */
  release(ino: number): Promise<void> {
    const count = (this.#open.get(ino) ?? 0) - 1
    if (count > 0) {
      this.#open.set(ino, count)
      return DONE
    }
    this.#open.delete(ino)
    if (!this.#orphans.delete(ino)) return DONE
    return this.#free(ino)
  }

  /** Frees orphan `ino` with the others whose last handles close in this turn (see {@link release}). */
  async #free(ino: number): Promise<void> {
    if (this.#orphans.size === 0) {
      clearInterval(this.#renewal)
      this.#renewal = undefined
    }
    this.#pending.push(ino)
    this.#batch ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      const inos = this.#pending
      this.#pending = []
      this.#batch = undefined
      return this.#db.transaction(async (tx) => {
        await freeOrphans(tx, inos)
      })
    })
    await this.#batch
  }
}

/** The answer of a release that frees nothing (settled; `await` adds no turn of its own). */
const DONE: Promise<void> = Promise.resolve()

const registries = new WeakMap<Queryable, Holds>()

/** The registry of open inodes over database `db`. */
export function holdsOf(db: Queryable): Holds {
  let holds = registries.get(db)
  if (holds === undefined) {
    holds = new Holds(db)
    registries.set(db, holds)
  }
  return holds
}
