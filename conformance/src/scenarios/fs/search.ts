import { createFileSystem, type SearchResult } from '@agentfs/fs'
import type { Scenario } from '../../harness.js'

const shown = (result: SearchResult) =>
  result.hits.map((h) => [h.path, Number(h.score.toPrecision(9)), h.lines.map((l) => l.line)])

/**
 * Full-text search gives the same results on every engine: FTS5 where the engine has it, the
 * postings table where it has none (the Turso engine). At the end the index moves to the
 * postings store, which empties it and drops the FTS5 tables on every engine: the dump is the
 * same everywhere and the file opens on every engine (the Turso engine refuses FTS5 tables).
 */
export const fsSearch: Scenario = {
  id: 'fs/search',
  description: 'ranked full-text search: words, phrases, prefixes, a path, rewrites and deletes',
  async run({ db }) {
    const fs = createFileSystem(db)
    await fs.mkdir('/notes')
    await fs.writeFile(
      '/notes/retry.md',
      '# Retry\nThe client retries each request.\nMax retries: 3\n',
    )
    await fs.writeFile('/notes/auth.md', 'Tokens expire; a request without one fails.\n')
    await fs.writeFile(
      '/readme.txt',
      'Requests are retried. See notes/retry.md for the retry budget.\n',
    )
    await fs.writeFile('/blob.bin', new Uint8Array([114, 101, 116, 114, 121, 0, 1]))
    const before = {
      words: shown(await fs.search('retry request')),
      phrase: shown(await fs.search('"max retries"')),
      prefix: shown(await fs.search('retr*')),
      below: shown(await fs.search('request*', { path: '/notes' })),
    }
    await fs.writeFile('/notes/retry.md', 'Backoff doubles the delay.\n')
    await fs.unlink('/notes/auth.md')
    const after = {
      words: shown(await fs.search('retry')),
      gone: shown(await fs.search('tokens')),
      rewritten: shown(await fs.search('backoff delay')),
    }
    // The portable store (what a file the Turso engine opens needs): the FTS5 tables are
    // dropped and the index emptied, alike on every engine.
    const settings = await fs.setSearchSettings({ store: 'postings' })
    return { before, after, settings }
  },
}
