import { resolve } from 'node:path'
import { expect, test } from 'vitest'
import { DRIFTS, loadSources, makeCases, runCorpus } from '../src/edit-corpus.js'

test('the edit corpus: no wrong edit, every control refused, every drifted request applied', async () => {
  const sources = loadSources(resolve(import.meta.dirname, '../../..'))
  expect(sources.length).toBeGreaterThan(100)
  const cases = DRIFTS.flatMap((d, i) => makeCases(sources, d, 40, 7 + i))
  expect(cases.length).toBe(40 * DRIFTS.length)
  const result = await runCorpus(cases)
  expect(result.wrongAfter.map((c) => `${c.drift}: ${c.oldString}`)).toEqual([])
  for (const [drift, row] of Object.entries(result.byDrift)) {
    expect(row.after.success, drift).toBe(row.cases)
    expect(row.before.wrong, drift).toBe(0)
  }
  // The exact-only baseline fails every drifted request it cannot find byte for byte.
  expect(result.byDrift['file-crlf']!.before.success).toBe(0)
}, 120_000)
