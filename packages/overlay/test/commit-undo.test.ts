import { chmod, rename, stat, symlink, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import {
  commitUndoable,
  HostFileSystem,
  pendingCommit,
  UndoConflictError,
  undoCommit,
} from '../src/index.js'
import { hostOverlay } from './helpers.js'

/** An overlay over the standard tree, with changes of every kind a commit can make. */
async function committed() {
  const setup = await hostOverlay()
  const { overlay, dir } = setup
  await chmod(join(dir, 'docs/guide.md'), 0o640)
  await utimes(join(dir, 'src/lib/a.ts'), 1_000_000, 1_000_000)
  const before = await setup.snapshot()
  await overlay.rm('/src', { recursive: true }) // a directory with a tree below it
  await overlay.rm('/README.md')
  await overlay.mkdir('/README.md') // a file replaced by a directory
  await overlay.writeFile('/README.md/inside.txt', 'inside')
  await overlay.unlink('/latest')
  await overlay.symlink('README.md', '/latest') // a link pointing elsewhere
  await overlay.writeFile('/docs/guide.md', 'rewritten') // bytes and mode
  await overlay.chmod('/docs/guide.md', 0o600)
  await overlay.mkdir('/new/a', { recursive: true })
  await overlay.writeFile('/new/a/b.txt', 'new')
  const target = new HostFileSystem({ root: dir, writable: true })
  await overlay.commit(target, { undoId: 'c1' })
  return { ...setup, before, target }
}

describe('undoCommit: a commit taken back on the host', () => {
  test('every path comes back as it was: bytes, modes, times, links, trees below removed directories', async () => {
    const { dir, db, before, target, snapshot } = await committed()
    const after = await snapshot()
    expect(after).not.toEqual(before)
    expect(after).toContain('/new/a/b.txt file 644 size=3 nlink=1 6e6577')
    expect(await commitUndoable(db, 'c1')).toBe(true)
    const result = await undoCommit(db, target, 'c1')
    expect(await snapshot()).toEqual(before)
    expect((await stat(join(dir, 'src/lib/a.ts'))).mtimeMs).toBe(1_000_000_000)
    expect(result.restored).toContain('/src/lib/a.ts')
    expect(result.restored).toContain('/new')
    expect(result.tokens.get('/docs/guide.md')).toBe((await target.lstat('/docs/guide.md')).version)
    // Once: the record is gone, and no temporary file is left.
    expect(await commitUndoable(db, 'c1')).toBe(false)
    await expect(undoCommit(db, target, 'c1')).rejects.toThrow(/no finished commit "c1"/)
    expect((await snapshot()).filter((line) => line.includes('.agentfs-'))).toEqual([])
  })

  test('refused, changing nothing, when the host changed since the commit', async () => {
    const { dir, db, target, snapshot } = await committed()
    await writeFile(join(dir, 'docs/guide.md'), 'edited by the user')
    await writeFile(join(dir, 'new/a/mine.txt'), 'mine')
    const changed = await snapshot()
    const error = await undoCommit(db, target, 'c1').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UndoConflictError)
    expect((error as UndoConflictError).conflicts.map((c) => c.path).sort()).toEqual([
      '/docs/guide.md',
      '/new/a/mine.txt',
    ])
    expect(await snapshot()).toEqual(changed)
    expect(await commitUndoable(db, 'c1')).toBe(true)
  })

  test('never through a link: a directory on the way swapped for a link after the commit is refused before any change', async () => {
    const { dir, db, target, snapshot } = await committed()
    // /docs (which the commit did not change) becomes a link to the same directory: the
    // rewritten /docs/guide.md, reached through it, still has the version the record expects.
    await rename(join(dir, 'docs'), join(dir, 'moved'))
    await symlink('moved', join(dir, 'docs'))
    const now = await snapshot()
    await expect(undoCommit(db, target, 'c1')).rejects.toThrow()
    expect(await snapshot()).toEqual(now)
    expect(await commitUndoable(db, 'c1')).toBe(true)
  })

  test('a commit without an undo id keeps nothing; a crafted record is refused before any change', async () => {
    const plain = await hostOverlay()
    await plain.overlay.writeFile('/x.txt', 'x')
    await plain.overlay.commit(new HostFileSystem({ root: plain.dir, writable: true }))
    expect(await commitUndoable(plain.db, 'c1')).toBe(false)
    expect(await pendingCommit(plain.db)).toBeUndefined()

    const { db, target, snapshot } = await committed()
    const now = await snapshot()
    await db.execute({
      sql: "UPDATE agentfs_overlay_undo_entry SET path = '/docs/../../escape' WHERE path = '/docs/guide.md'",
    })
    await expect(undoCommit(db, target, 'c1')).rejects.toThrow(/undo cannot use/)
    expect(await snapshot()).toEqual(now)
  })
})
