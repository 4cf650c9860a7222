// pnpm bench:search [--files N] [--out FILE]
// Ranked full-text search on N text files (default 10,000, about 1 KiB each, words drawn from a
// Zipf-like vocabulary as prose is), on each store: FTS5 (better-sqlite3) and the postings table
// (the store the Turso engine uses, chosen by the `store` setting on the same engine). Reports:
// - the write path: creating the files (W1's shape) with the index tables present costs the
//   same, since the index is brought up to date by searches, not by writes;
// - the first search, which indexes every file (the deferred cost of W1), against W1 itself;
// - the median latency of warm queries (a word, two words, a phrase, a prefix) and of a query
//   right after one file changed, against fs.grep of the same word (the scan it replaces).
import { writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { AgentFS } from '@agentfs/sdk'
import { median, ms, searchCorpus, VOCABULARY } from './search-corpus.js'

const { values } = parseArgs({
  options: { files: { type: 'string', default: '10000' }, out: { type: 'string' } },
})
const fileCount = Number(values.files)
if (!Number.isSafeInteger(fileCount) || fileCount < 100) throw new Error('--files must be ≥ 100')

const texts = searchCorpus(fileCount)
const QUERIES = [
  VOCABULARY[3]!,
  `${VOCABULARY[10]} ${VOCABULARY[40]}`,
  `"${VOCABULARY[0]} ${VOCABULARY[1]}"`,
  `${VOCABULARY[7]!.slice(0, 3)}*`,
]

const report: string[] = [`# Full-text search on ${fileCount} files (${new Date().toISOString()})`]
const say = (line: string) => {
  console.log(line)
  report.push(line)
}

for (const store of ['fts5', 'postings'] as const) {
  const agent = await AgentFS.open({ path: ':memory:' })
  const fs = agent.fs
  await fs.setSearchSettings({ store })
  await fs.mkdir('/docs')
  const write = await ms(async () => {
    for (let i = 0; i < fileCount; i++) await fs.writeFile(`/docs/f${i}.txt`, texts[i]!)
  })
  const build = await ms(() => fs.search(QUERIES[0]!))
  const warm: number[] = []
  for (let round = 0; round < 5; round++)
    for (const q of QUERIES) warm.push(await ms(() => fs.search(q, { limit: 20 })))
  const changed: number[] = []
  for (let round = 0; round < 5; round++) {
    await fs.writeFile(`/docs/f${round}.txt`, `${texts[round]} ${VOCABULARY[3]}`)
    changed.push(await ms(() => fs.search(QUERIES[0]!, { limit: 20 })))
  }
  const grep = median([
    await ms(() => fs.grep(`\\b${VOCABULARY[3]}\\b`)),
    await ms(() => fs.grep(`\\b${VOCABULARY[3]}\\b`)),
    await ms(() => fs.grep(`\\b${VOCABULARY[3]}\\b`)),
  ])
  say(
    `${store}: writing ${fileCount} files ${write.toFixed(0)} ms; first search (indexes them all) ${build.toFixed(0)} ms = ${((100 * build) / write).toFixed(0)}% of the writes; warm query ${median(warm).toFixed(1)} ms (median of ${warm.length}); after one change ${median(changed).toFixed(1)} ms; fs.grep of one word ${grep.toFixed(0)} ms (${(grep / median(warm)).toFixed(0)}× the warm query)`,
  )
  await agent.close()
}
if (values.out) writeFileSync(values.out, `${report.join('\n')}\n`)
