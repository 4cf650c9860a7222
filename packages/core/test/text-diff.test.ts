import { applyPatch } from 'diff'
import { describe, expect, test } from 'vitest'
import { unifiedDiff } from '../src/index.js'

const lines = (n: number, tag: string, end = '\n') =>
  `${Array.from({ length: n }, (_, i) => `line ${i} ${tag}`).join('\n')}${end}`

/** The diff applies to `before` and gives `after` exactly (whichever way it was made). */
function roundTrips(before: string, after: string, budget = {}) {
  const diff = unifiedDiff('a/f', 'b/f', before, after, budget)
  if (diff.method !== 'summary') expect(applyPatch(before, diff.text)).toBe(after)
  return diff
}

describe('unified diffs within a budget', () => {
  test('small changes: the minimal diff', () => {
    const before = lines(50, 'x')
    const after = before.replace('line 20 x', 'line 20 y')
    const diff = roundTrips(before, after)
    expect(diff.method).toBe('myers')
    expect(diff.text).toContain('-line 20 x\n+line 20 y')
    expect(diff.text.split('\n').filter((l) => /^[-+]line/.test(l))).toHaveLength(2)
  })

  test('a whole file rewritten (10,000 lines): one linear hunk that still applies', () => {
    const before = lines(10_000, 'old')
    const after = lines(10_000, 'new')
    const diff = roundTrips(before, after)
    expect(diff.method).toBe('linear')
    expect(diff.text.match(/^@@/gm)).toHaveLength(1)
  })

  test('the linear hunk keeps the common first and last lines as context', () => {
    const before = `head\n${lines(3000, 'old')}tail\n`
    const after = `head\n${lines(3000, 'new')}tail\n`
    const diff = roundTrips(before, after)
    expect(diff.method).toBe('linear')
    expect(diff.text).toContain('@@ -1,3002 +1,3002 @@\n head\n-line 0 old')
  })

  test('missing final newlines, empty sides and identical texts', () => {
    for (const budget of [{}, { work: 1 }]) {
      roundTrips('a\nb', 'a\nc', budget)
      roundTrips('a\nb', 'a\nb\n', budget)
      roundTrips('a\nb\n', 'a\nb', budget)
      roundTrips('', lines(5, 'x'), budget)
      roundTrips(lines(5, 'x'), '', budget)
      roundTrips('x', 'y', budget)
      expect(roundTrips('same\n', 'same\n', budget).text).not.toContain('@@')
    }
  })

  test('past maxLines: a summary line, never a huge text', () => {
    const diff = unifiedDiff('a/f', 'b/f', lines(10_000, 'old'), lines(10_000, 'new'), {
      maxLines: 1000,
    })
    expect(diff.method).toBe('summary')
    expect(diff.text).toMatch(/files differ: 10000 vs 10000 lines; the diff would have 20003 lines/)
    expect(diff.text.length).toBeLessThan(200)
  })
})
