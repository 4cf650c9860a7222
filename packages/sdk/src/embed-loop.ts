import type { ChunkFormat, Queryable } from '@agentfs/core'
import { type Embedder, updateEmbeddings } from '@agentfs/fs'

/** Files one background pass embeds at most before it yields to the next tick. */
const TICK_FILES = 256
/** The longest wait between passes after failures (the wait doubles from the interval). */
const MAX_BACKOFF_MS = 60_000
/** How long `stop` waits for a running pass. */
const STOP_WAIT_MS = 1000

/**
 * Makes the vectors of semantic search in the background: every `intervalMs`, when files may
 * have changed (the change feed moved, or the last pass left a backlog), a pass of
 * `updateEmbeddings`. A failing model is reported once per message and retried with a doubling
 * wait; the writes of the agent never wait for it.
 */
export class EmbedLoop {
  readonly #db: Queryable & { readonly chunks: ChunkFormat }
  readonly #embedder: Embedder
  readonly #intervalMs: number
  readonly #warn: (message: string) => void
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  #stopped = false
  #delay: number
  /** The change feed's last id when a pass left nothing behind. */
  #settled: string | undefined
  #lastWarning: string | undefined
  readonly #feed: boolean

  constructor(
    db: Queryable & { readonly chunks: ChunkFormat },
    embedder: Embedder,
    intervalMs: number,
    warn: (message: string) => void,
    feed: boolean,
  ) {
    this.#feed = feed
    this.#db = db
    this.#embedder = embedder
    this.#intervalMs = intervalMs
    this.#delay = intervalMs
    this.#warn = warn
    this.#schedule()
  }

  #schedule(): void {
    if (this.#stopped) return
    this.#timer = setTimeout(() => {
      this.#running = this.#tick().finally(() => {
        this.#running = undefined
        this.#schedule()
      })
    }, this.#delay)
    // A process with nothing else to do exits: the backlog waits for the next open.
    this.#timer.unref()
  }

  async #tick(): Promise<void> {
    try {
      const mark = await this.#mark()
      if (mark !== undefined && mark === this.#settled) return
      const done = await updateEmbeddings(this.#db, this.#embedder, {
        maxFiles: TICK_FILES,
        timeoutMs: 60_000,
      })
      this.#settled = done.backlog === 0 && done.writable ? mark : undefined
      this.#delay = this.#intervalMs
      this.#lastWarning = undefined
    } catch (error) {
      if (this.#stopped) return
      const message = `semantic search: making vectors with ${this.#embedder.model} failed (${error instanceof Error ? error.message : String(error)}); retrying in ${Math.min(this.#delay * 2, MAX_BACKOFF_MS)} ms`
      const text = message.replace(/retrying in \d+ ms/, '')
      if (text !== this.#lastWarning) this.#warn(message)
      this.#lastWarning = text
      this.#delay = Math.min(this.#delay * 2, MAX_BACKOFF_MS)
    }
  }

  /** The change feed's last id (files changed since if it moved); undefined without a feed. */
  async #mark(): Promise<string | undefined> {
    if (!this.#feed) return undefined
    const { rows } = await this.#db.execute<{ id: number | null }>({
      sql: 'SELECT max(seq) AS id FROM agentfs_change',
    })
    const id = rows[0]?.id
    return id === null || id === undefined ? undefined : String(id)
  }

  /**
   * Stops the loop. A pass that is running gets up to a second to finish; one still waiting for
   * the model then is abandoned (its writes fail on the closed database and are dropped).
   */
  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    if (this.#running === undefined) return
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      this.#running,
      new Promise<void>((done) => {
        timer = setTimeout(done, STOP_WAIT_MS)
      }),
    ])
    clearTimeout(timer)
  }
}
