// pnpm bench:semantic [--files N] [--out FILE]
// Semantic search on N text files (default 10,000, about 1 KiB each) with a fast deterministic
// model (words hashed into 256 buckets, so the model costs little next to the storage):
// - the write path: writing the files (W1's shape) with the background embedder running, against
//   the same writes with no embedder (the target: within 15%);
// - making every vector (updateEmbeddings) against calling the model alone on the same chunks;
// - the median semantic query: in JavaScript (better-sqlite3) and in SQL (libSQL's
//   vector_distance_cos), against a brute-force cosine over the vectors held in memory (the
//   floor: no storage at all).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { chunkText, type Embedder } from '@agentfs/fs'
import { AgentFS } from '@agentfs/sdk'
import { median, ms, searchCorpus, VOCABULARY } from './search-corpus.js'

const { values } = parseArgs({
  options: { files: { type: 'string', default: '10000' }, out: { type: 'string' } },
})
const fileCount = Number(values.files)
if (!Number.isSafeInteger(fileCount) || fileCount < 100) throw new Error('--files must be ≥ 100')

const DIMS = 256
const texts = searchCorpus(fileCount)
const bucket = (w: string) => {
  let h = 2166136261
  for (let i = 0; i < w.length; i++) h = Math.imul(h ^ w.charCodeAt(i), 16777619)
  return (h >>> 0) % DIMS
}
const vectorOf = (text: string) => {
  const v = new Float32Array(DIMS)
  for (const w of text.split(/\s+/)) if (w) v[bucket(w)]! += 1
  return v
}
const embedder: Embedder = {
  model: 'bench-hash-256',
  dimensions: DIMS,
  batchSize: 256,
  async embed(batch) {
    return batch.map(vectorOf)
  },
}
const QUERIES = Array.from(
  { length: 9 },
  (_, i) => `${VOCABULARY[i]} ${VOCABULARY[i * 13 + 5]} ${VOCABULARY[i * 7 + 2]}`,
)

const report: string[] = [`# Semantic search on ${fileCount} files (${new Date().toISOString()})`]
const say = (line: string) => {
  console.log(line)
  report.push(line)
}
const dir = mkdtempSync(join(tmpdir(), 'agentfs-semantic-bench-'))

// 1. The write path, with and without the background embedder (files on disk, WAL).
async function writeAll(path: string, embed: boolean): Promise<{ write: number; agent: AgentFS }> {
  const agent = await AgentFS.open({
    path,
    ...(embed ? { embed: embedder, embedIntervalMs: 50 } : {}),
  })
  await agent.fs.mkdir('/docs')
  const write = await ms(async () => {
    for (let i = 0; i < fileCount; i++) await agent.fs.writeFile(`/docs/f${i}.txt`, texts[i]!)
  })
  return { write, agent }
}
const plain = await writeAll(join(dir, 'plain.db'), false)
await plain.agent.close()
const embedded = await writeAll(join(dir, 'embedded.db'), true)
const caughtUp = await ms(() => embedded.agent.updateEmbeddings())
await embedded.agent.close()
say(
  `writing ${fileCount} files: ${plain.write.toFixed(0)} ms without an embedder, ${embedded.write.toFixed(0)} ms with the background embedder running (${((embedded.write / plain.write - 1) * 100).toFixed(1)}%); the rest of the backlog after the writes: ${caughtUp.toFixed(0)} ms`,
)

// 2. Making every vector, against the model alone.
const chunks = texts.flatMap((t) => chunkText(t).map((c) => c.text))
const modelAlone = await ms(() => embedder.embed(chunks))
const fresh = await AgentFS.open({
  path: join(dir, 'plain.db'),
  embed: embedder,
  embedIntervalMs: 0,
})
const making = await ms(() => fresh.updateEmbeddings())
say(
  `updateEmbeddings over ${chunks.length} chunks: ${making.toFixed(0)} ms; the model alone on the same chunks: ${modelAlone.toFixed(0)} ms`,
)

// 3. Query latency: JavaScript (better-sqlite3), SQL (libSQL), and the in-memory floor.
const matrix = chunks.map(vectorOf)
const floor = (query: string) => {
  const q = vectorOf(query)
  let qq = 0
  for (const x of q) qq += x * x
  const best: number[] = []
  for (const v of matrix) {
    let dot = 0
    let vv = 0
    for (let i = 0; i < DIMS; i++) {
      dot += q[i]! * v[i]!
      vv += v[i]! * v[i]!
    }
    best.push(dot / Math.sqrt(qq * vv))
  }
  return best.sort((a, b) => b - a).slice(0, 10)
}
const timings = async (search: (q: string) => Promise<unknown>) => {
  await search(QUERIES[0]!)
  const out: number[] = []
  for (const q of QUERIES) out.push(await ms(() => search(q)))
  return median(out)
}
const js = await timings((q) => fresh.fs.search(q, { mode: 'semantic', limit: 10, lines: 0 }))
const hybridJs = await timings((q) => fresh.fs.search(q, { limit: 10, lines: 0 }))
await fresh.close()
const libsql = await AgentFS.open({
  driver: libsqlDriver({ url: `file:${join(dir, 'plain.db')}` }),
  embed: embedder,
  embedIntervalMs: 0,
})
const sql = await timings((q) => libsql.fs.search(q, { mode: 'semantic', limit: 10, lines: 0 }))
await libsql.close()
const floorMs = await timings(async (q) => floor(q))
say(
  `semantic query, top 10 of ${chunks.length} vectors (median of ${QUERIES.length}): ${js.toFixed(1)} ms in JavaScript (better-sqlite3), ${sql.toFixed(1)} ms in SQL (libSQL), hybrid ${hybridJs.toFixed(1)} ms; brute force over the vectors in memory: ${floorMs.toFixed(1)} ms`,
)
rmSync(dir, { recursive: true, force: true })
if (values.out) writeFileSync(values.out, `${report.join('\n')}\n`)
