import { describe, expect, test } from 'vitest'
import { createFileSystem } from '../src/index.js'
import { code, freshFs } from './helpers.js'

const VERSIONS = { feed: { versions: true } } as const

describe('fs.undelete and fs.deleted', () => {
  test('a deleted file comes back with its last content and mode, as a new change with a message', async () => {
    const { fs } = await freshFs('better-sqlite3', VERSIONS)
    await fs.mkdir('/notes')
    await fs.writeFile('/notes/plan.md', 'one\n')
    await fs.writeFile('/notes/plan.md', 'two\n', { mode: 0o600 })
    await fs.chmod('/notes/plan.md', 0o600)
    await fs.unlink('/notes/plan.md')
    const [listed] = await fs.deleted('/notes')
    expect(listed).toMatchObject({ path: '/notes/plan.md', op: 'unlink', recoverable: 'version' })
    const back = await fs.undelete('/notes/plan.md')
    expect(back).toMatchObject({ kind: 'file', from: ['version'], files: 1, bytes: 4 })
    expect(await fs.readFile('/notes/plan.md', 'utf8')).toBe('two\n')
    const [newest] = await fs.history('/notes/plan.md')
    expect(newest).toMatchObject({ op: 'create' })
    expect(newest!.message).toBe(`undelete /notes/plan.md (deleted by change #${listed!.seq})`)
    // It exists now: not listed, and a second undelete is refused without a change.
    expect(await fs.deleted('/notes')).toEqual([])
    expect(await code(fs.undelete('/notes/plan.md'))).toBe('EEXIST')
  })

  test('a directory tree comes back from versions; parents are made; a snapshot holds the rest', async () => {
    const { fs } = await freshFs('better-sqlite3', VERSIONS)
    await fs.mkdir('/d/e', { recursive: true })
    await fs.writeFile('/d/e/a.txt', 'a')
    await fs.writeFile('/d/b.txt', 'b')
    await fs.writeFile('/d/gone.txt', 'deleted before the tree')
    await fs.unlink('/d/gone.txt')
    await fs.rename('/d/b.txt', '/d/c.txt')
    await fs.rm('/d', { recursive: true })
    const back = await fs.undelete('/d', { message: 'bring the tree back' })
    expect(back).toMatchObject({ kind: 'directory', from: ['version'], files: 2 })
    expect(await fs.readFile('/d/e/a.txt', 'utf8')).toBe('a')
    expect(await fs.readFile('/d/c.txt', 'utf8')).toBe('b')
    expect(await fs.exists('/d/gone.txt')).toBe(false)
    expect((await fs.history('/d/c.txt'))[0]!.message).toBe('bring the tree back')
  })

  test('refusals: never deleted, nothing kept, the root, and a failure changes nothing', async () => {
    const { fs } = await freshFs('better-sqlite3')
    expect(await code(fs.undelete('/never'))).toBe('ENOENT')
    expect(await code(fs.undelete('/'))).toBe('EINVAL')
    await fs.writeFile('/f', 'x')
    await fs.unlink('/f')
    expect(await code(fs.undelete('/f'))).toBe('ENOENT')
    expect(await fs.deleted()).toEqual([expect.objectContaining({ path: '/f', recoverable: null })])
    // A file now where the parent was: the undelete fails and leaves nothing behind.
    const v = await freshFs('better-sqlite3', VERSIONS)
    await v.fs.mkdir('/p')
    await v.fs.writeFile('/p/q', 'q')
    await v.fs.unlink('/p/q')
    await v.fs.rmdir('/p')
    await v.fs.writeFile('/p', 'a file now')
    expect(await code(v.fs.undelete('/p/q'))).toMatch(/^(EEXIST|ENOTDIR)$/)
    expect(await v.fs.exists('/p/q')).toBe(false)
    expect(await v.fs.readFile('/p', 'utf8')).toBe('a file now')
    expect(await code(v.fs.deleted('/', { limit: 0 }))).toBe('EINVAL')
  })
})

test('fs.deleted applies the policy before the limit: hidden paths do not take places', async () => {
  const { fs: all, db } = await freshFs('better-sqlite3', VERSIONS)
  await all.mkdir('/open')
  await all.mkdir('/secret')
  for (let i = 0; i < 5; i++) await all.writeFile(`/open/f${i}`, `${i}`)
  for (let i = 0; i < 5; i++) await all.writeFile(`/secret/s${i}`, `${i}`)
  for (let i = 0; i < 5; i++) await all.unlink(`/open/f${i}`)
  // The newest deletions are of paths the policy hides.
  for (let i = 0; i < 5; i++) await all.unlink(`/secret/s${i}`)
  const fs = createFileSystem(db, { ...VERSIONS, policy: { read: ['/open/**'] } })
  const listed = await fs.deleted('/', { limit: 3 })
  expect(listed.map((d) => d.path)).toEqual(['/open/f4', '/open/f3', '/open/f2'])
})
