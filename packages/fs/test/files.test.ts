import { describe, expect, test } from 'vitest'
import { ConflictError } from '../src/index.js'
import { code, DRIVERS, freshFs } from './helpers.js'

for (const driver of Object.keys(DRIVERS)) {
  describe(`files (${driver})`, () => {
    test('write, read back as bytes and as text, across chunk boundaries', async () => {
      const { fs } = await freshFs(driver, { chunkSize: 64 })
      const bytes = new Uint8Array(1000).map((_, i) => (i * 13) & 255)
      await fs.writeFile('/data.bin', bytes)
      expect(Buffer.from(await fs.readFile('/data.bin')).equals(Buffer.from(bytes))).toBe(true)
      await fs.writeFile('/hello.txt', 'héllo wörld', 'utf8')
      expect(await fs.readFile('/hello.txt', 'utf8')).toBe('héllo wörld')
      expect((await fs.stat('/data.bin')).size).toBe(1000)
      await fs.writeFile('/data.bin', 'short')
      expect(await fs.readFile('/data.bin', 'utf8')).toBe('short')
      expect((await fs.stat('/data.bin')).size).toBe(5)
    })

    test('exclusive create, append, truncate', async () => {
      const { fs } = await freshFs(driver, { chunkSize: 64 })
      await fs.writeFile('/a', 'one', { flag: 'wx' })
      expect(await code(fs.writeFile('/a', 'two', { flag: 'wx' }))).toBe('EEXIST')
      await fs.appendFile('/a', '-two')
      await fs.appendFile('/new', 'created by append')
      expect(await fs.readFile('/a', 'utf8')).toBe('one-two')
      expect(await fs.readFile('/new', 'utf8')).toBe('created by append')
      await fs.truncate('/a', 3)
      expect(await fs.readFile('/a', 'utf8')).toBe('one')
      await fs.truncate('/a', 200)
      const grown = await fs.readFile('/a')
      expect(grown.length).toBe(200)
      expect([...grown.subarray(3)].every((b) => b === 0)).toBe(true)
      await fs.truncate('/a')
      expect((await fs.stat('/a')).size).toBe(0)
      expect(await code(fs.truncate('/a', -1))).toBe('EINVAL')
    })

    test('unlink frees the inode and its chunks only with the last link', async () => {
      const { fs, db } = await freshFs(driver, { chunkSize: 64 })
      await fs.writeFile('/a', 'x'.repeat(300))
      await fs.link('/a', '/b')
      expect((await fs.stat('/a')).nlink).toBe(2)
      expect((await fs.stat('/a')).ino).toBe((await fs.stat('/b')).ino)
      await fs.unlink('/a')
      expect(await fs.readFile('/b', 'utf8')).toBe('x'.repeat(300))
      expect((await fs.stat('/b')).nlink).toBe(1)
      await fs.unlink('/b')
      const left = await db.execute<{ n: number }>({
        sql: 'SELECT (SELECT COUNT(*) FROM fs_data) + (SELECT COUNT(*) FROM fs_inode) - 1 AS n',
      })
      expect(left.rows[0]!.n).toBe(0)
      expect(await code(fs.link('/missing', '/c'))).toBe('ENOENT')
      await fs.mkdir('/d')
      expect(await code(fs.link('/d', '/e'))).toBe('EPERM')
    })

    test('versions change on every content and metadata change; ifMatch refuses stale writes', async () => {
      const { fs } = await freshFs(driver)
      await fs.writeFile('/v', 'one')
      const v1 = (await fs.stat('/v')).version
      await fs.writeFile('/v', 'two', { ifMatch: v1 })
      const v2 = (await fs.stat('/v')).version
      expect(v2).not.toBe(v1)
      const error = await fs.writeFile('/v', 'three', { ifMatch: v1 }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(ConflictError)
      expect((error as ConflictError).code).toBe('CONFLICT')
      expect((error as ConflictError).currentVersion).toBe(v2)
      expect(await fs.readFile('/v', 'utf8')).toBe('two')
      await fs.chmod('/v', 0o600)
      const v3 = (await fs.stat('/v')).version
      expect(v3).not.toBe(v2)
      expect(BigInt(v3)).toBeGreaterThan(BigInt(v2))
      await fs.readFile('/v')
      expect((await fs.stat('/v')).version).toBe(v3)
    })

    test('copyFile copies bytes and mode, honours COPYFILE_EXCL', async () => {
      const { fs } = await freshFs(driver, { chunkSize: 64 })
      await fs.writeFile('/src', 'y'.repeat(500), { mode: 0o640 })
      await fs.copyFile('/src', '/dst')
      expect(await fs.readFile('/dst', 'utf8')).toBe('y'.repeat(500))
      expect((await fs.stat('/dst')).mode & 0o777).toBe(0o640)
      expect(await code(fs.copyFile('/src', '/dst', 1))).toBe('EEXIST')
      await fs.writeFile('/src', 'changed')
      expect(await fs.readFile('/dst', 'utf8')).toBe('y'.repeat(500))
    })

    test('stat looks like Node: numbers, ms, ns bigints, dates, predicates', async () => {
      const { fs } = await freshFs(driver)
      await fs.writeFile('/s', 'abc')
      const stats = await fs.stat('/s')
      expect(stats.isFile()).toBe(true)
      expect(stats.isDirectory()).toBe(false)
      expect(stats.mode).toBe(0o100644)
      expect(stats.size).toBe(3)
      expect(stats.blocks).toBe(1)
      expect(typeof stats.mtimeNs).toBe('bigint')
      expect(stats.mtime).toBeInstanceOf(Date)
      expect(stats.mtimeMs).toBeCloseTo(Number(stats.mtimeNs / 1000n) / 1000, 3)
      const root = await fs.stat('/')
      expect(root.ino).toBe(1)
      expect(root.isDirectory()).toBe(true)
    })

    test('utimes sets atime and mtime with nanoseconds; chown keeps -1 fields', async () => {
      const { fs } = await freshFs(driver)
      await fs.writeFile('/t', 'x')
      await fs.utimes('/t', 1_000_000_000.5, new Date('2020-01-02T03:04:05.678Z'))
      const stats = await fs.stat('/t')
      expect(stats.atimeNs).toBe(1_000_000_000_500_000_000n)
      expect(stats.mtimeMs).toBe(Date.parse('2020-01-02T03:04:05.678Z'))
      // The Dates, made when first read (as Node.js 22+ does), say the same times, each kept.
      expect(stats.atime.getTime()).toBe(1_000_000_000_500)
      expect(stats.mtime.toISOString()).toBe('2020-01-02T03:04:05.678Z')
      expect(stats.ctime.getTime()).toBe(stats.ctimeMs)
      expect(stats.birthtime.getTime()).toBe(stats.birthtimeMs)
      expect(stats.mtime).toBe(stats.mtime)
      await fs.chown('/t', 1000, -1)
      expect((await fs.stat('/t')).uid).toBe(1000)
      expect((await fs.stat('/t')).gid).toBe(0)
      expect(await code(fs.utimes('/t', Number.NaN, 0))).toBe('EINVAL')
    })

    test('utimes keeps the nanoseconds a decimal time names: numbers as written, strings exactly', async () => {
      const { fs } = await freshFs(driver)
      await fs.writeFile('/t', 'x')
      await fs.utimes('/t', 1_900_000_000.1, '1900000000.123456789')
      let stats = await fs.stat('/t')
      expect(stats.atimeNs).toBe(1_900_000_000_100_000_000n)
      expect(stats.mtimeNs).toBe(1_900_000_000_123_456_789n)
      await fs.utimes('/t', -1.25, '-0.000000001')
      stats = await fs.stat('/t')
      expect(stats.atimeNs).toBe(-1_250_000_000n)
      expect(stats.mtimeNs).toBe(-1n)
      await fs.utimes('/t', 0, 5e-7)
      expect((await fs.stat('/t')).mtimeNs).toBe(500n)
    })

    test('transaction groups operations atomically', async () => {
      const { fs } = await freshFs(driver)
      await fs.writeFile('/keep', 'v1')
      await fs
        .transaction(async (tx) => {
          await tx.writeFile('/keep', 'v2')
          await tx.writeFile('/new', 'x')
          throw new Error('abort')
        })
        .catch(() => undefined)
      expect(await fs.readFile('/keep', 'utf8')).toBe('v1')
      expect(await fs.exists('/new')).toBe(false)
      await fs.transaction(async (tx) => {
        await tx.writeFile('/a', '1')
        await tx.rename('/a', '/b')
      })
      expect(await fs.readFile('/b', 'utf8')).toBe('1')
    })

    test('mknod creates special files as metadata; statfs counts inodes', async () => {
      const { fs } = await freshFs(driver)
      await fs.mknod('/fifo', 0o010644)
      await fs.mknod('/tty', 0o020600, (4 << 8) | 1)
      expect((await fs.stat('/fifo')).isFIFO()).toBe(true)
      expect((await fs.stat('/tty')).isCharacterDevice()).toBe(true)
      expect((await fs.stat('/tty')).rdev).toBe((4 << 8) | 1)
      expect(await code(fs.mknod('/bad', 0o040755))).toBe('EINVAL')
      expect((await fs.statfs('/')).files).toBe(3)
    })
  })
}
