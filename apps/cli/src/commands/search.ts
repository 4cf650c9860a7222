import type { SearchSettings } from '@agentfs/sdk'
import type { Command } from 'commander'
import { byteSize, json, positiveInteger, print, withAgent } from './shared.js'

const collect = (value: string, list: string[] = []) => [...list, value]

interface SearchFlags {
  path?: string
  limit?: number
  lines?: number
  json?: boolean
  settings?: boolean
  maxFileSize?: number
  include?: string[]
  exclude?: string[]
  store?: string
  update?: boolean
  rebuild?: boolean
}

/** `agentfs search`: ranked full-text search, and the index's settings. */
export function registerSearch(program: Command): void {
  program
    .command('search')
    .description(
      'rank text files by how well they match words (BM25), best first, with the matching lines; --settings shows or sets which files are indexed',
    )
    .argument('<db>')
    .argument('[query...]', 'words, "a phrase", prefix* — all required')
    .option('--path <dir>', 'search below this directory or file', '/')
    .option('-n, --limit <n>', 'files to show (default 20)', positiveInteger('--limit'))
    .option('--lines <n>', 'matching lines per file (default 3; 0 for none)', (v) =>
      v === '0' ? 0 : positiveInteger('--lines')(v),
    )
    .option('--settings', 'show the index settings, or set them with the flags below')
    .option(
      '--max-file-size <size>',
      'with --settings: files larger are not indexed',
      byteSize('--max-file-size'),
    )
    .option('--include <glob>', 'with --settings: index only files matching (repeatable)', collect)
    .option('--exclude <glob>', 'with --settings: never index files matching (repeatable)', collect)
    .option(
      '--store <kind>',
      'with --settings: auto (FTS5 where the engine has it), fts5, or postings (a table any engine opens, the Turso engine too)',
    )
    .option(
      '--update',
      'bring the index up to date now (a search does it anyway): before the database goes to readers that cannot write',
    )
    .option('--rebuild', 'with --update: build the index again from nothing')
    .option('--json', 'print JSON')
    .action(async (db: string, words: string[], o: SearchFlags) =>
      withAgent(db, async (agent) => {
        if (o.update || o.rebuild) {
          if (!o.update) throw new Error('--rebuild goes with --update')
          if (words.length > 0)
            throw new Error('--update takes no query; run the search without it')
          const done = await agent.fs.updateSearchIndex(o.rebuild ? { rebuild: true } : {})
          if (o.json) return json(done)
          return print(
            `search index up to date: ${done.files} files looked at again, ${done.dropped} gone files dropped`,
          )
        }
        if (o.settings) {
          if (words.length > 0)
            throw new Error('--settings takes no query; run the search without --settings')
          const changes =
            o.maxFileSize !== undefined || o.include || o.exclude || o.store !== undefined
          const current = await agent.fs.searchSettings()
          const settings: SearchSettings = changes
            ? await agent.fs.setSearchSettings({
                maxFileSize: o.maxFileSize ?? current.maxFileSize,
                include: o.include ?? current.include,
                exclude: o.exclude ?? current.exclude,
                store: (o.store ?? current.store) as NonNullable<SearchSettings['store']>,
              })
            : current
          if (o.json) return json(settings)
          print(
            `${changes ? 'search settings now (the index is rebuilt by the next search)' : 'search settings'}: files up to ${settings.maxFileSize} B; include ${settings.include?.length ? settings.include.join(' ') : '(every file)'}; exclude ${settings.exclude?.length ? settings.exclude.join(' ') : '(none)'}; store ${settings.store}`,
          )
          return
        }
        if (o.maxFileSize !== undefined || o.include || o.exclude || o.store !== undefined)
          throw new Error(
            '--max-file-size, --include, --exclude and --store change the settings: add --settings',
          )
        if (words.length === 0)
          throw new Error(`give words to search for, e.g. agentfs search ${db} retry budget`)
        const result = await agent.fs.search(words.join(' '), {
          path: o.path ?? '/',
          ...(o.limit === undefined ? {} : { limit: o.limit }),
          ...(o.lines === undefined ? {} : { lines: o.lines }),
        })
        if (o.json) return json(result)
        if (result.behind > 0)
          process.stderr.write(
            `agentfs: ${result.behind} files changed since the index last saw them were not searched (the database is read-only)\n`,
          )
        if (result.hits.length === 0)
          return print(`no file below ${o.path ?? '/'} has all of: ${words.join(' ')}`)
        for (const hit of result.hits) {
          print(`${hit.path}  ${hit.score.toPrecision(3)}`)
          for (const line of hit.lines) print(`  ${line.line}: ${line.text}`)
        }
      }),
    )
}
