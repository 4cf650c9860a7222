import {
  AgentFsError,
  type ChunkFormat,
  type Executor,
  fsError,
  isAgentFsError,
  type Queryable,
} from '@agentfs/core'
import { readSettings } from '../fulltext/settings.js'
import {
  type DocTable,
  REGULAR,
  type Stale,
  staleFiles,
  textOrDamaged,
  VERSION_SQL,
} from '../fulltext/upkeep.js'
import { chunkText, type TextChunk } from './chunks.js'
import { checkEmbedder, type Embedder, embedAll, vectorBlob } from './embedder.js'

// Semantic search's vectors, kept off the write path: a pass reads the files whose vectors are
// missing or describe an older version (a read transaction), embeds their chunks with no
// transaction open (the model may be slow or remote), then stores the vectors of each file
// whose version has not moved meanwhile (a write transaction). What is left is the backlog.

/** Files one pass reads at most (their chunks are embedded before the next pass reads more). */
const PASS_FILES = 256
/** Bytes of text one pass reads at most. */
const PASS_BYTES = 8 << 20
/** Passes one update runs at most. */
const MAX_PASSES = 100_000
const NOT_TEXT = -1
const LEFT_OUT = -2

const docsOf = (model: string): DocTable => ({
  table: 'agentfs_embedding_doc',
  count: 'chunks',
  model,
})

/** What an update did. */
export interface EmbeddingUpdate {
  /** False when the database is read-only (nothing could be written). */
  readonly writable: boolean
  /** Files whose vectors were stored (or found not text, too large, or left out). */
  readonly files: number
  /** Chunks embedded. */
  readonly chunks: number
  /** Vectors of files that are gone, dropped. */
  readonly dropped: number
  /** Files still waiting (changed again meanwhile, or the limit or time ran out). */
  readonly backlog: number
}

interface Planned {
  readonly file: Stale
  /** The version read, as SQL's integer in text (ns since the epoch does not fit a double). */
  readonly version: string
  readonly chunks: readonly TextChunk[] | undefined
}

/**
 * Makes the vectors semantic search compares: embeds the chunks of every text file whose
 * vectors for `embedder.model` are missing or describe an older version, a pass at a time,
 * until none is left, `maxFiles` are done or `timeoutMs` (default 10 minutes) runs out. The
 * embedder is called with no transaction open; a file changed meanwhile is left for the next
 * pass. Files are chosen as the full-text index chooses them (its size limit and globs).
 *
 * @example
 * const { backlog } = await updateEmbeddings(agent.db, embedder, { maxFiles: 100 })
 */
export async function updateEmbeddings(
  db: Queryable & { readonly chunks: ChunkFormat },
  embedder: Embedder,
  options: { maxFiles?: number; timeoutMs?: number } = {},
): Promise<EmbeddingUpdate> {
  return embedPending(db, db.chunks, checkEmbedder(embedder), options)
}

