import { mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FileSystem } from '@agentfs/fs'
import { describe, expect, test } from 'vitest'
import { HostFileSystem, OverlayConflictError } from '../src/index.js'
import { hostOverlay } from './helpers.js'

/** Every file below `dir`, relative, sorted (temporaries included). */
async function files(dir: string): Promise<string[]> {
  return ((await readdir(dir, { recursive: true })) as string[]).sort()
}

describe('commit never loses the user’s newer work', () => {
  test('a file added or edited under a directory the agent removed is a conflict; nothing is applied', async () => {
    for (const userChange of ['add', 'edit'] as const) {
      const { overlay, dir } = await hostOverlay()
      await overlay.writeFile('/README.md', '# Changed by the agent\n')
      await overlay.rm('/src', { recursive: true })
      // Meanwhile the user works in the directory the agent removed.
      if (userChange === 'add') {
        await mkdir(join(dir, 'src/lib/sub'))
        await writeFile(join(dir, 'src/lib/sub/new.txt'), 'my new work')
      } else await writeFile(join(dir, 'src/lib/a.ts'), 'export const a = 2 // edited\n')
      const error = await overlay
        .commit(new HostFileSystem({ root: dir, writable: true }))
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OverlayConflictError)
      const paths = (error as OverlayConflictError).conflicts.map((c) => c.path)
      expect(paths).toContain(userChange === 'add' ? '/src/lib/sub/new.txt' : '/src/lib/a.ts')
      expect(await readFile(join(dir, 'README.md'), 'utf8')).toBe('# Project\n\nLine two.\n')
      expect(await files(join(dir, 'src'))).toContain('lib/a.ts')
    }
  })

  test('a renamed directory whose source the user changed is a conflict too', async () => {
    const { overlay, dir } = await hostOverlay()
    await overlay.rename('/src', '/source')
    await writeFile(join(dir, 'src/lib/later.ts'), 'later')
    await expect(
      overlay.commit(new HostFileSystem({ root: dir, writable: true })),
    ).rejects.toBeInstanceOf(OverlayConflictError)
    expect(await files(dir)).not.toContain('source')
  })
})

/** A target that dies (as a killed process would: nothing more happens) at the Nth rename. */
function dyingTarget(inner: FileSystem, renames: number): FileSystem {
  let count = 0
  let dead = false
  return new Proxy(inner, {
    get(target, key) {
      const value = Reflect.get(target, key, target)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        if (dead) throw new Error('killed')
        if (key === 'rename' && ++count === renames) {
          dead = true
          throw new Error('killed')
        }
        return value.apply(target, args)
      }
    },
  })
}

describe('an interrupted commit is resumable and leaves nothing behind', () => {
  test('killed after 84 of 300 files: the journal says what is pending; the next commit finishes it', async () => {
    const { overlay, dir } = await hostOverlay()
    await overlay.mkdir('/many')
    for (let i = 0; i < 300; i++)
      await overlay.writeFile(`/many/f${String(i).padStart(3, '0')}`, `${i}`)
    const host = new HostFileSystem({ root: dir, writable: true, noFollow: true })
    await expect(overlay.commit(dyingTarget(host, 85))).rejects.toThrow('killed')
    // Half applied, and a temporary file left behind by the "killed" process.
    const before = await files(join(dir, 'many'))
    expect(before.filter((f) => f.startsWith('f'))).toHaveLength(84)
    expect(before.some((f) => f.startsWith('.agentfs-commit-'))).toBe(true)
    const pending = await overlay.pendingCommit()
    expect(pending).toMatchObject({ steps: 301, done: 85 })
    expect(pending?.pending[0]).toBe('/many/f084')
    const result = await overlay.commit(host)
    expect(result.resumed).toBe(true)
    const after = await files(join(dir, 'many'))
    expect(after).toHaveLength(300)
    expect(after.some((f) => f.includes('agentfs-commit'))).toBe(false)
    expect(await readFile(join(dir, 'many/f299'), 'utf8')).toBe('299')
    expect(await overlay.pendingCommit()).toBeUndefined()
    expect(await overlay.diff()).toEqual([])
  })
})

describe('a commit does what it says, and says what it leaves out', () => {
  test('a file replaced by a FIFO stays as it is and is listed as skipped; special bits are dropped', async () => {
    const { overlay, dir } = await hostOverlay()
    await overlay.unlink('/README.md')
    await overlay.mknod('/README.md', 0o010644)
    await overlay.writeFile('/tool', '#!/bin/sh\n')
    await overlay.chmod('/tool', 0o4755)
    const host = new HostFileSystem({ root: dir, writable: true, noFollow: true })
    const result = await overlay.commit(host)
    expect(result.skipped).toEqual([{ path: '/README.md', reason: expect.stringMatching(/FIFO/) }])
    expect(result.droppedBits).toEqual([{ path: '/tool', bits: ['setuid'] }])
    expect(await readFile(join(dir, 'README.md'), 'utf8')).toMatch(/^# Project/)
    expect((await stat(join(dir, 'tool'))).mode & 0o7777).toBe(0o755)
  })
})

describe('commit never follows a link or a crafted path out of the base', () => {
  test('a crafted whiteout below a base link to the outside changes nothing outside', async () => {
    const { overlay, dir, db } = await hostOverlay()
    const outside = `${dir}-outside`
    await mkdir(outside, { recursive: true })
    await mkdir(join(outside, 'victim-dir'))
    await writeFile(join(outside, 'victim.txt'), 'precious')
    await writeFile(join(outside, 'victim-dir', 'data'), 'precious')
    await symlink(outside, join(dir, 'link'))
    await db.execute({
      sql: "INSERT INTO fs_whiteout (path, parent_path, created_at) VALUES ('/link/victim.txt', '/link', 0), ('/link/victim-dir', '/link', 0)",
    })
    await overlay.commit(new HostFileSystem({ root: dir, writable: true })).catch(() => undefined)
    expect(await readFile(join(outside, 'victim.txt'), 'utf8')).toBe('precious')
    expect(await readFile(join(outside, 'victim-dir', 'data'), 'utf8')).toBe('precious')
  })

  test('a dentry named ../victim.txt is refused before anything is applied', async () => {
    const { overlay, dir, db } = await hostOverlay()
    await overlay.writeFile('/README.md', 'changed')
    await overlay.writeFile('/x.txt', 'x')
    await db.execute({ sql: "UPDATE fs_dentry SET name = '../victim.txt' WHERE name = 'x.txt'" })
    const error = await overlay
      .commit(new HostFileSystem({ root: dir, writable: true }))
      .catch((e: { code?: string }) => e)
    expect((error as { code?: string }).code).toBe('EIO')
    expect(await readFile(join(dir, 'README.md'), 'utf8')).toBe('# Project\n\nLine two.\n')
    await expect(readFile(join(dir, '..', 'victim.txt'))).rejects.toThrow(/ENOENT/)
  })
})
