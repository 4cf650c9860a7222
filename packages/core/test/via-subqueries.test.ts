import { expect, test } from 'vitest'
import { viaSubqueries } from '../src/index.js'

test('viaSubqueries binds each parameter through a scalar subquery', () => {
  expect(viaSubqueries('k.key >= ? AND k.key < CAST(? AS TEXT) LIMIT ?')).toBe(
    'k.key >= (SELECT ?) AND k.key < CAST((SELECT ?) AS TEXT) LIMIT (SELECT ?)',
  )
  expect(viaSubqueries("c.op LIKE 'kv-%' AND c.seq > ?")).toBe(
    "c.op LIKE 'kv-%' AND c.seq > (SELECT ?)",
  )
  expect(viaSubqueries("c.op = 'it''s' AND c.seq > ?")).toBe(
    "c.op = 'it''s' AND c.seq > (SELECT ?)",
  )
})

test('viaSubqueries refuses a question mark inside a string literal, and an open literal', () => {
  expect(() => viaSubqueries("c.path = '?' AND c.seq > ?")).toThrow(/string literal holds/)
  expect(() => viaSubqueries("c.path = 'open AND c.seq > ?")).toThrow(/unterminated/)
})
