import { describe, expect, test } from 'vitest'
import { code, DRIVERS, freshFs } from './helpers.js'

for (const driver of Object.keys(DRIVERS)) {
  describe(`directories and symlinks (${driver})`, () => {
    test('mkdir, recursive mkdir, readdir (names, types, recursive), rmdir', async () => {
      const { fs } = await freshFs(driver)
      expect(await fs.mkdir('/a')).toBeUndefined()
      expect(await code(fs.mkdir('/a'))).toBe('EEXIST')
      expect(await fs.mkdir('/a/b/c', { recursive: true })).toBe('/a/b')
      expect(await fs.mkdir('/a/b/c', { recursive: true })).toBeUndefined()
      expect(await code(fs.mkdir('/x/y'))).toBe('ENOENT')
      await fs.writeFile('/a/file', 'x')
      expect(await code(fs.mkdir('/a/file/sub', { recursive: true }))).toBe('ENOTDIR')
      expect(await code(fs.mkdir('/a/file', { recursive: true }))).toBe('EEXIST')
      expect(await fs.readdir('/a')).toEqual(['b', 'file'])
      const typed = await fs.readdir('/a', { withFileTypes: true })
      expect(typed.map((d) => [d.name, d.isDirectory(), d.parentPath])).toEqual([
        ['b', true, '/a'],
        ['file', false, '/a'],
      ])
      expect(await fs.readdir('/', { recursive: true })).toEqual(['a', 'a/b', 'a/b/c', 'a/file'])
      const deep = await fs.readdir('/a', { recursive: true, withFileTypes: true })
      expect(deep.map((d) => `${d.parentPath}|${d.name}`)).toEqual(['/a|b', '/a/b|c', '/a|file'])
      expect((await fs.stat('/a')).mode).toBe(0o40755)
      expect(await code(fs.readdir('/a/file'))).toBe('ENOTDIR')
      expect(await code(fs.rmdir('/a'))).toBe('ENOTEMPTY')
      expect(await code(fs.rmdir('/a/file'))).toBe('ENOTDIR')
      expect(await code(fs.rmdir('/'))).toBe('EPERM')
      await fs.rmdir('/a/b/c')
      expect(await fs.readdir('/a/b')).toEqual([])
    })

    test('rm: files, recursive trees, force', async () => {
      const { fs, db } = await freshFs(driver, { chunkSize: 64 })
      await fs.mkdir('/t/u/v', { recursive: true })
      await fs.writeFile('/t/u/v/f', 'z'.repeat(200))
      await fs.writeFile('/keep', 'k')
      await fs.link('/keep', '/t/u/hard')
      expect(await code(fs.rm('/t'))).toBe('EISDIR')
      await fs.rm('/t', { recursive: true })
      expect(await fs.exists('/t')).toBe(false)
      expect((await fs.stat('/keep')).nlink).toBe(1)
      const counts = await db.execute<{ inodes: number; chunks: number; dentries: number }>({
        sql: 'SELECT (SELECT COUNT(*) FROM fs_inode) AS inodes, (SELECT COUNT(*) FROM fs_data) AS chunks, (SELECT COUNT(*) FROM fs_dentry) AS dentries',
      })
      expect(counts.rows[0]).toEqual({ inodes: 2, chunks: 1, dentries: 1 })
      expect(await code(fs.rm('/missing'))).toBe('ENOENT')
      await fs.rm('/missing', { force: true })
      expect(await code(fs.rm('/'))).toBe('EPERM')
    })

    test('rename: files, directories, replace, and every POSIX refusal', async () => {
      const { fs } = await freshFs(driver)
      await fs.mkdir('/d1/sub', { recursive: true })
      await fs.mkdir('/d2')
      await fs.writeFile('/d1/f', 'f')
      await fs.writeFile('/g', 'g')
      await fs.rename('/d1/f', '/d2/f2')
      expect(await fs.readFile('/d2/f2', 'utf8')).toBe('f')
      expect(await fs.exists('/d1/f')).toBe(false)
      await fs.rename('/g', '/d2/f2')
      expect(await fs.readFile('/d2/f2', 'utf8')).toBe('g')
      await fs.rename('/d1', '/d3')
      expect(await fs.readdir('/d3')).toEqual(['sub'])
    })

    test('rename refusals', async () => {
      const { fs } = await freshFs(driver)
      await fs.mkdir('/dir/sub', { recursive: true })
      await fs.mkdir('/full')
      await fs.writeFile('/full/x', 'x')
      await fs.mkdir('/empty')
      await fs.writeFile('/file', 'f')
      expect(await code(fs.rename('/dir', '/dir/sub/inside'))).toBe('EINVAL')
      expect(await code(fs.rename('/dir', '/full'))).toBe('ENOTEMPTY')
      expect(await code(fs.rename('/dir', '/file'))).toBe('ENOTDIR')
      expect(await code(fs.rename('/file', '/empty'))).toBe('EISDIR')
      expect(await code(fs.rename('/missing', '/x'))).toBe('ENOENT')
      expect(await code(fs.rename('/file', '/nodir/x'))).toBe('ENOENT')
      expect(await code(fs.rename('/', '/x'))).toBe('EBUSY')
      await fs.rename('/dir', '/empty')
      expect(await fs.readdir('/empty')).toEqual(['sub'])
      await fs.rename('/file', '/file')
      expect(await fs.readFile('/file', 'utf8')).toBe('f')
      const error = await fs.rename('/missing', '/x').catch((e: unknown) => e)
      expect((error as Error).message).toBe(
        "ENOENT: no such file or directory, rename '/missing' -> '/x'",
      )
    })

    test('symlinks: absolute and relative targets, lstat vs stat, readlink, realpath', async () => {
      const { fs } = await freshFs(driver)
      await fs.mkdir('/real/dir', { recursive: true })
      await fs.writeFile('/real/dir/file.txt', 'through the link')
      await fs.symlink('/real/dir', '/abs')
      await fs.symlink('real/dir/file.txt', '/rel')
      await fs.mkdir('/other')
      await fs.symlink('../real', '/other/up')
      expect(await fs.readFile('/abs/file.txt', 'utf8')).toBe('through the link')
      expect(await fs.readFile('/rel', 'utf8')).toBe('through the link')
      expect(await fs.readFile('/other/up/dir/file.txt', 'utf8')).toBe('through the link')
      expect((await fs.lstat('/abs')).isSymbolicLink()).toBe(true)
      expect((await fs.lstat('/abs')).size).toBe('/real/dir'.length)
      expect((await fs.stat('/abs')).isDirectory()).toBe(true)
      expect(await fs.readlink('/rel')).toBe('real/dir/file.txt')
      expect(await code(fs.readlink('/real'))).toBe('EINVAL')
      expect(await fs.realpath('/other/up/dir/../dir/file.txt')).toBe('/real/dir/file.txt')
      expect(await fs.realpath('/')).toBe('/')
      expect(await fs.readdir('/abs')).toEqual(['file.txt'])
      // Writing through a link writes the target; unlink removes the link only.
      await fs.writeFile('/rel', 'rewritten')
      expect(await fs.readFile('/real/dir/file.txt', 'utf8')).toBe('rewritten')
      await fs.unlink('/rel')
      expect(await fs.exists('/real/dir/file.txt')).toBe(true)
      expect(await code(fs.symlink('x', '/abs'))).toBe('EEXIST')
    })

    test('.. is resolved physically through symlinked directories', async () => {
      const { fs } = await freshFs(driver)
      await fs.mkdir('/a/b', { recursive: true })
      await fs.mkdir('/c')
      await fs.writeFile('/a/marker', 'a')
      await fs.writeFile('/marker', 'root')
      await fs.symlink('/a/b', '/c/link')
      // /c/link/.. is /a (the parent of the link's target), not /c.
      expect(await fs.readFile('/c/link/../marker', 'utf8')).toBe('a')
      expect(await fs.readFile('/../../marker', 'utf8')).toBe('root')
    })

    test('dangling links, loops (ELOOP after 40), trailing slashes', async () => {
      const { fs } = await freshFs(driver)
      await fs.symlink('/nowhere', '/dangling')
      expect(await code(fs.stat('/dangling'))).toBe('ENOENT')
      expect((await fs.lstat('/dangling')).isSymbolicLink()).toBe(true)
      // Creating through a dangling link creates its target.
      await fs.writeFile('/dangling', 'made')
      expect(await fs.readFile('/nowhere', 'utf8')).toBe('made')
      await fs.symlink('/loop2', '/loop1')
      await fs.symlink('/loop1', '/loop2')
      expect(await code(fs.stat('/loop1'))).toBe('ELOOP')
      expect(await code(fs.readFile('/loop1/x'))).toBe('ELOOP')
      let previous = '/chain0'
      await fs.writeFile(previous, 'end')
      for (let i = 1; i <= 41; i++) {
        await fs.symlink(previous, `/chain${i}`)
        previous = `/chain${i}`
      }
      expect(await fs.readFile('/chain40', 'utf8')).toBe('end')
      expect(await code(fs.readFile('/chain41'))).toBe('ELOOP')
      await fs.mkdir('/dir')
      expect((await fs.stat('/dir/')).isDirectory()).toBe(true)
      expect(await code(fs.stat('/nowhere/'))).toBe('ENOTDIR')
    })
  })
}
