import { createHash } from 'node:crypto'
import { describe, expect, test } from 'vitest'
import { canonicalText, type FileSystem, hashFile } from '../src/index.js'
import { freshFs } from './helpers.js'

const sha = (bytes: string | Uint8Array) =>
  `sha256:${createHash('sha256').update(bytes).digest('hex')}`

/** Counts the reads of a filesystem's handles, to see what a cached hash costs. */
function counting(fs: FileSystem): { fs: FileSystem; reads: () => number } {
  let reads = 0
  const wrapped = new Proxy(fs, {
    get(target, key) {
      if (key !== 'open') return Reflect.get(target, key, target)
      return async (...args: Parameters<FileSystem['open']>) => {
        const handle = await target.open(...args)
        return new Proxy(handle, {
          get(h, k) {
            const value = Reflect.get(h, k, h)
            if (k !== 'read' || typeof value !== 'function')
              return typeof value === 'function' ? value.bind(h) : value
            return (...a: unknown[]) => {
              reads++
              return (value as (...x: unknown[]) => unknown).apply(h, a)
            }
          },
        })
      }
    },
  })
  return { fs: wrapped, reads: () => reads }
}

describe('canonicalText', () => {
  test.each([
    ['a\r\nb\rc', 'a\nb\nc\n'],
    ['line  \t\nnext \n\n\n', 'line\nnext\n'],
    ['no final newline', 'no final newline\n'],
    ['', ''],
    [' \n\t\r\n', ''],
    ['\n\nkept leading\n', '\n\nkept leading\n'],
    ['trailing nbsp\u00a0\u3000\n', 'trailing nbsp\n'],
  ])('%j → %j', (input, output) => {
    expect(canonicalText(input)).toBe(output)
  })
})

describe('fs.hash', () => {
  test('bytes, a range, canonical text; the version token of what was hashed', async () => {
    const { fs } = await freshFs('better-sqlite3', { chunkSize: 64 })
    const text = 'alpha  \r\nbeta\n\n'
    await fs.writeFile('/a.txt', text)
    const stat = await fs.stat('/a.txt')
    expect(await fs.hash('/a.txt')).toEqual({
      hash: sha(text),
      size: Buffer.byteLength(text),
      version: stat.version,
      canonical: false,
    })
    expect((await fs.hash('/a.txt', { range: { start: 2, end: 9 } })).hash).toBe(
      sha(text.slice(2, 9)),
    )
    expect((await fs.hash('/a.txt', { range: { start: 5 } })).hash).toBe(sha(text.slice(5)))
    const canonical = await fs.hash('/a.txt', { canonical: true })
    expect(canonical).toMatchObject({ hash: sha('alpha\nbeta\n'), size: 11, canonical: true })
    // Formatting-only differences hash alike when canonical.
    await fs.writeFile('/b.txt', 'alpha\nbeta')
    expect((await fs.hash('/b.txt', { canonical: true })).hash).toBe(canonical.hash)
    // Through a link, of the target; an empty file; a sparse one (holes read as zeros).
    await fs.symlink('/a.txt', '/link')
    expect((await fs.hash('/link')).hash).toBe(sha(text))
    await fs.writeFile('/empty', '')
    expect((await fs.hash('/empty')).hash).toBe(sha(''))
    await fs.truncate('/empty', 10)
    expect((await fs.hash('/empty')).hash).toBe(sha(new Uint8Array(10)))
  })

  test('a cached hash reads no content; a write changes the answer at once', async () => {
    const { fs: sql } = await freshFs('better-sqlite3')
    await sql.writeFile('/f', 'one')
    const { fs, reads } = counting(sql)
    const first = await hashFile(fs, '/f')
    const after = reads()
    expect(after).toBeGreaterThan(0)
    expect(await hashFile(fs, '/f')).toEqual(first)
    expect(reads()).toBe(after)
    await sql.writeFile('/f', 'two')
    expect((await hashFile(fs, '/f')).hash).toBe(sha('two'))
    expect(reads()).toBeGreaterThan(after)
    // Written through a handle in place (same inode): the version moves, so does the hash.
    const handle = await sql.open('/f', 'r+')
    await handle.write('T', null, 'utf8', 0)
    await handle.close()
    expect((await hashFile(fs, '/f')).hash).toBe(sha('Two'))
  })

  test('a file that changes while it is hashed is hashed again', async () => {
    const { fs: sql } = await freshFs('better-sqlite3', { chunkSize: 64 })
    await sql.writeFile('/f', 'a'.repeat(3 * 1024 * 1024))
    let once = true
    const racing = new Proxy(sql, {
      get(target, key) {
        if (key !== 'open') return Reflect.get(target, key, target)
        return async (...args: Parameters<FileSystem['open']>) => {
          const handle = await target.open(...args)
          const read = handle.read.bind(handle)
          return Object.assign(Object.create(handle), {
            stat: handle.stat.bind(handle),
            close: handle.close.bind(handle),
            async read(...a: Parameters<typeof read>) {
              if (once) {
                once = false
                await target.writeFile('/f', 'changed')
              }
              return read(...a)
            },
          })
        }
      },
    })
    expect((await hashFile(racing, '/f')).hash).toBe(sha('changed'))
  })

  test('refusals: a directory, a missing file, a bad range, canonical of bytes that are not UTF-8', async () => {
    const { fs } = await freshFs('better-sqlite3')
    await fs.mkdir('/d')
    await fs.writeFile('/bin', new Uint8Array([0xff, 0xfe, 0x00]))
    await expect(fs.hash('/d')).rejects.toMatchObject({ code: 'EISDIR' })
    await expect(fs.hash('/nope')).rejects.toMatchObject({ code: 'ENOENT' })
    await expect(fs.hash('/bin', { range: { start: 3, end: 1 } })).rejects.toThrow(
      'range must be whole byte offsets with 0 <= start <= end, got {"start":3,"end":1}',
    )
    await expect(fs.hash('/bin', { canonical: true })).rejects.toThrow(
      "EINVAL: invalid argument, hash '/bin' (a canonical hash is of UTF-8 text; hash the bytes instead)",
    )
  })
})
