import { describe, expect, test } from 'vitest'
import { createFileSystem } from '../src/index.js'
import { code, DRIVERS, freshFs } from './helpers.js'

// Reads by inode number (`fs.inodes`): what the FUSE mount answers getattr and lookup with.
for (const driver of Object.keys(DRIVERS)) {
  describe(`inode reads (${driver})`, () => {
    test('stat and lookup by inode give what lstat gives, for every kind of file', async () => {
      const { fs } = await freshFs(driver)
      const inodes = fs.inodes!
      await fs.mkdir('/d/sub', { recursive: true })
      await fs.writeFile('/d/f', 'hello')
      await fs.symlink('f', '/d/link')
      await fs.link('/d/f', '/d/hard')
      const dir = await fs.lstat('/d')
      expect(await inodes.stat(inodes.root)).toEqual(await fs.lstat('/'))
      expect(await inodes.stat(dir.ino)).toEqual(dir)
      for (const name of ['sub', 'f', 'link', 'hard'])
        expect(await inodes.lookup(dir.ino, name)).toEqual(await fs.lstat(`/d/${name}`))
      expect(await inodes.lookup(dir.ino, 'missing')).toBeUndefined()
      expect((await inodes.lookup(inodes.root, 'd'))?.ino).toBe(dir.ino)
    })

    test('finds a file by its inode after it was renamed, and nothing once it is freed', async () => {
      const { fs } = await freshFs(driver)
      const inodes = fs.inodes!
      await fs.mkdir('/a')
      await fs.writeFile('/a/f', 'x')
      const a = await fs.lstat('/a')
      const f = await fs.lstat('/a/f')
      await fs.rename('/a', '/b')
      expect((await inodes.lookup(a.ino, 'f'))?.ino).toBe(f.ino)
      await fs.rm('/b', { recursive: true })
      expect(await code(inodes.stat(f.ino))).toBe('ENOENT')
      expect(await code(inodes.lookup(a.ino, 'f'))).toBe('ENOENT')
    })

    test('refuses what no directory or entry can be', async () => {
      const { fs } = await freshFs(driver)
      const inodes = fs.inodes!
      await fs.writeFile('/f', 'x')
      const f = await fs.lstat('/f')
      expect(await code(inodes.lookup(f.ino, 'x'))).toBe('ENOTDIR')
      for (const name of ['', '.', '..', 'a/b', 'a\0b', '\uD800'])
        expect(await code(inodes.lookup(inodes.root, name))).toBe('EINVAL')
      expect(await code(inodes.lookup(inodes.root, 'é'.repeat(128)))).toBe('ENAMETOOLONG')
      for (const ino of [0, -1, 1.5, Number.NaN, 2 ** 60])
        expect(await code(inodes.stat(ino))).toBe('EINVAL')
    })
  })
}

describe('inode reads', () => {
  test('are not offered where a path decides: a policy, or permissions enforced', async () => {
    const { fs, db } = await freshFs('better-sqlite3')
    expect(fs.inodes).toBeDefined()
    expect(fs.restrict({ read: ['/ws/**'] }).inodes).toBeUndefined()
    expect(createFileSystem(db, { permissions: 'enforce', uid: 1000, gid: 1000 }).inodes).toBe(
      undefined,
    )
  })
})
