import type { FileSystem, SearchOptions, SearchResult } from '@agentfs/fs'
import { z } from 'zod'
import { cap } from './text.js'
import type { AgentToolDefinition } from './types.js'

/** A filesystem with ranked full-text search (the database's; an overlay has none). */
export interface Searchable {
  search(query: string, options?: SearchOptions): Promise<SearchResult>
}

/** Whether `fs` can run the `search` tool. */
export const canSearch = (fs: FileSystem): fs is FileSystem & Searchable =>
  typeof (fs as Partial<Searchable>).search === 'function'

const searchSchema = z.object({
  query: z
    .string()
    .describe(
      'Words to find, all required: bare words match whole words (any case), "quoted words" a phrase, a trailing * a prefix (retr*)',
    ),
  path: z.string().optional().describe('Directory or file to search below (default /)'),
  limit: z.number().int().min(1).max(100).optional().describe('Files to show (default 10)'),
  lines: z
    .number()
    .int()
    .min(0)
    .max(10)
    .optional()
    .describe('Matching lines shown per file (default 3)'),
  mode: z
    .enum(['text', 'semantic', 'hybrid'])
    .optional()
    .describe(
      'text: the words themselves; semantic: files about the same thing in other words; hybrid: both (the default where the database has an embedding model, else text)',
    ),
})

const search: AgentToolDefinition<z.infer<typeof searchSchema>> = {
  name: 'search',
  description:
    'Find the files most about some words, best first (by the words, BM25, and where the database has an embedding model also by meaning), each with its best lines (line numbers for read_file). Use it to find where a topic is handled; use grep for an exact pattern or every occurrence.',
  inputSchema: searchSchema,
  mutates: false,
  needs: 'search',
  async handler(input, env, limits) {
    const base = await env.paths.resolve(input.path ?? '/', env.fs)
    const limit = input.limit ?? 10
    const fs = env.fs as FileSystem & Searchable
    // The filesystem's own policy (a confined root) hides files before the limit; the paths'
    // visibility check below is a second filter, so ask for a few more.
    const result = await fs.search(input.query, {
      path: base,
      limit: Math.min(limit + 20, 1000),
      lines: input.lines ?? 3,
      ...(input.mode === undefined ? {} : { mode: input.mode }),
    })
    const hits = []
    for (const hit of result.hits) {
      if (hits.length >= limit) break
      if (await env.paths.visible(hit.path, env.fs)) hits.push(hit)
    }
    const where = env.paths.display(base)
    const note =
      result.behind > 0
        ? `\n(${result.behind} changed files were not searched yet: the index or the embedding model has not caught up with them.)`
        : ''
    if (hits.length === 0)
      return {
        text:
          input.mode === 'semantic'
            ? `No file below ${where} is about: ${input.query}.${note}`
            : `No file below ${where} has all of: ${input.query}. Words match whole words; end one with * for a prefix, or use grep for a pattern.${note}`,
      }
    const blocks = hits.map((hit) =>
      [
        `${env.paths.display(hit.path)}  (score ${hit.score.toPrecision(3)})`,
        ...hit.lines.map((l) => `  ${l.line}: ${l.text}`),
      ].join('\n'),
    )
    return {
      text: cap(
        `${hits.length} file${hits.length === 1 ? '' : 's'} below ${where} for ${input.query} (best first):\n${blocks.join('\n')}${note}`,
        limits.maxChars,
        'ask for fewer files or lines',
      ),
    }
  },
}

export const SEARCH_TOOLS = [search] as const
