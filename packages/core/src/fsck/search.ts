import { readInode } from '../content/blob-store.js'
import { textOf, tokenize } from '../content/search-tokens.js'
import type { Queryable } from '../driver/guard-driver.js'
import { isFsError } from '../errors.js'
import { readChunkFormat, readMeta } from '../schema/meta.js'
import { S_IFMT, S_IFREG } from '../schema/schema.js'
import type { Check, FindRow } from './check.js'

/** Doc rows read per query while checking. */
const PAGE = 500
/** Findings one check reports at most (the repair drops the whole index anyway). */
const MAX_FINDINGS = 100

/**
 * The full-text index equals the content: each file the index holds at its current version
 * has exactly the words its content has now, in order (the FTS5 row's text, or the postings
 * rows of that version). Files changed since they were indexed are not findings: the next
 * search catches up with them.
 */
async function staleWords(q: Queryable): Promise<FindRow[]> {
  const store = await readMeta(q, 'search.store')
  if (store !== 'fts5' && store !== 'postings') return []
  const format = await readChunkFormat(q)
  const found: FindRow[] = []
  let after = 0
  for (;;) {
    const { rows } = await q.execute<{ ino: number; words: number; size: number }>({
      sql: `SELECT d.ino AS ino, d.words AS words, i.size AS size FROM agentfs_search_doc d JOIN fs_inode i ON i.ino = d.ino
WHERE d.ino > ? AND d.words >= 0 AND (i.mode & ${S_IFMT}) = ${S_IFREG} AND d.version = i.ctime * 1000000000 + i.ctime_nsec ORDER BY d.ino LIMIT ${PAGE}`,
      params: [after],
    })
    for (const row of rows) {
      const ino = Number(row.ino)
      const size = Number(row.size)
      // An impossible size is the size rule's finding; a chunk that is not a BLOB, the chunk
      // rules'. Neither may stop this check.
      if (!Number.isSafeInteger(size) || size < 0 || size > 1 << 30) continue
      let text: string | undefined
      try {
        text = textOf(await readInode(q, ino, size, format))
      } catch (error) {
        if (isFsError(error, 'EIO')) continue
        throw error
      }
      const want = text === undefined ? undefined : tokenize(text)
      const got = await storedWords(q, store, ino)
      if (got === null) return found
      if (want === undefined || Number(row.words) !== want.length || got !== want.join(' '))
        found.push({ ino, detail: want === undefined ? 'is not text' : `${want.length}` })
      if (found.length >= MAX_FINDINGS) return found
    }
    if (rows.length < PAGE) return found
    after = Number(rows.at(-1)!.ino)
  }
}

/** The words the index holds for `ino`, space-separated; null when this engine cannot read them. */
async function storedWords(
  q: Queryable,
  store: 'fts5' | 'postings',
  ino: number,
): Promise<string | null> {
  if (store === 'fts5') {
    try {
      const { rows } = await q.execute<{ body: string }>({
        sql: 'SELECT body FROM agentfs_search_fts WHERE rowid = ?',
        params: [ino],
      })
      return rows[0]?.body ?? ''
    } catch {
      return null
    }
  }
  const { rows } = await q.execute<{ term: string; positions: string }>({
    sql: 'SELECT p.term AS term, p.positions AS positions FROM agentfs_search_posting p JOIN agentfs_search_doc d ON d.ino = p.ino AND d.version = p.version WHERE p.ino = ?',
    params: [ino],
  })
  const words: string[] = []
  for (const r of rows)
    for (const at of String(r.positions).split(',')) {
      const i = Number(at)
      if (!Number.isSafeInteger(i) || i < 0 || i >= 1 << 24) return `<bad position ${at}>`
      words[i] = r.term
    }
  return Array.from(words, (w) => w ?? '<missing>').join(' ')
}

/** The index's rules; the repair empties it (the next search rebuilds it from the files). */
export const SEARCH_CHECKS: readonly Check[] = [
  {
    rule: 'search-index',
    repairable: true,
    find: staleWords,
    message: (r) =>
      `the full-text index does not hold the words of inode ${r.ino} (${r.detail === 'is not text' ? 'it is not text' : `it has ${r.detail} words`}); repair empties the index, the next search rebuilds it`,
    repair:
      "DELETE FROM agentfs_search_doc;\nDELETE FROM agentfs_search_posting;\nDELETE FROM agentfs_meta WHERE key = 'search.store'",
    async fix(q) {
      // The FTS5 rows go with their table's rows; an engine without FTS5 cannot reach them, and
      // the store's name is gone, so the next engine with FTS5 empties them before use.
      try {
        await q.execute({ sql: 'DELETE FROM agentfs_search_fts' })
      } catch {
        // no FTS5 here, or no table
      }
    },
  },
]
