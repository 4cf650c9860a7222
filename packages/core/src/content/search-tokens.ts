import { AgentFsError } from '../errors.js'

/**
 * The full-text index's words: runs of letters, digits and combining marks after NFKC
 * normalisation, lower-cased. Everything else separates words, so `snake_case` and `kebab-case`
 * are two words each, and a query names them as a phrase. The same function cuts file content
 * and queries, on every engine: the FTS5 table stores the words separated by spaces (its `ascii`
 * tokenizer then sees exactly these words), the postings table stores them one row each.
 */

/** Longest word kept (in UTF-16 code units); a longer run is cut to this length. */
export const MAX_TOKEN = 64
/** Words of one file the index keeps: the first this many (a longer file is indexed in part). */
export const SEARCH_MAX_TOKENS = 200_000
/** Longest query accepted, in characters. */
export const MAX_QUERY = 1_000
/** Most terms and phrases in one query. */
export const MAX_QUERY_TERMS = 16

const WORD = /[\p{L}\p{N}\p{M}]+/gu

/**
 * The words of `text` in order, at most `max`. Each is at most {@link MAX_TOKEN} code units
 * long (cut where a surrogate pair would split).
 */
export function tokenize(text: string, max = SEARCH_MAX_TOKENS): string[] {
  const out: string[] = []
  for (const match of text.normalize('NFKC').toLowerCase().matchAll(WORD)) {
    if (out.length >= max) break
    out.push(cutToken(match[0]))
  }
  return out
}

function cutToken(word: string): string {
  if (word.length <= MAX_TOKEN) return word
  const end = isHighSurrogate(word.charCodeAt(MAX_TOKEN - 1)) ? MAX_TOKEN - 1 : MAX_TOKEN
  return word.slice(0, end)
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff

/**
 * One part of a query: a phrase of one or more words that must appear consecutively; with
 * `prefix`, its last word matches every word that starts with it.
 */
export interface QueryPhrase {
  readonly words: readonly string[]
  readonly prefix: boolean
}

/**
 * A query: every phrase must match (AND). Bare words are one-word phrases, `"quoted words"` a
 * phrase, a trailing `*` a prefix (`conf*`, `"max retr"*`). A bare word the tokenizer cuts in
 * two (`foo-bar`, `a.b`) is the phrase of its words.
 */
export function parseQuery(query: string): QueryPhrase[] {
  if (typeof query !== 'string')
    throw new AgentFsError('INVALID_ARGUMENT', 'search: the query must be a string')
  if (query.length > MAX_QUERY)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `search: the query is ${query.length} characters long, more than the ${MAX_QUERY} allowed; search for fewer words`,
    )
  const phrases: QueryPhrase[] = []
  const part = /"([^"]*)"(\*?)|([^\s"]+)/g
  for (const m of query.matchAll(part)) {
    const quoted = m[1] !== undefined
    const raw = quoted ? m[1]! : m[3]!
    const prefix = quoted ? m[2] === '*' : raw.endsWith('*')
    const words = tokenize(quoted ? raw : raw.replace(/\*+$/, ''), MAX_QUERY_TERMS + 1)
    if (words.length === 0) continue
    phrases.push({ words, prefix })
  }
  if (query.split('"').length % 2 === 0)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'search: the query has an unclosed quote; close the phrase with a second "',
    )
  if (phrases.length === 0)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      'search: the query has no word to search for (words are letters and digits); give at least one',
    )
  const words = phrases.reduce((n, p) => n + p.words.length, 0)
  if (words > MAX_QUERY_TERMS)
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `search: the query has ${words} words, more than the ${MAX_QUERY_TERMS} allowed; search for fewer`,
    )
  return phrases
}

/**
 * The FTS5 MATCH expression of a parsed query: each phrase quoted (our words hold no quote), the
 * prefix mark after it, the phrases joined by AND.
 */
export function fts5Expression(phrases: readonly QueryPhrase[]): string {
  return phrases.map((p) => `"${p.words.join(' ')}"${p.prefix ? ' *' : ''}`).join(' AND ')
}

/** True when `word` is matched by the phrase word `want` (equal, or starting with it as a prefix). */
export const wordMatches = (word: string, want: string, prefix: boolean): boolean =>
  prefix ? word.startsWith(want) : word === want

/**
 * The start positions in `words` where `phrase` matches, at most `max`. Occurrences may overlap
 * (`a a` in `a a a` matches twice), as FTS5 counts them.
 */
export function phrasePositions(
  words: readonly string[],
  phrase: QueryPhrase,
  max = Number.POSITIVE_INFINITY,
): number[] {
  const out: number[] = []
  const n = phrase.words.length
  const last = n - 1
  for (let i = 0; i + n <= words.length && out.length < max; i++) {
    let ok = true
    for (let j = 0; j < n && ok; j++)
      ok = wordMatches(words[i + j]!, phrase.words[j]!, phrase.prefix && j === last)
    if (ok) out.push(i)
  }
  return out
}

/** The FTS5 `bm25()` parameters (SQLite's defaults), which the postings fallback uses too. */
export const BM25_K1 = 1.2
export const BM25_B = 0.75

/**
 * FTS5's `bm25()` of one document, as SQLite computes it (negative: smaller ranks first):
 * `rows` documents hold `totalWords` words; phrase i is found in `hits[i]` documents and
 * `freq[i]` times in this one of `words` words.
 */
export function bm25(
  rows: number,
  totalWords: number,
  hits: readonly number[],
  freq: readonly number[],
  words: number,
): number {
  const avgdl = totalWords / rows
  let score = 0
  for (let i = 0; i < hits.length; i++) {
    let idf = Math.log((rows - hits[i]! + 0.5) / (hits[i]! + 0.5))
    if (idf <= 0) idf = 1e-6
    const f = freq[i]!
    // The order of operations of fts5_aux.c, so both stores rank ties the same to the last bit.
    score += idf * ((f * (BM25_K1 + 1.0)) / (f + BM25_K1 * (1 - BM25_B + (BM25_B * words) / avgdl)))
  }
  return -1 * score
}

const decoder = new TextDecoder('utf-8', { fatal: true })

/** A file's bytes as text, or undefined when they are not text (a NUL, invalid UTF-8). */
export function textOf(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined
  try {
    return decoder.decode(bytes)
  } catch {
    return undefined
  }
}
