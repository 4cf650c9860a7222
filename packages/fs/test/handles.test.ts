import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { describe, expect, test } from 'vitest'
import { ConflictError } from '../src/index.js'
import { code, DRIVERS, freshFs } from './helpers.js'

for (const driver of Object.keys(DRIVERS)) {
  describe(`handles and streams (${driver})`, () => {
    test('cursor reads and writes, pread/pwrite leave the cursor alone', async () => {
      const { fs } = await freshFs(driver, { chunkSize: 64 })
      const handle = await fs.open('/f', 'w+')
      await handle.write(Buffer.from('0123456789'))
      await handle.write(Buffer.from('AB'), 0, 2, 3) // pwrite at 3
      await handle.write(Buffer.from('xyz')) // cursor is still at 10
      const out = Buffer.alloc(4)
      const first = await handle.read(out, 0, 4, 0)
      expect(first.bytesRead).toBe(4)
      expect(out.toString()).toBe('012A')
      expect((await handle.stat()).size).toBe(13)
      await handle.close()
      const reader = await fs.open('/f', 'r')
      const a = await reader.read(Buffer.alloc(5), 0, 5)
      const b = await reader.read(Buffer.alloc(5), 0, 5)
      expect(Buffer.from(a.buffer).toString()).toBe('012AB')
      expect(Buffer.from(b.buffer).toString()).toBe('56789')
      expect(await reader.readFile('utf8')).toBe('xyz')
      expect(await code(reader.write('no'))).toBe('EBADF')
      await reader.close()
      await reader.close()
      expect(await code(reader.read(Buffer.alloc(1)))).toBe('EBADF')
    })

    test('pwrite far past the end leaves a hole that reads as zeros and stores no chunks', async () => {
      const { fs, db } = await freshFs(driver, { chunkSize: 64 })
      const handle = await fs.open('/sparse', 'w')
      await handle.write(Buffer.from('end'), 0, 3, 1000)
      await handle.close()
      const bytes = await fs.readFile('/sparse')
      expect(bytes.length).toBe(1003)
      expect(bytes.subarray(0, 1000).every((b) => b === 0)).toBe(true)
      expect(bytes.subarray(1000).toString()).toBe('end')
      const chunks = await db.execute<{ n: number; short: number }>({
        sql: 'SELECT COUNT(*) AS n, SUM(length(data) != 64) AS short FROM fs_data',
      })
      // Only the chunk holding the written bytes is stored: the gap is a hole.
      expect(chunks.rows[0]).toEqual({ n: 1, short: 1 })
      expect((await fs.stat('/sparse')).size).toBe(1003)
    })

    test("a read writes only its bytes into the caller's buffer: holes and damaged short chunks as zeros", async () => {
      const { fs, db } = await freshFs(driver, { chunkSize: 64 })
      await fs.writeFile('/sparse', '')
      const writer = await fs.open('/sparse', 'r+')
      await writer.write(Buffer.from('end'), 0, 3, 1000)
      await writer.close()
      const handle = await fs.open('/sparse', 'r')
      const out = Buffer.alloc(200, 0xaa)
      // 950..999 is a hole, 1000..1002 the bytes, then the end of the file.
      const { bytesRead } = await handle.read(out, 10, 100, 950)
      expect(bytesRead).toBe(53)
      expect(out.subarray(0, 10).every((b) => b === 0xaa)).toBe(true)
      expect(out.subarray(10, 60).every((b) => b === 0)).toBe(true)
      expect(out.subarray(60, 63).toString()).toBe('end')
      expect(out.subarray(63).every((b) => b === 0xaa)).toBe(true)
      await handle.close()
      // A chunk cut short (damage): the bytes it lacks read as zeros, not as what the buffer held.
      await fs.writeFile('/full', Buffer.alloc(128, 0x31))
      const { ino } = await fs.stat('/full')
      await db.execute({
        sql: 'UPDATE fs_data SET data = substr(data, 1, 10) WHERE ino = ? AND chunk_index = 0',
        params: [ino],
      })
      const reader = await fs.open('/full', 'r')
      const dirty = Buffer.alloc(100, 0xaa)
      expect((await reader.read(dirty, 0, 100, 0)).bytesRead).toBe(100)
      expect(dirty.subarray(0, 10).every((b) => b === 0x31)).toBe(true)
      expect(dirty.subarray(10, 64).every((b) => b === 0)).toBe(true)
      expect(dirty.subarray(64).every((b) => b === 0x31)).toBe(true)
      await reader.close()
      // A directory (one a damaged row gives a size, too): EISDIR, the buffer left as it was.
      await fs.mkdir('/dir')
      await db.execute({
        sql: 'UPDATE fs_inode SET size = 64 WHERE ino = ?',
        params: [(await fs.stat('/dir')).ino],
      })
      const dir = await fs.open('/dir', 'r')
      const untouched = Buffer.alloc(8, 0xaa)
      expect(await code(dir.read(untouched, 0, 8, 0))).toBe('EISDIR')
      expect(untouched.every((b) => b === 0xaa)).toBe(true)
      await dir.close()
      // Bad arguments and a closed handle reject (never throw at the call), as Node's do.
      const file = await fs.open('/full', 'r')
      const rejects = (call: () => Promise<unknown>) => {
        let promise: Promise<unknown> | undefined
        expect(() => {
          promise = call()
        }).not.toThrow()
        return promise!.then(
          () => 'resolved',
          (e: { code?: string; name?: string }) => e.code ?? e.name,
        )
      }
      expect(await rejects(() => file.read(null as unknown as Uint8Array))).toBe('TypeError')
      expect(await rejects(() => file.read(Buffer.alloc(4), 2, 3, 0))).toBe('EINVAL')
      expect(await rejects(() => file.read(Buffer.alloc(4), 0, 4, -1))).toBe('EINVAL')
      await file.close()
      await file.close()
      expect(await rejects(() => file.read(Buffer.alloc(4), 0, 4, 0))).toBe('EBADF')
    })

    test('readFile of a file of many chunks: holes and short chunks read as zeros, stray rows ignored', async () => {
      const { fs, db } = await freshFs(driver, { chunkSize: 64 })
      // Chunk 0 and chunk 15 stored, 1 to 14 a hole.
      await fs.writeFile('/holey', 'start')
      const writer = await fs.open('/holey', 'r+')
      await writer.write(Buffer.from('end'), 0, 3, 1000)
      await writer.close()
      const holey = await fs.readFile('/holey')
      expect(holey.length).toBe(1003)
      expect(holey.subarray(0, 5).toString()).toBe('start')
      expect(holey.subarray(5, 1000).every((b) => b === 0)).toBe(true)
      expect(holey.subarray(1000).toString()).toBe('end')
      // Every chunk stored, the middle one cut short (damage), and rows no read may take: an
      // index that is not an integer, one past the end.
      await fs.writeFile('/full', Buffer.alloc(192, 0x31))
      const { ino } = await fs.stat('/full')
      await db.execute({
        sql: 'UPDATE fs_data SET data = substr(data, 1, 10) WHERE ino = ? AND chunk_index = 1',
        params: [ino],
      })
      await db.execute({
        sql: "INSERT INTO fs_data (ino, chunk_index, data) VALUES (?, 1.5, X'3232'), (?, 3, X'3333')",
        params: [ino, ino],
      })
      const full = await fs.readFile('/full')
      expect(full.length).toBe(192)
      expect(full.subarray(0, 74).every((b) => b === 0x31)).toBe(true)
      expect(full.subarray(74, 128).every((b) => b === 0)).toBe(true)
      expect(full.subarray(128).every((b) => b === 0x31)).toBe(true)
      // A stray row where a chunk is missing is not that chunk: the hole stays zeros.
      await db.execute({
        sql: 'DELETE FROM fs_data WHERE ino = ? AND chunk_index = 1',
        params: [ino],
      })
      const gap = await fs.readFile('/full')
      expect(gap.subarray(0, 64).every((b) => b === 0x31)).toBe(true)
      expect(gap.subarray(64, 128).every((b) => b === 0)).toBe(true)
      expect(gap.subarray(128).every((b) => b === 0x31)).toBe(true)
    })

    test('handle writes accept ifMatch; truncate, chmod, utimes through the handle', async () => {
      const { fs } = await freshFs(driver)
      await fs.writeFile('/v', 'one')
      const version = (await fs.stat('/v')).version
      const handle = await fs.open('/v', 'r+')
      await handle.write(Buffer.from('ONE'), { position: 0, ifMatch: version })
      const stale = await handle
        .write(Buffer.from('two'), { position: 0, ifMatch: version })
        .catch((e: unknown) => e)
      expect(stale).toBeInstanceOf(ConflictError)
      await handle.truncate(1)
      await handle.chmod(0o600)
      await handle.utimes(10, 20)
      const stats = await handle.stat()
      expect([stats.size, stats.mode & 0o777, stats.atimeMs, stats.mtimeMs]).toEqual([
        1, 0o600, 10_000, 20_000,
      ])
      await handle.close()
      expect(await fs.readFile('/v', 'utf8')).toBe('O')
    })

    test('streams: ranges, backpressure-friendly round trip', async () => {
      const { fs } = await freshFs(driver, { chunkSize: 256 })
      const data = Buffer.alloc(100_000).map((_, i) => (i * 31) & 255)
      await pipeline(
        Readable.from([data.subarray(0, 30_000), data.subarray(30_000)]),
        fs.createWriteStream('/s.bin'),
      )
      expect(Buffer.compare(await fs.readFile('/s.bin'), data)).toBe(0)
      const parts: Buffer[] = []
      for await (const chunk of fs.createReadStream('/s.bin', {
        start: 10,
        end: 50_009,
        highWaterMark: 4096,
      })) {
        parts.push(chunk as Buffer)
        expect((chunk as Buffer).length).toBeLessThanOrEqual(4096)
      }
      expect(Buffer.compare(Buffer.concat(parts), data.subarray(10, 50_010))).toBe(0)
      const text: string[] = []
      await fs.writeFile('/t.txt', 'stream me')
      for await (const piece of fs.createReadStream('/t.txt', { encoding: 'utf8' }))
        text.push(piece as string)
      expect(text.join('')).toBe('stream me')
      const failing = fs.createReadStream('/missing')
      await expect(async () => {
        for await (const _ of failing) void _
      }).rejects.toMatchObject({ code: 'ENOENT' })
    })

    test('opendir pages through a large directory', async () => {
      const { fs } = await freshFs(driver)
      await fs.mkdir('/big')
      await fs.transaction(async (tx) => {
        for (let i = 0; i < 600; i++) await tx.writeFile(`/big/f${String(i).padStart(4, '0')}`, '')
      })
      const dir = await fs.opendir('/big', { bufferSize: 50 })
      const names: string[] = []
      for await (const entry of dir) names.push(entry.name)
      expect(names.length).toBe(600)
      expect(names[0]).toBe('f0000')
      expect(names[599]).toBe('f0599')
      // As in Node: iterating closed the handle; reading or closing it again is ERR_DIR_CLOSED.
      expect(await code(dir.read())).toBe('ERR_DIR_CLOSED')
      expect(await code(dir.close())).toBe('ERR_DIR_CLOSED')
      const again = await fs.opendir('/big')
      await again.close()
      expect(await code(again.close())).toBe('ERR_DIR_CLOSED')
    })
  })

  describe(`search and copy (${driver})`, () => {
    async function tree() {
      const { fs } = await freshFs(driver, { chunkSize: 64 })
      await fs.mkdir('/src/lib', { recursive: true })
      await fs.mkdir('/docs')
      await fs.writeFile('/src/index.ts', "import { a } from './lib/a.js'\nexport const main = a\n")
      await fs.writeFile(
        '/src/lib/a.ts',
        `export const a = 1\n${'// filler line\n'.repeat(10)}// TODO: split\n`,
      )
      await fs.writeFile('/src/lib/b.js', 'module.exports = 2 // TODO later\n')
      await fs.writeFile('/docs/readme.md', '# Title\nSome todo text\n')
      await fs.writeFile('/src/.hidden.ts', 'TODO hidden\n')
      await fs.writeFile('/bin.dat', Buffer.from([0, 1, 2, 84, 79, 68, 79]))
      return fs
    }

    test('glob: *, **, ?, {a,b}, static prefixes, dot files', async () => {
      const fs = await tree()
      const paths = async (pattern: string, options = {}) =>
        (await fs.glob(pattern, options)).map((m) => m.path)
      // Paths are absolute whatever the cwd, the same form grep returns.
      expect(await paths('**/*.ts')).toEqual(['/src/index.ts', '/src/lib/a.ts'])
      expect(await paths('src/*')).toEqual(['/src/index.ts', '/src/lib'])
      expect(await paths('src/lib/?.{ts,js}')).toEqual(['/src/lib/a.ts', '/src/lib/b.js'])
      expect(await paths('**/*.ts', { dot: true })).toEqual([
        '/src/.hidden.ts',
        '/src/index.ts',
        '/src/lib/a.ts',
      ])
      expect(await paths('*.ts', { cwd: '/src' })).toEqual(['/src/index.ts'])
      expect(await paths('lib/*', { cwd: '/src' })).toEqual(['/src/lib/a.ts', '/src/lib/b.js'])
      expect(await paths('/docs/*.md')).toEqual(['/docs/readme.md'])
      expect(await paths('nothing/**')).toEqual([])
      const grepped = (await fs.grep('TODO', { path: '/src/lib' })).map((m) => m.path)
      expect(await paths('*', { cwd: '/src/lib' })).toEqual(grepped)
      const [match] = await fs.glob('docs/readme.md')
      expect(match).toMatchObject({ type: 'file', size: 23 })
    })

    test('grep: literal and regex, case, globs, line numbers across chunks, binary skipped', async () => {
      const fs = await tree()
      const literal = await fs.grep('TODO')
      expect(literal.map((m) => `${m.path}:${m.line}`)).toEqual([
        '/src/.hidden.ts:1',
        '/src/lib/a.ts:12',
        '/src/lib/b.js:1',
      ])
      const insensitive = await fs.grep('todo', { ignoreCase: true, path: '/docs' })
      expect(insensitive).toEqual([{ path: '/docs/readme.md', line: 2, text: 'Some todo text' }])
      expect((await fs.grep(/export const \w+ = \d/)).map((m) => m.path)).toEqual(['/src/lib/a.ts'])
      expect((await fs.grep('TODO', { glob: '*.js' })).map((m) => m.path)).toEqual([
        '/src/lib/b.js',
      ])
      expect(await fs.grep('TODO', { maxMatches: 1 })).toHaveLength(1)
      expect(await fs.grep('a.(js', { fixedStrings: true })).toEqual([])
      expect(await fs.grep('a.js', { fixedStrings: true })).toEqual([
        { path: '/src/index.ts', line: 1, text: "import { a } from './lib/a.js'" },
      ])
    })

    test('cp copies trees atomically with links and modes; refuses copying into itself', async () => {
      const fs = await tree()
      await fs.symlink('lib/a.ts', '/src/alias')
      await fs.chmod('/src/lib/a.ts', 0o600)
      expect(await code(fs.cp('/src', '/copy'))).toBe('EISDIR')
      await fs.cp('/src', '/copy', { recursive: true })
      expect(await fs.readdir('/copy', { recursive: true })).toEqual(
        await fs.readdir('/src', { recursive: true }),
      )
      // As Node's cp: a relative link target is made absolute, unless verbatimSymlinks.
      expect(await fs.readlink('/copy/alias')).toBe('/src/lib/a.ts')
      await fs.cp('/src', '/verbatim', { recursive: true, verbatimSymlinks: true })
      expect(await fs.readlink('/verbatim/alias')).toBe('lib/a.ts')
      expect((await fs.stat('/copy/lib/a.ts')).mode & 0o777).toBe(0o600)
      expect(await fs.readFile('/copy/lib/a.ts', 'utf8')).toBe(
        await fs.readFile('/src/lib/a.ts', 'utf8'),
      )
      expect(await code(fs.cp('/src', '/src/inner', { recursive: true }))).toBe('EINVAL')
      await fs.writeFile('/one', '1')
      await fs.writeFile('/two', '2')
      expect(await code(fs.cp('/one', '/two', { force: false, errorOnExist: true }))).toBe('EEXIST')
      await fs.cp('/one', '/two')
      expect(await fs.readFile('/two', 'utf8')).toBe('1')
    })
  })
}