/** {@link updateEmbeddings} on a queryable and a chunk size (a filesystem's). */
export async function embedPending(
  q: Queryable,
  format: ChunkFormat,
  embedder: Embedder,
  options: { maxFiles?: number; timeoutMs?: number } = {},
): Promise<EmbeddingUpdate> {
  const maxFiles = options.maxFiles ?? Number.POSITIVE_INFINITY
  const timeoutMs = options.timeoutMs ?? 600_000
  if (!(maxFiles > 0) || !(timeoutMs > 0))
    throw fsError('EINVAL', 'search', undefined, {
      hint: 'maxFiles and timeoutMs must be positive numbers',
    })
  const deadline = Date.now() + timeoutMs
  const docs = docsOf(embedder.model)
  let files = 0
  let chunks = 0
  let dropped = 0
  for (let pass = 0; pass < MAX_PASSES && files < maxFiles; pass++) {
    const { planned, gone } = await q.transaction(async (tx) => {
      const settings = await readSettings(tx)
      const found = await staleFiles(tx, settings, Math.min(PASS_FILES, maxFiles - files), docs)
      const planned: Planned[] = []
      let bytes = 0
      for (const file of found.stale) {
        if (bytes >= PASS_BYTES) break
        const version = await versionText(tx, file.ino)
        if (version === undefined) continue
        let text: string | undefined
        if (file.wanted && file.size <= settings.maxFileSize) {
          text = await textOrDamaged(tx, file.ino, file.size, format)
          bytes += file.size
        }
        planned.push({ file, version, chunks: text === undefined ? undefined : chunkText(text) })
      }
      return { planned, gone: found.gone }
    })
    if (planned.length === 0 && gone.length === 0) break
    const texts = planned.flatMap((p) => (p.chunks ?? []).map((c) => c.text))
    const vectors = await embedAll(embedder, texts)
    try {
      await q.transaction(async (tx) => {
        for (const ino of gone) {
          await tx.execute({
            sql: 'DELETE FROM agentfs_embedding WHERE ino = ? AND model = ?',
            params: [ino, embedder.model],
          })
          await tx.execute({
            sql: 'DELETE FROM agentfs_embedding_doc WHERE ino = ? AND model = ?',
            params: [ino, embedder.model],
          })
        }
        let at = 0
        for (const p of planned) {
          const mine = vectors.slice(at, at + (p.chunks?.length ?? 0))
          at += p.chunks?.length ?? 0
          // Changed since it was read: left for the next pass, never stored under a version
          // it does not describe.
          if ((await versionText(tx, p.file.ino)) !== p.version) continue
          await store(tx, embedder.model, p, mine)
          files++
          chunks += mine.length
        }
        dropped += gone.length
      })
    } catch (error) {
      if (isAgentFsError(error, 'READONLY'))
        return {
          writable: false,
          files,
          chunks,
          dropped,
          backlog: await embeddingBacklog(q, embedder.model),
        }
      throw error
    }
    if (Date.now() > deadline) break
  }
  return {
    writable: true,
    files,
    chunks,
    dropped,
    backlog: await embeddingBacklog(q, embedder.model),
  }
}

async function store(
  tx: Executor,
  model: string,
  p: Planned,
  vectors: readonly Float32Array[],
): Promise<void> {
  await tx.execute({
    sql: 'DELETE FROM agentfs_embedding WHERE ino = ? AND model = ?',
    params: [p.file.ino, model],
  })
  const count = p.chunks === undefined ? (p.file.wanted ? NOT_TEXT : LEFT_OUT) : vectors.length
  await tx.execute({
    sql: `INSERT INTO agentfs_embedding_doc (ino, model, version, chunks) VALUES (?, ?, CAST(? AS INTEGER), ?)
ON CONFLICT(ino, model) DO UPDATE SET version = excluded.version, chunks = excluded.chunks`,
    params: [p.file.ino, model, p.version, count],
  })
  for (let i = 0; i < vectors.length; i++) {
    const chunk = p.chunks![i]!
    await tx.execute({
      sql: 'INSERT INTO agentfs_embedding (ino, model, version, chunk, start_line, end_line, vector) VALUES (?, ?, CAST(? AS INTEGER), ?, ?, ?, ?)',
      params: [
        p.file.ino,
        model,
        p.version,
        i,
        chunk.startLine,
        chunk.endLine,
        vectorBlob(vectors[i]!),
      ],
    })
  }
}

/** A live regular file's version, as text; undefined when it is gone. */
async function versionText(q: Executor, ino: number): Promise<string | undefined> {
  const { rows } = await q.execute<{ v: string }>({
    sql: `SELECT CAST(${VERSION_SQL} AS TEXT) AS v FROM fs_inode i WHERE i.ino = ? AND ${REGULAR} AND i.nlink > 0`,
    params: [ino],
  })
  return rows[0] === undefined ? undefined : String(rows[0].v)
}

/** Files whose vectors for `model` are missing or describe an older version: the backlog. */
export async function embeddingBacklog(q: Executor, model: string): Promise<number> {
  const { rows } = await q.execute<{ n: number }>({
    sql: `SELECT count(*) AS n FROM fs_inode i LEFT JOIN agentfs_embedding_doc d ON d.ino = i.ino AND d.model = ?
WHERE ${REGULAR} AND i.nlink > 0 AND (d.ino IS NULL OR d.version != ${VERSION_SQL})`,
    params: [model],
  })
  return Number(rows[0]?.n ?? 0)
}

export const notConfigured = () =>
  new AgentFsError(
    'MISUSE',
    'semantic search needs an embedder: open with AgentFS.open({ embed: { model, dimensions, embed } }) (or createFileSystem(db, { embed }))',
  )
