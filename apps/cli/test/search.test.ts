import { expect, test } from 'vitest'
import { runCli, useCliSandbox } from './helpers.js'

let cli: string
let cwd: string
useCliSandbox('agentfs-search-', (sandbox) => {
  ;({ cli, cwd } = sandbox)
})

const run = (...args: string[]) => runCli(cli, args, { cwd })
const ok = (...args: string[]) => {
  const r = run(...args)
  if (r.code !== 0) throw new Error(`agentfs ${args.join(' ')} failed (${r.code}): ${r.err}`)
  return r.out
}

test('search ranks files with their lines; --settings changes what is indexed', () => {
  ok('init', 's')
  ok(
    'fs',
    'write',
    's',
    '/docs/retry.md',
    'Retries\nThe retry budget is three.\nBack off between retries.\n',
  )
  ok('fs', 'write', 's', '/docs/auth.md', 'Tokens expire.\n')
  ok('fs', 'write', 's', '/vendor/lib.md', 'retry retry retry budget budget\n')
  ok('fs', 'write', 's', '/notes.md', 'a note\n')
  const out = ok('search', 's', 'retry', 'budget').trim().split('\n')
  expect(out.filter((l) => l.startsWith('/'))).toEqual([
    expect.stringMatching(/^\/vendor\/lib\.md {2}\S+$/),
    expect.stringMatching(/^\/docs\/retry\.md {2}\S+$/),
  ])
  expect(out).toContain('  2: The retry budget is three.')
  const scoped = JSON.parse(ok('search', 's', '"retry budget"', '--path', '/docs', '--json')) as {
    hits: { path: string; lines: { line: number }[] }[]
    behind: number
  }
  expect(scoped.hits.map((h) => [h.path, h.lines.map((l) => l.line)])).toEqual([
    ['/docs/retry.md', [2]],
  ])
  expect(scoped.behind).toBe(0)
  expect(
    ok('search', 's', 'retr*', '--lines', '0', '--limit', '1').trim().split('\n'),
  ).toHaveLength(1)
  expect(ok('search', 's', 'kubernetes')).toBe('no file below / has all of: kubernetes\n')

  expect(ok('search', 's', '--settings', '--exclude', 'vendor/**')).toMatch(/exclude vendor\/\*\*/)
  expect(ok('search', 's', 'retry').trim().split('\n')[0]).toMatch(/^\/docs\/retry\.md/)
  expect(ok('search', 's', 'retry')).not.toContain('/vendor/')
  expect(JSON.parse(ok('search', 's', '--settings', '--json'))).toEqual({
    maxFileSize: 8 << 20,
    include: [],
    exclude: ['vendor/**'],
    store: 'auto',
  })

  expect(ok('search', 's', '--update')).toBe(
    'search index up to date: 0 files looked at again, 0 gone files dropped\n',
  )
  expect(JSON.parse(ok('search', 's', '--update', '--rebuild', '--json'))).toEqual({
    writable: true,
    files: 4,
    dropped: 0,
  })
  expect(run('search', 's', '--rebuild').err).toMatch(/--rebuild goes with --update/)
  // Refusals: one line, what to do, exit 1, nothing changed.
  const unclosed = run('search', 's', '"retry')
  expect([unclosed.code, unclosed.err.trim()]).toEqual([
    1,
    'agentfs: search: the query has an unclosed quote; close the phrase with a second "',
  ])
  expect(run('search', 's').err).toMatch(/give words to search for/)
  expect(run('search', 's', 'x', '--exclude', 'a').err).toMatch(/add --settings/)
  expect(run('search', 's', '--settings', '--max-file-size', 'lots').err).toMatch(
    /--max-file-size expects bytes/,
  )
  expect(run('search', 's', '--settings', '--store', 'lucene').err.trim()).toBe(
    'agentfs: search settings: store must be auto, fts5 or postings, not lucene',
  )
  expect(JSON.parse(ok('search', 's', '--settings', '--json')).exclude).toEqual(['vendor/**'])
  // The portable store: same results, no FTS5 table left in the file.
  expect(ok('search', 's', '--settings', '--store', 'postings')).toMatch(/store postings/)
  expect(ok('search', 's', 'retry', '--json')).toMatch(/"store": "postings"/)
  expect(ok('search', 's', 'retry').trim().split('\n')[0]).toMatch(/^\/docs\/retry\.md/)
})
