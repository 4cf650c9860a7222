import { createHash } from 'node:crypto'
import { createFileSystem, type Embedder, type SearchResult, updateEmbeddings } from '@agentfs/fs'
import type { Scenario } from '../../harness.js'

const shown = (result: SearchResult) =>
  result.hits.map((h) => [h.path, Number(h.score.toPrecision(4)), h.lines.map((l) => l.line)])

/** Words hashed into 16 buckets, `car` and `automobile` in one: the same on every machine. */
const embedder: Embedder = {
  model: 'conformance-bag-of-words-16',
  dimensions: 16,
  async embed(texts) {
    return texts.map((text) => {
      const v = new Float32Array(16)
      for (let word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
        if (word === 'automobile') word = 'car'
        v[createHash('sha256').update(word).digest()[0]! % 16]! += 1
      }
      return v
    })
  },
}

/**
 * Semantic search gives the same results on every engine: in SQL where the engine has libSQL's
 * vector functions (libSQL, the Turso engine), in JavaScript elsewhere; the vectors stored are
 * the same bytes everywhere.
 */
export const fsSemanticSearch: Scenario = {
  id: 'fs/semantic-search',
  description: 'semantic and hybrid search over vectors of a deterministic embedder',
  async run({ db }) {
    const fs = createFileSystem(db, { embed: embedder })
    await fs.mkdir('/notes')
    await fs.writeFile('/notes/garage.md', '# Garage\nThe automobile needs tyres.\nOil too.\n')
    await fs.writeFile('/notes/market.md', 'Apples, pears and plums at the market.\n')
    await fs.writeFile('/notes/taxes.md', 'File the tax return before April.\n')
    const waiting = (await fs.search('car', { mode: 'semantic' })).behind
    const made = await updateEmbeddings(db, embedder)
    const before = {
      semantic: shown(await fs.search('car tyres', { mode: 'semantic' })),
      hybrid: shown(await fs.search('market')),
      below: shown(await fs.search('tax', { mode: 'semantic', path: '/notes/taxes.md' })),
    }
    await fs.writeFile('/notes/garage.md', 'Bread rises overnight.\n')
    await fs.unlink('/notes/market.md')
    const stale = await fs.search('car', { mode: 'semantic' })
    const again = await updateEmbeddings(db, embedder)
    const after = {
      stale: { hits: shown(stale), behind: stale.behind },
      semantic: shown(await fs.search('bread', { mode: 'semantic' })),
    }
    // The full-text index (hybrid's words) to the portable store, as fs/search does: the dump
    // is then the same on every engine.
    await fs.setSearchSettings({ store: 'postings' })
    return { waiting, made, again, before, after }
  },
}
