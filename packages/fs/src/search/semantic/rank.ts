import type { Executor, Queryable } from '@agentfs/core'
import { VERSION_SQL } from '../fulltext/upkeep.js'
import { probed } from '../probe.js'
import { cosine, norm, readVector } from './embedder.js'

/** A file's best chunk for a query. */
export interface SemanticCandidate {
  readonly ino: number
  /** Cosine similarity of its best chunk, -1 to 1 (larger is closer). */
  readonly score: number
  readonly startLine: number
  readonly endLine: number
}

/** Chunk vectors one search compares at most (the rest are not looked at). */
export const MAX_VECTORS = 1_000_000
/** Rows read per statement by the JavaScript ranking. */
const PAGE = 1000

/** Rows that count: the current model's vectors of each live file's current version. */
const CURRENT = `FROM agentfs_embedding e
JOIN agentfs_embedding_doc d ON d.ino = e.ino AND d.model = e.model AND d.version = e.version
JOIN fs_inode i ON i.ino = e.ino AND i.nlink > 0 AND d.version = ${VERSION_SQL}
WHERE e.model = ?`

const vectorSupport = new WeakMap<object, boolean>()

/**
 * Whether the engine has libSQL's vector functions: as its driver says, else asked once per
 * database handle `q` (on `tx`, the transaction running: a single connection is busy with it).
 */
function hasVectors(q: Queryable, tx: Executor): Promise<boolean> {
  return probed(vectorSupport, q, q.capabilities?.vectors, async () => {
    const { rows } = await tx.execute<{ d: number }>({
      sql: "SELECT vector_distance_cos(vector32('[1,0]'), vector32('[1,0]')) AS d",
    })
    return rows.length === 1 && Number(rows[0]!.d) === 0
  })
}

/**
 * Files ranked by the cosine similarity of their best chunk to `query`, best first (ties by
 * inode), at most `limit`. In SQL where the engine has vector functions, else in JavaScript over
 * at most {@link MAX_VECTORS} vectors, with the same results. Rows that are not a vector of the
 * model's dimensions, and zero vectors, are left out.
 */
export async function rankSemantic(
  q: Queryable,
  tx: Executor,
  model: string,
  query: Float32Array,
  limit: number,
  deadline: number,
  timedOut: () => Error,
): Promise<SemanticCandidate[]> {
  const queryNorm = norm(query)
  if (queryNorm === 0) return []
  const best = new Map<number, SemanticCandidate>()
  const offer = (c: SemanticCandidate) => {
    const had = best.get(c.ino)
    if (had === undefined || c.score > had.score) best.set(c.ino, c)
  }
  if (await hasVectors(q, tx)) {
    const text = `[${Array.from(query).join(',')}]`
    // Each file's best chunk (SQLite's min() takes the other columns from the row it picks),
    // best files first: one statement, each distance computed once.
    const { rows } = await tx.execute<{
      ino: number
      start_line: number
      end_line: number
      distance: number
    }>({
      sql: `SELECT ino, start_line, end_line, min(distance) AS distance FROM (
SELECT e.ino AS ino, e.chunk AS chunk, e.start_line AS start_line, e.end_line AS end_line, vector_distance_cos(vector32(e.vector), vector32(?)) AS distance
${CURRENT} AND length(e.vector) = ? LIMIT ${MAX_VECTORS}
) WHERE distance IS NOT NULL GROUP BY ino ORDER BY distance, ino LIMIT ?`,
      params: [text, model, query.length * 4, limit],
    })
    for (const r of rows)
      offer({
        ino: Number(r.ino),
        score: 1 - Number(r.distance),
        startLine: Number(r.start_line),
        endLine: Number(r.end_line),
      })
    if (Date.now() > deadline) throw timedOut()
  } else {
    let after: [number, number] = [-1, -1]
    for (let seen = 0; seen < MAX_VECTORS; ) {
      const { rows } = await tx.execute<{
        ino: number
        chunk: number
        start_line: number
        end_line: number
        vector: Uint8Array
      }>({
        sql: `SELECT e.ino AS ino, e.chunk AS chunk, e.start_line AS start_line, e.end_line AS end_line, e.vector AS vector
${CURRENT} AND (e.ino > ? OR (e.ino = ? AND e.chunk > ?)) ORDER BY e.ino, e.chunk LIMIT ?`,
        params: [model, after[0], after[0], after[1], PAGE],
      })
      for (const r of rows) {
        const vector = readVector(r.vector, query.length)
        const score = vector && cosine(query, queryNorm, vector)
        if (score !== undefined)
          offer({
            ino: Number(r.ino),
            score,
            startLine: Number(r.start_line),
            endLine: Number(r.end_line),
          })
      }
      seen += rows.length
      if (rows.length < PAGE) break
      const last = rows.at(-1)!
      after = [Number(last.ino), Number(last.chunk)]
      if (Date.now() > deadline) throw timedOut()
    }
  }
  return [...best.values()].sort((a, b) => b.score - a.score || a.ino - b.ino).slice(0, limit)
}
