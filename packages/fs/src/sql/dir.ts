import type { Queryable } from '@agentfs/core'
import { checkedName } from '../search/walk.js'
import { Dirent } from '../stats.js'

/**
 * A directory being read, shaped like Node's `fs.Dir`: entries come `bufferSize` at a time by
 * a keyset query (name order), so a directory of any size is never loaded at once.
 */
export class Dir {
  readonly path: string
  readonly #q: Queryable
  readonly #ino: number
  readonly #bufferSize: number
  readonly #filter: ((name: string) => boolean) | undefined
  #buffer: Dirent[] = []
  #after: string | undefined
  #done = false
  #closed = false

  /** @internal Use `fs.opendir()`. */
  constructor(
    q: Queryable,
    ino: number,
    path: string,
    bufferSize: number,
    filter?: (name: string) => boolean,
  ) {
    this.#filter = filter
    this.#q = q
    this.#ino = ino
    this.path = path
    this.#bufferSize = bufferSize
  }

  /** The next entry, or null at the end. */
  async read(): Promise<Dirent | null> {
    if (this.#closed) throw dirClosedError()
    while (this.#buffer.length === 0 && !this.#done) await this.#fill()
    return this.#buffer.shift() ?? null
  }

  async #fill(): Promise<void> {
    const { rows } = await this.#q.execute<{ name: string; mode: number }>({
      // Values bound through subqueries (ARCHITECTURE.md, "Statement shapes").
      sql: `SELECT d.name AS name, i.mode AS mode FROM fs_dentry d JOIN fs_inode i ON i.ino = d.ino
WHERE d.parent_ino = (SELECT ?) AND d.name > (SELECT ?) ORDER BY d.name LIMIT (SELECT ?)`,
      params: [this.#ino, this.#after ?? '', this.#bufferSize],
    })
    if (rows.length < this.#bufferSize) this.#done = true
    const last = rows.at(-1)
    if (last) this.#after = last.name
    const filter = this.#filter
    this.#buffer = rows
      .filter((r) => !filter || filter(r.name))
      .map(
        (r) => new Dirent(checkedName(r.name, this.#ino, this.path, 'opendir'), this.path, r.mode),
      )
  }

  /** Closes the handle; like Node, closing it again rejects with `ERR_DIR_CLOSED`. */
  async close(): Promise<void> {
    if (this.#closed) throw dirClosedError()
    this.#closed = true
  }

  async *[Symbol.asyncIterator](): AsyncIterableIterator<Dirent> {
    try {
      for (;;) {
        const entry = await this.read()
        if (!entry) return
        yield entry
      }
    } finally {
      // Iterating to the end (or breaking out) closes the handle, as in Node.
      this.#closed = true
    }
  }
}

/** Node's error for a directory handle used after `close()` (`read`, a second `close`). */
export function dirClosedError(): Error & { code: 'ERR_DIR_CLOSED' } {
  return Object.assign(new Error('Directory handle was closed'), {
    code: 'ERR_DIR_CLOSED' as const,
  })
}
