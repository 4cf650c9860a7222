import { describe, expect, test } from 'vitest'
import { createGarden } from '../src/garden/garden.js'

describe('garden paths', () => {
  const garden = createGarden({ userId: 'u1' })

  test("the seed's allowed roots for the user, nothing else", () => {
    expect(garden.match('/users/u1/parts/p-1/profile.md')).toEqual({
      path: '/users/u1/parts/p-1/profile.md',
      template: 'users/{userId}/parts/{partId}/profile.md',
      params: { userId: 'u1', partId: 'p-1' },
      kind: 'profile',
    })
    expect(garden.match('users/u1/notes.md')?.kind).toBe('notes')
    for (const path of [
      '/users/u2/notes.md',
      '/users/u1/parts/p1/other.md',
      '/users/u1/parts/../notes.md/x',
      '/users/u1/parts/a/b/profile.md',
      '/users/u1/parts/.x/profile.md',
      '/users/u1/.history/notes/2026.md',
      '/etc/passwd',
      '/users/u1/notes.md\0',
    ])
      expect(garden.match(path)).toBeUndefined()
    // `..` is resolved before matching, never used to escape.
    expect(garden.match('/users/u1/parts/p1/../../notes.md')?.path).toBe('/users/u1/notes.md')
    expect(() => garden.allow('/users/u2/notes.md')).toThrow(
      /outside u1's garden; the files that may be written are \/users\/u1\/overview.md/,
    )
  })

  test('history copies live under the user folder, and are not garden files', () => {
    const copy = garden.historyPath(
      '/users/u1/parts/p1/profile.md',
      new Date('2026-11-27T10:00:00.123Z'),
    )
    expect(copy).toBe('/users/u1/.history/parts/p1/profile/2026-11-27T10-00-00.123Z.md')
    expect(garden.isHistory(copy)).toBe(true)
    expect(garden.match(copy)).toBeUndefined()
  })

  test('templates and ids are checked', () => {
    expect(() => createGarden({ userId: '../x' })).toThrow(/userId must be/)
    expect(() => createGarden({ userId: 'u', templates: ['/abs/{userId}.md'] })).toThrow(/relative/)
    expect(() => createGarden({ userId: 'u', templates: ['notes.md'] })).toThrow(/\{userId\}/)
    const custom = createGarden({
      userId: 'u',
      root: '/garden',
      templates: ['{userId}/journal/{day}.md'],
    })
    expect(custom.match('/garden/u/journal/2026-11-27.md')?.params).toEqual({
      userId: 'u',
      day: '2026-11-27',
    })
  })
})
