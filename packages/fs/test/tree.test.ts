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

    test('readdir withStats: each entry with its lstat, from one listing', async () => {
      const { fs } = await freshFs(driver, { chunkSize: 64 })
      await fs.mkdir('/d/sub', { recursive: true })
      await fs.writeFile('/d/small', 'abc')
      await fs.symlink('small', '/d/link')
      // A sparse file past the threshold: blocks count its stored chunks only.
      const handle = await fs.open('/d/sparse', 'w')
      await handle.write(Buffer.from('end'), 0, 3, 200_000)
      await handle.close()
      const listed = await fs.readdir('/d', { withFileTypes: true, withStats: true })
      expect(listed.map((d) => d.name)).toEqual(['link', 'small', 'sparse', 'sub'])
      for (const entry of listed) {
        const stats = entry.stats
        expect(stats).toBeDefined()
        expect({ ...stats }).toEqual({ ...(await fs.lstat(`/d/${entry.name}`)) })
      }
      expect(listed[2]?.stats?.blocks).toBeLessThan(200_000 / 512)
      // Without withFileTypes it is a list of names; without withStats no stats are read.
      expect(await fs.readdir('/d', { withStats: true })).toEqual([
        'link',
        'small',
        'sparse',
        'sub',
      ])
      const plain = await fs.readdir('/d', { withFileTypes: true })
      expect(plain[0]?.stats).toBeUndefined()
    })

    test('rm: files, recursive trees, force', async () => {
      const { fs, db } = await freshFs(driver, { chunkSize: 64 })
      await fs.mkdir('/t/u/v', { recursive: true })
      await fs.writeFile('/t/u/v/f', 'z'.repeat(200))
      await fs.writeFile('/keep', 'k')
      await fs.link('/keep', '/t/u/hard')
      // Two links inside the tree (removed together), and a symlink.
      await fs.link('/t/u/v/f', '/t/u/f2')
      await fs.symlink('/keep', '/t/u/ln')
      expect(await code(fs.rm('/t'))).toBe('EISDIR')
      await fs.rm('/t', { recursive: true })
      expect(await fs.exists('/t')).toBe(false)
      expect((await fs.stat('/keep')).nlink).toBe(1)
      const counts = await db.execute<{
        inodes: number
        chunks: number
        dentries: number
        links: number
      }>({
        sql: 'SELECT (SELECT COUNT(*) FROM fs_inode) AS inodes, (SELECT COUNT(*) FROM fs_data) AS chunks, (SELECT COUNT(*) FROM fs_dentry) AS dentries, (SELECT COUNT(*) FROM fs_symlink) AS links',
      })
      expect(counts.rows[0]).toEqual({ inodes: 2, chunks: 1, dentries: 1, links: 0 })
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

    test('deep paths (beyond one join chain): resolve, links inside, realpath, rename into itself, rm -r, fsck', async () => {
      const { fs, db } = await freshFs(driver)
      const names = Array.from({ length: 30 }, (_, i) => `d${i}`)
      const deep = `/${names.join('/')}`
      await fs.mkdir(deep, { recursive: true })
      await fs.writeFile(`${deep}/f`, 'bottom')
      expect(await fs.readFile(`${deep}/f`, 'utf8')).toBe('bottom')
      // A missing name at depth 20, and a file in the middle of a long path.
      const missing = `/${names.slice(0, 20).join('/')}/nope/${names.slice(20).join('/')}`
      expect(await code(fs.stat(missing))).toBe('ENOENT')
      expect(await code(fs.stat(`${deep}/f/${names.join('/')}`))).toBe('ENOTDIR')
      // A link at depth 12 back up to depth 3, then down again: 27 + 9 components.
      const mid = `/${names.slice(0, 12).join('/')}`
      await fs.symlink(`/${names.slice(0, 3).join('/')}`, `${mid}/up`)
      const via = `${mid}/up/${names.slice(3).join('/')}/f`
      expect(await fs.readFile(via, 'utf8')).toBe('bottom')
      expect(await fs.realpath(via)).toBe(`${deep}/f`)
      expect(await fs.realpath(`${deep}/..`)).toBe(`/${names.slice(0, 29).join('/')}`)
      expect(await code(fs.rename('/d0', `${deep}/inside`))).toBe('EINVAL')
      expect((await fs.readdir('/d0', { recursive: true })).length).toBe(31)
      const { fsck } = await import('@agentfs/core')
      expect((await fsck(db)).findings).toEqual([])
      // Two directories that hold each other, hanging off nothing: unreachable, and the walk ends.
      await db.transaction(async (tx) => {
        for (const ino of [9001, 9002])
          await tx.execute({
            sql: 'INSERT INTO fs_inode (ino, mode, nlink, uid, gid, size, atime, mtime, ctime) VALUES (?, 16877, 1, 0, 0, 0, 0, 0, 0)',
            params: [ino],
          })
        await tx.execute({
          sql: "INSERT INTO fs_dentry (name, parent_ino, ino) VALUES ('x', 9002, 9001), ('y', 9001, 9002)",
        })
      })
      const unreachable = (await fsck(db)).findings.filter((f) => f.rule === 'unreachable')
      expect(unreachable.map((f) => f.ino).sort()).toEqual([9001, 9002])
      await db.execute({ sql: 'DELETE FROM fs_dentry WHERE ino IN (9001, 9002)' })
      await db.execute({ sql: 'DELETE FROM fs_inode WHERE ino IN (9001, 9002)' })
      await fs.rm('/d0', { recursive: true })
      expect(await fs.readdir('/')).toEqual([])
    })
  })
}
