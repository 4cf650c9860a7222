import DiffMatchPatch from 'diff-match-patch'
import { describe, expect, test } from 'vitest'
import { applyTextPatch } from '../src/index.js'
import { freshFs } from './helpers.js'

const dmp = new DiffMatchPatch()
const patchOf = (before: string, after: string) => dmp.patch_toText(dmp.patch_make(before, after))

describe('applyTextPatch (diff-match-patch, as the Stream-FS RFC)', () => {
  test('applies a patch made against the file, and one whose context moved (fuzzy placement)', async () => {
    const { fs } = await freshFs('better-sqlite3')
    // The RFC's example event (its range counts the 12 characters of the context).
    await fs.writeFile('/h.txt', 'Hello, World')
    const result = await fs.applyTextPatch('/h.txt', '@@ -1,12 +1,13 @@\n Hello, World\n+!\n')
    expect(await fs.readFile('/h.txt', 'utf8')).toBe('Hello, World!')
    expect(result).toEqual({ applied: 1, version: (await fs.stat('/h.txt')).version })
    const base = 'The quick brown fox jumps over the lazy dog.\n'
    const patch = patchOf(base, base.replace('lazy', 'sleepy'))
    await fs.writeFile('/f.txt', `A new first line pushed everything down.\n${base}`)
    await fs.applyTextPatch('/f.txt', patch)
    expect(await fs.readFile('/f.txt', 'utf8')).toBe(
      'A new first line pushed everything down.\nThe quick brown fox jumps over the sleepy dog.\n',
    )
  })

  test('a patch whose context is not in the file is refused (PATCH_FAILED) and nothing is written', async () => {
    const { fs } = await freshFs('better-sqlite3')
    const before = 'alpha beta gamma\n'.repeat(3)
    await fs.writeFile('/a.txt', 'one\ntwo\n')
    await fs.writeFile('/b.txt', before)
    const version = (await fs.stat('/b.txt')).version
    const patch = patchOf('completely different content here\n', 'changed\n')
    await expect(fs.applyTextPatch('/b.txt', patch)).rejects.toMatchObject({
      code: 'PATCH_FAILED',
      message: expect.stringMatching(/hunks? 1.* did not apply to \/b\.txt/),
    })
    expect(await fs.readFile('/b.txt', 'utf8')).toBe(before)
    expect((await fs.stat('/b.txt')).version).toBe(version)
  })

  test('only every hunk or none: one failing hunk of two leaves the file unchanged', async () => {
    const { fs } = await freshFs('better-sqlite3')
    const text = `${'head line\n'.repeat(1)}${'x'.repeat(200)}\nmiddle\n${'y'.repeat(200)}\ntail line\n`
    await fs.writeFile('/t.txt', text)
    const good = dmp.patch_make(text, text.replace('head line', 'HEAD LINE'))
    const bad = dmp.patch_make('zzzz qqqq wwww tail stuff\n', 'zzzz qqqq wwww TAIL stuff\n')
    await expect(
      fs.applyTextPatch('/t.txt', dmp.patch_toText([...good, ...bad])),
    ).rejects.toMatchObject({ code: 'PATCH_FAILED' })
    expect(await fs.readFile('/t.txt', 'utf8')).toBe(text)
  })

  test('ifMatch refuses a file changed since the patch was made (CONFLICT)', async () => {
    const { fs } = await freshFs('better-sqlite3')
    await fs.writeFile('/c.txt', 'v1\n')
    const v1 = (await fs.stat('/c.txt')).version
    await fs.writeFile('/c.txt', 'v1\nmore\n')
    await expect(
      fs.applyTextPatch('/c.txt', patchOf('v1\n', 'v2\n'), { ifMatch: v1 }),
    ).rejects.toMatchObject({ code: 'CONFLICT' })
    expect(await fs.readFile('/c.txt', 'utf8')).toBe('v1\nmore\n')
  })

  test('bad input is refused with a typed error: not a patch, a directory, a binary file, a missing file', async () => {
    const { fs } = await freshFs('better-sqlite3')
    await fs.mkdir('/d')
    await fs.writeFile('/bin', new Uint8Array([0xff, 0xfe, 0x00, 0x80]))
    const patch = patchOf('a\n', 'b\n')
    await expect(fs.applyTextPatch('/d', 'not a patch')).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(fs.applyTextPatch('/d', '')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(fs.applyTextPatch('/d', patch)).rejects.toMatchObject({ code: 'EISDIR' })
    await expect(fs.applyTextPatch('/bin', patch)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('not UTF-8 text'),
    })
    await expect(fs.applyTextPatch('/none', patch)).rejects.toMatchObject({ code: 'ENOENT' })
  })

  test('the standalone function works on any FileSystem', async () => {
    const { fs } = await freshFs('better-sqlite3')
    await fs.writeFile('/s.txt', 'abc\n')
    await applyTextPatch(fs, '/s.txt', patchOf('abc\n', 'abd\n'))
    expect(await fs.readFile('/s.txt', 'utf8')).toBe('abd\n')
  })
})
