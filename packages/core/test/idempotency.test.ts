import { createHash } from 'node:crypto'
import { describe, expect, test } from 'vitest'
import { canonicalJson, digestArguments, MAX_DIGESTED_MEMBERS } from '../src/index.js'

const sha256 = (text: string) => createHash('sha256').update(text).digest()

describe('digestArguments', () => {
  test('args_sha256 is the SHA-256 of the canonical JSON, as SPEC-EXTENSIONS defines it', () => {
    const cases: unknown[] = [
      { b: 1, a: 'x', c: undefined, d: { z: [1, 'é'], y: null } },
      {},
      { bytes: new Uint8Array([1, 2, 3]), n: 10n },
      [1, { b: 2, a: 1 }],
      'text',
      null,
      42,
    ]
    for (const args of cases)
      expect(Buffer.from(digestArguments(args).sha256)).toEqual(sha256(canonicalJson(args)))
  })

  test('each top-level member is digested alone, so a mismatch can name it', () => {
    const a = digestArguments({ path: '/a', content: 'one' })
    const b = digestArguments({ content: 'two', path: '/a' })
    const members = (d: { members: string | null }) => JSON.parse(d.members as string)
    expect(Object.keys(members(a))).toEqual(['content', 'path'])
    expect(members(a).path).toBe(members(b).path)
    expect(members(a).content).not.toBe(members(b).content)
    expect(digestArguments([1, 2]).members).toBeNull()
    const wide = Object.fromEntries(
      Array.from({ length: MAX_DIGESTED_MEMBERS + 1 }, (_, i) => [`k${i}`, i]),
    )
    expect(digestArguments(wide).members).toBeNull()
  })
})
