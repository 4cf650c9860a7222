import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import {
  HostFileSystem,
  MergeConflictError,
  OverlayConflictError,
  rebaseOverlayTokens,
  undoCommit,
} from '../src/index.js'
import { hostOverlay } from './helpers.js'

const LINES = 'one\ntwo\nthree\nfour\nfive\n'

/** An overlay over a host file both the overlay and the host then change. */
async function bothChanged(overlayText: string, hostText: string, base = LINES) {
  const setup = await hostOverlay({ '/notes.md': base, '/keep.txt': 'untouched\n' })
  await setup.overlay.writeFile('/notes.md', overlayText)
  await writeFile(join(setup.dir, 'notes.md'), hostText)
  const target = new HostFileSystem({ root: setup.dir, writable: true })
  const host = () => readFile(join(setup.dir, 'notes.md'), 'utf8')
  return { ...setup, target, host }
}

const kept = async (setup: Awaited<ReturnType<typeof hostOverlay>>) =>
  (
    await setup.db.execute<{ path: string }>({
      sql: 'SELECT path FROM agentfs_overlay_base_content ORDER BY path',
    })
  ).rows.map((r) => r.path)

describe('an overlay of a host directory merges a file both sides changed', () => {
  test('a copy-up keeps the base text as the ancestor', async () => {
    const setup = await bothChanged('ONE\ntwo\nthree\nfour\nfive\n', LINES)
    expect(Buffer.from((await setup.overlay.ancestor('/notes.md'))!).toString()).toBe(LINES)
    expect(await setup.overlay.ancestor('/keep.txt')).toBeUndefined()
    expect(await kept(setup)).toEqual(['/notes.md'])
  })

  test('edits in different places both land, in one commit; the default still refuses', async () => {
    const setup = await bothChanged(
      'ONE (overlay)\ntwo\nthree\nfour\nfive\n',
      'one\ntwo\nthree\nfour\nFIVE (host)\n',
    )
    // Without merge the refusal stays the default.
    await expect(setup.overlay.commit(setup.target)).rejects.toBeInstanceOf(OverlayConflictError)
    expect(await setup.host()).toBe('one\ntwo\nthree\nfour\nFIVE (host)\n')
    const result = await setup.overlay.commit(setup.target, { merge: true })
    expect(result.merged).toEqual(['/notes.md'])
    expect(await setup.host()).toBe('ONE (overlay)\ntwo\nthree\nfour\nFIVE (host)\n')
    // The delta is discarded and, with no snapshot naming them, so are the ancestors.
    expect(await kept(setup)).toEqual([])
  })

  test('edits of the same lines are a conflict with both sides and the ancestor; nothing is applied', async () => {
    const setup = await bothChanged(
      'one\nTWO (overlay)\nthree\nfour\nfive\n',
      'one\nTWO (host)\nthree\nfour\nfive\n',
    )
    await setup.overlay.writeFile('/new.txt', 'also pending')
    const error = await setup.overlay.commit(setup.target, { merge: true }).catch((e) => e)
    expect(error).toBeInstanceOf(MergeConflictError)
    const [file] = (error as MergeConflictError).merges
    expect(file!.path).toBe('/notes.md')
    expect(file!.hunks).toHaveLength(1)
    expect(file!.hunks[0]).toMatchObject({
      ours: 'TWO (overlay)\n',
      base: 'two\n',
      theirs: 'TWO (host)\n',
      oursLine: 2,
    })
    // Nothing reached the host; the overlay keeps its edit and its ancestor.
    expect(await setup.host()).toBe('one\nTWO (host)\nthree\nfour\nfive\n')
    await expect(readFile(join(setup.dir, 'new.txt'))).rejects.toMatchObject({ code: 'ENOENT' })
    expect(await setup.overlay.readFile('/notes.md', 'utf8')).toBe(
      'one\nTWO (overlay)\nthree\nfour\nfive\n',
    )
    expect(await kept(setup)).toEqual(['/notes.md'])
    // Written in the overlay, the resolution alone still conflicts with the old ancestor...
    await setup.overlay.writeFile('/notes.md', 'one\nTWO (both)\nthree\nfour\nfive\n')
    await expect(setup.overlay.commit(setup.target, { merge: true })).rejects.toBeInstanceOf(
      MergeConflictError,
    )
    // ...marked resolved against the host's version, it goes through.
    await setup.overlay.resolve('/notes.md')
    expect(Buffer.from((await setup.overlay.ancestor('/notes.md'))!).toString()).toBe(
      'one\nTWO (host)\nthree\nfour\nfive\n',
    )
    await setup.overlay.commit(setup.target, { merge: true })
    expect(await setup.host()).toBe('one\nTWO (both)\nthree\nfour\nfive\n')
    expect(await readFile(join(setup.dir, 'new.txt'), 'utf8')).toBe('also pending')
  })

  test('a host change after the resolution is merged against the version resolved', async () => {
    const setup = await bothChanged(
      'one\nTWO (overlay)\nthree\nfour\nfive\n',
      'one\nTWO (host)\nthree\nfour\nfive\n',
    )
    await setup.overlay.writeFile('/notes.md', 'one\nTWO (both)\nthree\nfour\nfive\n')
    await setup.overlay.resolve('/notes.md')
    await writeFile(join(setup.dir, 'notes.md'), 'one\nTWO (host)\nthree\nfour\nFIVE (later)\n')
    await expect(setup.overlay.commit(setup.target)).rejects.toBeInstanceOf(OverlayConflictError)
    await setup.overlay.commit(setup.target, { merge: true })
    expect(await setup.host()).toBe('one\nTWO (both)\nthree\nfour\nFIVE (later)\n')
    await expect(setup.overlay.resolve('/absent.txt')).rejects.toMatchObject({ code: 'ENOENT' })
  })

  test('binary files and files copied up without an ancestor stay conflicts', async () => {
    const setup = await hostOverlay({ '/blob.bin': 'replaced below\n' })
    await writeFile(join(setup.dir, 'blob.bin'), Buffer.from([0, 1, 2, 10, 3, 4, 10]))
    await setup.overlay.writeFile('/blob.bin', Buffer.from([0, 9, 2, 10, 3, 4, 10]))
    await writeFile(join(setup.dir, 'blob.bin'), Buffer.from([0, 1, 2, 10, 3, 9, 10, 10]))
    const target = new HostFileSystem({ root: setup.dir, writable: true })
    const error = (await setup.overlay
      .commit(target, { merge: true })
      .catch((e) => e)) as MergeConflictError
    expect(error).toBeInstanceOf(MergeConflictError)
    expect(error.merges[0]).toMatchObject({ path: '/blob.bin', hunks: [] })
    expect(error.merges[0]!.reason).toMatch(/the version it started from is not known/)
  })

  test('a base changed again after the copy-up is merged against what the overlay copied', async () => {
    const setup = await bothChanged('one\ntwo\nthree\nfour\nfive\nsix (overlay)\n', LINES)
    await writeFile(join(setup.dir, 'notes.md'), 'zero (host)\none\ntwo\nthree\nfour\nfive\n')
    await writeFile(join(setup.dir, 'notes.md'), 'zero (host)\none\ntwo\nTHREE\nfour\nfive\n')
    await setup.overlay.commit(setup.target, { merge: true })
    expect(await setup.host()).toBe('zero (host)\none\ntwo\nTHREE\nfour\nfive\nsix (overlay)\n')
  })

  test('undo of a merging commit leaves the merged path stale, so the next commit sees the host change again', async () => {
    const setup = await bothChanged(
      'ONE (overlay)\ntwo\nthree\nfour\nfive\n',
      'one\ntwo\nthree\nfour\nFIVE (host)\n',
    )
    await setup.overlay.writeFile('/keep.txt', 'edited\n')
    const result = await setup.overlay.commit(setup.target, { merge: true, undoId: 'm1' })
    expect(result.merged).toEqual(['/notes.md'])
    const undone = await undoCommit(setup.db, setup.target, 'm1')
    expect(await setup.host()).toBe('one\ntwo\nthree\nfour\nFIVE (host)\n')
    // The path the commit merged is not rebased (the host had its own change there); the
    // plain edit is.
    expect([...undone.tokens.keys()]).toEqual(['/keep.txt'])
    await rebaseOverlayTokens(setup.db, undone.tokens)
  })
})
