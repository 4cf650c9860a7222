import { describe, expect, test } from 'vitest'
import { MERGE_LIMITS, mergeableText, mergeText } from '../src/index.js'

const L = (...lines: string[]) => lines.map((l) => `${l}\n`).join('')

describe('mergeText (three-way, by lines)', () => {
  test('changes in different places merge; the same change on both sides is taken once', () => {
    expect(
      mergeText(L('a', 'b', 'c', 'd', 'e'), L('A', 'b', 'c', 'd', 'e'), L('a', 'b', 'c', 'd', 'E')),
    ).toEqual({
      ok: true,
      text: L('A', 'b', 'c', 'd', 'E'),
    })
    expect(mergeText(L('a', 'b', 'c'), L('a', 'B', 'c', 'x'), L('a', 'B', 'c'))).toEqual({
      ok: true,
      text: L('a', 'B', 'c', 'x'),
    })
    expect(mergeText(L('a'), L('a'), L('a', 'b'))).toEqual({ ok: true, text: L('a', 'b') })
  })

  test('overlapping changes are conflicts with both sides, the ancestor and where each starts', () => {
    const m = mergeText(
      L('a', 'b', 'c', 'd'),
      L('a', 'B1', 'c', 'D'),
      L('x', 'a', 'B2', 'c', 'd'),
      {
        ours: 'branch',
        theirs: 'live',
      },
    )
    expect(m.ok).toBe(false)
    if (m.ok) return
    expect(m.conflicts).toEqual([
      { ours: L('B1'), base: L('b'), theirs: L('B2'), oursLine: 2, baseLine: 2, theirsLine: 3 },
    ])
    expect(m.text).toBe(
      L(
        'x',
        'a',
        '<<<<<<< branch',
        'B1',
        '||||||| base',
        'b',
        '=======',
        'B2',
        '>>>>>>> live',
        'c',
        'D',
      ),
    )
    // Both inserting at one place, and one deleting what the other edits, are conflicts too.
    expect(mergeText(L('a', 'b'), L('a', 'x', 'b'), L('a', 'y', 'b')).ok).toBe(false)
    expect(mergeText(L('a', 'b', 'c'), L('a', 'c'), L('a', 'B', 'c')).ok).toBe(false)
  })

  test('random disjoint edits of both sides merge to both applied', () => {
    let seed = 42
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    for (let run = 0; run < 200; run++) {
      const base = Array.from({ length: 20 + rand(40) }, (_, i) => `line ${run}.${i}`)
      // Ours edits the first half, theirs the second, with a kept line between.
      const cut = Math.floor(base.length / 2)
      const edit = (lines: string[], from: number, to: number, tag: string) => {
        const out = [...lines]
        for (let k = 0; k < 3; k++) {
          const at = from + rand(Math.max(1, to - from - 1))
          const kind = rand(3)
          if (kind === 0) out[at] = `${tag} ${k}`
          else if (kind === 1) out.splice(at, 0, `${tag} new ${k}`)
          else out.splice(at, 1, '')
        }
        return out
      }
      const ours = edit(base.slice(0, cut - 1), 0, cut - 1, 'ours').concat(base.slice(cut - 1))
      const theirs = base
        .slice(0, cut + 1)
        .concat(edit(base.slice(cut + 1), 0, base.length - cut - 1, 'theirs'))
      const expected = ours
        .slice(0, ours.length - (base.length - cut + 1))
        .concat(base.slice(cut - 1, cut + 1), theirs.slice(cut + 1))
      const m = mergeText(L(...base), L(...ours), L(...theirs))
      expect(m, `run ${run}`).toEqual({ ok: true, text: L(...expected) })
    }
  })

  test('hostile inputs stay bounded: repeated lines, shifted patterns, huge regions', () => {
    const n = 20_000
    const start = performance.now()
    expect(
      mergeText('x\n'.repeat(n), `y\n${'x\n'.repeat(n - 1)}`, `${'x\n'.repeat(n - 1)}z\n`).ok,
    ).toBeTypeOf('boolean')
    const cycle = (k: number) => Array.from({ length: n }, (_, i) => `l${(i + k) % 3}\n`).join('')
    expect(mergeText(cycle(0), cycle(1), cycle(2)).ok).toBe(false)
    // node-diff3 took 7 s on 2,000 repeated lines and 104 s on 5,000; this stays far below.
    expect(performance.now() - start).toBeLessThan(5000)
    const big = (tag: string) =>
      Array.from({ length: MERGE_LIMITS.lines + 1 }, (_, i) => `${tag}${i}\n`).join('')
    const m = mergeText(big('o'), big('a'), big('b'))
    expect(m.ok).toBe(false)
    if (!m.ok) expect(m.reason).toMatch(/more than 20000 lines; merge it by hand/)
  })

  test('mergeableText: text yes; NUL or invalid UTF-8 no', () => {
    expect(mergeableText(Buffer.from('héllo\n'))).toBe(true)
    expect(mergeableText(Buffer.from([104, 0, 105]))).toBe(false)
    expect(mergeableText(Buffer.from([0xff, 0xfe, 0x41]))).toBe(false)
  })
})
