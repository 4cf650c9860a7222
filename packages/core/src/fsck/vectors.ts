import type { Queryable } from '../driver/guard-driver.js'
import { S_IFMT, S_IFREG } from '../schema/schema.js'
import type { Check, FindRow } from './check.js'

/** Findings the rule reports at most (the repair drops every broken file's rows anyway). */
const MAX_FINDINGS = 100
/** Files whose vectors are read per statement while checking their numbers. */
const PAGE = 50
/** Lengths of one model's vectors looked at, at most (an embedder gives them all one). */
const LENGTHS = 10_000

/** One file's vectors under one model that cannot be what they claim. */
interface Broken {
  readonly ino: number
  readonly model: string
  readonly why: string
}

/** The doc rows the rule looks at: those of regular files (others' rows go at the next update). */
const LIVE_DOCS = `FROM agentfs_embedding_doc d JOIN fs_inode i ON i.ino = d.ino AND (i.mode & ${S_IFMT}) = ${S_IFREG}`

/**
 * What the semantic index (`agentfs_embedding_doc`, `agentfs_embedding`) holds for a regular
 * file that cannot be right, model by model, for the version its doc row names: chunk rows
 * other than `0 … chunks - 1` (missing, repeated, or any for a file recorded as not embedded),
 * impossible line spans, a chunk count no update writes, and vectors that are not the model's
 * length of finite float32 numbers. Search already leaves such rows out; this says they are
 * there, and the repair drops the file's rows under that model (they are derived: the next
 * update makes them again). Rows of deleted files and of versions no doc row names are not
 * findings: the next update drops them.
 */
