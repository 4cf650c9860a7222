import { describe, expect, test } from 'vitest'
import { placeholderOffsets, withHexPlaceholders } from '../src/blob-binding.js'

describe('placeholderOffsets', () => {
  test('finds positional parameters, not question marks in literals, names or comments', () => {
    const sql = `SELECT '?', "a?", [b?], ? -- what?\n, /* ? */ ?`
    const offsets = placeholderOffsets(sql)!
    expect(offsets.map((at) => sql.slice(at, at + 1))).toEqual(['?', '?'])
    expect(offsets).toEqual([sql.indexOf(', ?') + 2, sql.lastIndexOf('?')])
  })

  test('leaves numbered and named parameters alone (undefined)', () => {
    expect(placeholderOffsets('SELECT ?1')).toBeUndefined()
    expect(placeholderOffsets('SELECT :a')).toBeUndefined()
    expect(placeholderOffsets('SELECT @a, $b')).toBeUndefined()
    expect(placeholderOffsets("SELECT 'unterminated")).toBeUndefined()
  })

  test('wraps the chosen placeholders in unhex()', () => {
    const sql = 'INSERT INTO t VALUES (?, ?, ?)'
    const offsets = placeholderOffsets(sql)!
    expect(withHexPlaceholders(sql, offsets, [0, 2])).toBe(
      'INSERT INTO t VALUES (unhex(?), ?, unhex(?))',
    )
  })
})
