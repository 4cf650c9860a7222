import { expect, test } from 'vitest'
import { forgetOldest } from '../src/merge-swap.js'
import type { ReplacedContent } from '../src/rules.js'

const content = (bytes: number): ReplacedContent => ({
  chunks: new Map([[0, new Uint8Array(bytes)]]),
  bytes,
  over: false,
})

test('the ancestors kept between pushes stay within the budget, the newest kept', () => {
  const ancestors = new Map<number, ReplacedContent>([
    [1, content(40)],
    [2, content(40)],
    [3, content(40)],
  ])
  forgetOldest(ancestors, 100)
  expect([...ancestors.keys()]).toEqual([2, 3])
  forgetOldest(ancestors, 80)
  expect([...ancestors.keys()]).toEqual([2, 3])
  ancestors.set(4, content(200))
  forgetOldest(ancestors, 100)
  expect([...ancestors.keys()]).toEqual([])
})