async function broken(q: Queryable, most: number): Promise<Broken[]> {
  // SQLite's LIMIT -1: no limit.
  const limit = Number.isFinite(most) ? most : -1
  const found: Broken[] = []
  const seen = new Set<string>()
  const add = (rows: readonly { ino: unknown; model: unknown }[], why: string) => {
    for (const r of rows) {
      const key = `${r.ino}\n${r.model}`
      if (found.length >= most || seen.has(key)) continue
      seen.add(key)
      found.push({ ino: Number(r.ino), model: String(r.model), why })
    }
  }
  // The doc's version: exactly chunks 0 … chunks - 1 (none when chunks is -1, not text, or -2,
  // left out by the settings), each spanning lines forward from 1.
  const chunks = await q.execute<{ ino: number; model: string }>({
    sql: `SELECT d.ino AS ino, d.model AS model ${LIVE_DOCS}
LEFT JOIN agentfs_embedding e ON e.ino = d.ino AND e.model = d.model AND e.version = d.version
GROUP BY d.ino, d.model
HAVING typeof(d.chunks) != 'integer' OR d.chunks < -2 OR count(e.chunk) != max(d.chunks, 0)
  OR count(DISTINCT e.chunk) != count(e.chunk) OR min(e.chunk) < 0 OR max(e.chunk) >= d.chunks
  OR sum(e.chunk IS NOT NULL AND (typeof(e.start_line) != 'integer' OR typeof(e.end_line) != 'integer' OR e.start_line < 1 OR e.end_line < e.start_line)) > 0
ORDER BY d.ino, d.model LIMIT ${limit}`,
  })
  add(chunks.rows, 'its chunk rows are not those its record counts, or span impossible lines')
  if (found.length >= most) return found
  // Each model's length: the one most of its vectors have (an embedder gives all the same);
  // then each vector of that length read for numbers that are not finite.
  const counted = await q.execute<{ model: string; len: number | null; n: number }>({
    sql: `SELECT e.model AS model, length(e.vector) AS len, count(*) AS n ${LIVE_DOCS}
JOIN agentfs_embedding e ON e.ino = d.ino AND e.model = d.model AND e.version = d.version
GROUP BY e.model, len LIMIT ${LENGTHS}`,
  })
  // Of the lengths a vector can have (whole float32s), the most common; none: every vector of
  // the model is broken.
  const modelLength = new Map<string, { len: number; n: number }>()
  for (const r of counted.rows) {
    const len = Number(r.len ?? 0)
    const n = Number(r.n)
    const had = modelLength.get(r.model)
    const whole = len > 0 && len % 4 === 0
    if (had === undefined) modelLength.set(r.model, whole ? { len, n } : { len: 0, n: 0 })
    else if (whole && (n > had.n || (n === had.n && len > had.len)))
      modelLength.set(r.model, { len, n })
  }
  for (const [model, { len: size }] of modelLength) {
    const odd = await q.execute<{ ino: number; model: string }>({
      sql: `SELECT DISTINCT e.ino AS ino, e.model AS model ${LIVE_DOCS}
JOIN agentfs_embedding e ON e.ino = d.ino AND e.model = d.model AND e.version = d.version
WHERE d.model = (SELECT ?) AND (typeof(e.vector) != 'blob' OR length(e.vector) != (SELECT ?) OR (SELECT ?) = 0)
ORDER BY e.ino LIMIT ${limit}`,
      params: [model, size, size],
    })
    add(
      odd.rows,
      size === 0
        ? 'a vector is not whole float32 numbers'
        : `a vector is not ${size / 4} float32 numbers, as the model's others are`,
    )
    if (found.length >= most) return found
    if (size === 0) continue
    // A page of files at a time (each listed at least once), with their vectors of that length.
    let after = -1
    for (;;) {
      const { rows } = await q.execute<{ ino: number; vector: Uint8Array | null }>({
        sql: `SELECT p.ino AS ino, e.vector AS vector FROM (SELECT d.ino AS ino, d.version AS version ${LIVE_DOCS}
WHERE d.model = (SELECT ?) AND d.ino > (SELECT ?) ORDER BY d.ino LIMIT ${PAGE}) p
LEFT JOIN agentfs_embedding e ON e.ino = p.ino AND e.model = (SELECT ?) AND e.version = p.version
  AND typeof(e.vector) = 'blob' AND length(e.vector) = (SELECT ?)
ORDER BY p.ino`,
        params: [model, after, model, size],
      })
      const files = new Set<number>()
      for (const r of rows) {
        files.add(Number(r.ino))
        if (r.vector && !finite(r.vector))
          add([{ ino: r.ino, model }], 'a vector holds a number that is not finite')
      }
      if (found.length >= most || files.size < PAGE) break
      after = Number(rows.at(-1)!.ino)
    }
  }
  return found
}

/** Whether every float32 of `bytes` (little-endian) is finite. */
function finite(bytes: Uint8Array): boolean {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  for (let at = 0; at + 4 <= bytes.byteLength; at += 4)
    if (!Number.isFinite(view.getFloat32(at, true))) return false
  return true
}

/** The semantic index's rule; the repair drops the broken files' rows (the embedder redoes them). */
export const VECTOR_CHECKS: readonly Check[] = [
  {
    rule: 'embedding',
    repairable: true,
    async find(q): Promise<FindRow[]> {
      return (await broken(q, MAX_FINDINGS)).map((b) => ({
        ino: b.ino,
        detail: `${b.model}\n${b.why}`,
      }))
    },
    message: (r) => {
      const [model, why] = String(r.detail).split('\n')
      return `the semantic index's vectors of inode ${r.ino} under model '${model}' cannot be right (${why}); repair drops them, the embedder makes them again`
    },
    async fix(q) {
      // Every broken file found in one look (no cap), then its rows dropped.
      for (const { ino, model } of await broken(q, Number.POSITIVE_INFINITY)) {
        await q.execute({
          sql: 'DELETE FROM agentfs_embedding WHERE ino = ? AND model = ?',
          params: [ino, model],
        })
        await q.execute({
          sql: 'DELETE FROM agentfs_embedding_doc WHERE ino = ? AND model = ?',
          params: [ino, model],
        })
      }
    },
  },
]
