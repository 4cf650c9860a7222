import { afterEach, describe, expect, test } from 'vitest'

/** The parts of a `FileSystem` the suite drives (structural: no dependency on @agentfs/fs). */
export interface SuiteStats {
  readonly size: number
  readonly mode: number
  readonly nlink: number
  readonly ino: number
  readonly mtimeMs: number
  isFile(): boolean
  isDirectory(): boolean
  isSymbolicLink(): boolean
}

export interface SuiteHandle {
  read(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesRead: number }>
  write(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesWritten: number }>
  close(): Promise<void>
}

export interface SuiteFs {
  readFile(path: string): Promise<Buffer>
  readFile(path: string, encoding: 'utf8'): Promise<string>
  writeFile(path: string, data: string | Uint8Array): Promise<void>
  appendFile(path: string, data: string | Uint8Array): Promise<void>
  mkdir(path: string, options?: { recursive?: boolean }): Promise<string | undefined>
  readdir(path: string): Promise<string[]>
  rename(from: string, to: string): Promise<void>
  unlink(path: string): Promise<void>
  rmdir(path: string): Promise<void>
  rm(path: string, options?: { recursive?: boolean; force?: boolean }): Promise<void>
  symlink(target: string, path: string): Promise<void>
  readlink(path: string): Promise<string>
  link(existing: string, newPath: string): Promise<void>
  stat(path: string): Promise<SuiteStats>
  lstat(path: string): Promise<SuiteStats>
  truncate(path: string, length?: number): Promise<void>
  chmod(path: string, mode: number): Promise<void>
  utimes(path: string, atime: number, mtime: number): Promise<void>
  copyFile(src: string, dest: string, mode?: number): Promise<void>
  exists(path: string): Promise<boolean>
  realpath(path: string): Promise<string>
  open(path: string, flags?: string, mode?: number): Promise<SuiteHandle>
  glob(pattern: string, options?: { cwd?: string }): Promise<{ path: string }[]>
  grep(pattern: string, options?: { path?: string }): Promise<{ path: string; line: number }[]>
}

/** A fresh, empty filesystem for one test, and how to dispose of it. */
export interface SuiteInstance {
  readonly fs: SuiteFs
  readonly dispose?: () => Promise<void>
}

export interface FileSystemSuiteOptions {
  /** Tests this implementation does not pass, by id, each with the reason (listed as skipped). */
  readonly skip?: Readonly<Record<string, string>>
}

const codeOf = async (promise: Promise<unknown>): Promise<string | undefined> =>
  promise.then(
    () => undefined,
    (error: { code?: string }) => error.code ?? 'no code',
  )

const COPYFILE_EXCL = 1

/** The contract every `FileSystem` keeps, by test id. */
const CASES: Record<string, (fs: SuiteFs) => Promise<void>> = {
  'files/round-trip': async (fs) => {
    await fs.writeFile('/a.txt', 'hello')
    expect(await fs.readFile('/a.txt', 'utf8')).toBe('hello')
    const bytes = new Uint8Array([0, 1, 2, 255])
    await fs.writeFile('/b.bin', bytes)
    expect([...(await fs.readFile('/b.bin'))]).toEqual([0, 1, 2, 255])
    expect((await fs.stat('/b.bin')).size).toBe(4)
  },
  'files/overwrite-and-append': async (fs) => {
    await fs.writeFile('/a.txt', 'a much longer first version')
    await fs.writeFile('/a.txt', 'short')
    await fs.appendFile('/a.txt', '+more')
    expect(await fs.readFile('/a.txt', 'utf8')).toBe('short+more')
  },
  'files/missing': async (fs) => {
    expect(await codeOf(fs.readFile('/nope.txt'))).toBe('ENOENT')
    expect(await codeOf(fs.writeFile('/no/dir/a.txt', 'x'))).toBe('ENOENT')
    expect(await fs.exists('/nope.txt')).toBe(false)
  },
  'files/not-a-directory': async (fs) => {
    await fs.writeFile('/file', 'x')
    expect(await codeOf(fs.writeFile('/file/child', 'x'))).toBe('ENOTDIR')
    expect(await codeOf(fs.readdir('/file'))).toBe('ENOTDIR')
    await fs.mkdir('/dir')
    expect(await codeOf(fs.readFile('/dir'))).toBe('EISDIR')
  },
  'files/truncate': async (fs) => {
    await fs.writeFile('/t.txt', 'abcdef')
    await fs.truncate('/t.txt', 3)
    expect(await fs.readFile('/t.txt', 'utf8')).toBe('abc')
    await fs.truncate('/t.txt', 5)
    expect([...(await fs.readFile('/t.txt'))]).toEqual([97, 98, 99, 0, 0])
  },
  'files/handles': async (fs) => {
    const handle = await fs.open('/h.bin', 'w+')
    await handle.write(new Uint8Array([1, 2, 3]), 0, 3, 0)
    await handle.write(new Uint8Array([9]), 0, 1, 5)
    const buffer = new Uint8Array(6)
    const { bytesRead } = await handle.read(buffer, 0, 6, 0)
    await handle.close()
    expect(bytesRead).toBe(6)
    expect([...buffer]).toEqual([1, 2, 3, 0, 0, 9])
  },
  'files/handle-closed': async (fs) => {
    const handle = await fs.open('/c.txt', 'w')
    await handle.close()
    await handle.close()
    expect(await codeOf(handle.write(new Uint8Array([1]), 0, 1, 0))).toBe('EBADF')
  },
  'files/copy': async (fs) => {
    await fs.writeFile('/src.txt', 'copy me')
    await fs.copyFile('/src.txt', '/dst.txt')
    expect(await fs.readFile('/dst.txt', 'utf8')).toBe('copy me')
    expect(await codeOf(fs.copyFile('/src.txt', '/dst.txt', COPYFILE_EXCL))).toBe('EEXIST')
  },
  'dirs/mkdir': async (fs) => {
    await fs.mkdir('/a/b/c', { recursive: true })
    expect((await fs.stat('/a/b/c')).isDirectory()).toBe(true)
    expect(await codeOf(fs.mkdir('/a'))).toBe('EEXIST')
    expect(await codeOf(fs.mkdir('/x/y'))).toBe('ENOENT')
  },
  'dirs/readdir-sorted': async (fs) => {
    await fs.mkdir('/d')
    for (const name of ['b', 'a', 'C', 'c']) await fs.writeFile(`/d/${name}`, name)
    expect((await fs.readdir('/d')).sort()).toEqual(['C', 'a', 'b', 'c'])
  },
  'dirs/remove': async (fs) => {
    await fs.mkdir('/full/sub', { recursive: true })
    await fs.writeFile('/full/sub/f', 'x')
    expect(await codeOf(fs.rmdir('/full'))).toBe('ENOTEMPTY')
    expect(await codeOf(fs.unlink('/full'))).toMatch(/^(EISDIR|EPERM)$/)
    expect(await codeOf(fs.rm('/full'))).toBe('EISDIR')
    await fs.rm('/full', { recursive: true })
    expect(await fs.exists('/full')).toBe(false)
    await fs.rm('/full', { recursive: true, force: true })
  },
  'names/rename-file': async (fs) => {
    await fs.writeFile('/old.txt', 'moved')
    await fs.mkdir('/dest')
    await fs.rename('/old.txt', '/dest/new.txt')
    expect(await fs.exists('/old.txt')).toBe(false)
    expect(await fs.readFile('/dest/new.txt', 'utf8')).toBe('moved')
  },
  'names/rename-replaces': async (fs) => {
    await fs.writeFile('/a', 'A')
    await fs.writeFile('/b', 'B')
    await fs.rename('/a', '/b')
    expect(await fs.readFile('/b', 'utf8')).toBe('A')
    expect(await fs.exists('/a')).toBe(false)
  },
  'names/rename-directory': async (fs) => {
    await fs.mkdir('/tree/deep', { recursive: true })
    await fs.writeFile('/tree/deep/f', 'x')
    await fs.rename('/tree', '/moved')
    expect(await fs.readFile('/moved/deep/f', 'utf8')).toBe('x')
    expect(await codeOf(fs.rename('/moved', '/moved/deep/inside'))).toBe('EINVAL')
  },
  'links/symlink': async (fs) => {
    await fs.writeFile('/target.txt', 'through the link')
    await fs.symlink('target.txt', '/link')
    expect(await fs.readlink('/link')).toBe('target.txt')
    expect(await fs.readFile('/link', 'utf8')).toBe('through the link')
    expect((await fs.lstat('/link')).isSymbolicLink()).toBe(true)
    expect((await fs.stat('/link')).isFile()).toBe(true)
    expect(await fs.realpath('/link')).toBe('/target.txt')
  },
  'links/loop': async (fs) => {
    await fs.symlink('loop-b', '/loop-a')
    await fs.symlink('loop-a', '/loop-b')
    expect(await codeOf(fs.readFile('/loop-a'))).toBe('ELOOP')
  },
  'links/dangling': async (fs) => {
    await fs.symlink('nowhere', '/dangling')
    expect(await codeOf(fs.stat('/dangling'))).toBe('ENOENT')
    expect((await fs.lstat('/dangling')).isSymbolicLink()).toBe(true)
  },
  'links/absolute-target': async (fs) => {
    await fs.mkdir('/real')
    await fs.writeFile('/real/f', 'abs')
    await fs.symlink('/real', '/via')
    expect(await fs.readFile('/via/f', 'utf8')).toBe('abs')
    await fs.symlink('/ghost', '/dangling-abs')
    expect(await codeOf(fs.stat('/dangling-abs'))).toBe('ENOENT')
  },
  'names/rename-refusals': async (fs) => {
    await fs.mkdir('/dir/sub', { recursive: true })
    await fs.mkdir('/full')
    await fs.writeFile('/full/x', 'x')
    await fs.mkdir('/empty')
    await fs.writeFile('/file', 'f')
    expect(await codeOf(fs.rename('/dir', '/dir/sub/inside'))).toBe('EINVAL')
    expect(await codeOf(fs.rename('/dir', '/full'))).toBe('ENOTEMPTY')
    expect(await codeOf(fs.rename('/dir', '/file'))).toBe('ENOTDIR')
    expect(await codeOf(fs.rename('/file', '/empty'))).toBe('EISDIR')
    expect(await codeOf(fs.rename('/missing', '/x'))).toBe('ENOENT')
    expect(await codeOf(fs.rename('/file', '/nodir/x'))).toBe('ENOENT')
    expect(await codeOf(fs.rename('/', '/x'))).toBe('EBUSY')
    await fs.rename('/dir', '/empty')
    expect(await fs.readdir('/empty')).toEqual(['sub'])
    await fs.rename('/file', '/file')
    expect(await fs.readFile('/file', 'utf8')).toBe('f')
    const error = await fs.rename('/missing', '/x').catch((e: unknown) => e)
    expect((error as Error).message).toBe(
      "ENOENT: no such file or directory, rename '/missing' -> '/x'",
    )
  },
  'links/targets': async (fs) => {
    await fs.mkdir('/real/dir', { recursive: true })
    await fs.writeFile('/real/dir/file.txt', 'through the link')
    await fs.symlink('real/dir/file.txt', '/rel')
    await fs.mkdir('/other')
    await fs.symlink('../real', '/other/up')
    expect(await fs.readFile('/other/up/dir/file.txt', 'utf8')).toBe('through the link')
    expect((await fs.lstat('/rel')).size).toBe('real/dir/file.txt'.length)
    expect(await codeOf(fs.readlink('/real'))).toBe('EINVAL')
    expect(await fs.realpath('/other/up/dir/../dir/file.txt')).toBe('/real/dir/file.txt')
    expect(await fs.realpath('/')).toBe('/')
    // Writing through a link writes the target; unlink removes the link only.
    await fs.writeFile('/rel', 'rewritten')
    expect(await fs.readFile('/real/dir/file.txt', 'utf8')).toBe('rewritten')
    await fs.unlink('/rel')
    expect(await fs.exists('/real/dir/file.txt')).toBe(true)
    expect(await codeOf(fs.symlink('x', '/other/up'))).toBe('EEXIST')
  },
  'links/dotdot-physical': async (fs) => {
    await fs.mkdir('/a/b', { recursive: true })
    await fs.mkdir('/c')
    await fs.writeFile('/a/marker', 'a')
    await fs.writeFile('/c/marker', 'c')
    await fs.symlink('../a/b', '/c/link')
    // /c/link/.. is /a (the parent of the link's target), not /c.
    expect(await fs.readFile('/c/link/../marker', 'utf8')).toBe('a')
    await fs.writeFile('/marker', 'root')
    expect(await fs.readFile('/../../marker', 'utf8')).toBe('root')
  },
  'links/forty-hops': async (fs) => {
    let previous = 'chain0'
    await fs.writeFile(`/${previous}`, 'end')
    for (let i = 1; i <= 41; i++) {
      await fs.symlink(previous, `/chain${i}`)
      previous = `chain${i}`
    }
    expect(await fs.readFile('/chain40', 'utf8')).toBe('end')
    expect(await codeOf(fs.readFile('/chain41'))).toBe('ELOOP')
    await fs.symlink('l2', '/l1')
    await fs.symlink('l1', '/l2')
    expect(await codeOf(fs.readFile('/l1/x'))).toBe('ELOOP')
  },
  'links/create-through-dangling': async (fs) => {
    await fs.symlink('nowhere', '/dangling')
    await fs.writeFile('/dangling', 'made')
    expect(await fs.readFile('/nowhere', 'utf8')).toBe('made')
  },
  'paths/trailing-slash': async (fs) => {
    await fs.mkdir('/dir')
    await fs.writeFile('/file', 'x')
    expect((await fs.stat('/dir/')).isDirectory()).toBe(true)
    expect(await codeOf(fs.stat('/file/'))).toBe('ENOTDIR')
    expect(await codeOf(fs.readFile('/file/'))).toBe('ENOTDIR')
  },
  'paths/invalid': async (fs) => {
    expect(await codeOf(fs.readFile('/a\0b'))).toBe('EINVAL')
    expect(await codeOf(fs.readFile(`/${'n'.repeat(256)}`))).toBe('ENAMETOOLONG')
    await expect(fs.readFile('/missing')).rejects.toThrow(
      "ENOENT: no such file or directory, open '/missing'",
    )
  },
  'files/open-flags': async (fs) => {
    expect(await codeOf(fs.open('/missing', 'r'))).toBe('ENOENT')
    const created = await fs.open('/f', 'wx')
    await created.write(new TextEncoder().encode('hello'), 0, 5, 0)
    await created.close()
    expect(await codeOf(fs.open('/f', 'wx'))).toBe('EEXIST')
    const appender = await fs.open('/f', 'a')
    const more = new TextEncoder().encode(' world')
    await appender.write(more, 0, more.length, 0) // the position is ignored with O_APPEND
    await appender.close()
    expect(await fs.readFile('/f', 'utf8')).toBe('hello world')
    await (await fs.open('/f', 'w')).close()
    expect((await fs.stat('/f')).size).toBe(0)
    expect(await codeOf(fs.open('/f', 'bogus'))).toBe('EINVAL')
    await fs.mkdir('/d')
    expect(await codeOf(fs.open('/d', 'w'))).toBe('EISDIR')
    expect(await codeOf(fs.writeFile('/d', 'x'))).toBe('EISDIR')
    // Opens that neither create nor truncate: a directory opens for reading only, a file is
    // no directory, and a missing parent is ENOENT.
    expect(await codeOf(fs.open('/d', 'r+'))).toBe('EISDIR')
    await (await fs.open('/d', 'r')).close()
    expect(await codeOf(fs.open('/f/x', 'r'))).toBe('ENOTDIR')
    expect(await codeOf(fs.open('/f/', 'r'))).toBe('ENOTDIR')
    expect(await codeOf(fs.open('/nowhere/x', 'r+'))).toBe('ENOENT')
  },
  'links/hard': async (fs) => {
    await fs.writeFile('/one', 'shared')
    await fs.link('/one', '/two')
    expect((await fs.stat('/one')).nlink).toBe(2)
    expect((await fs.stat('/two')).ino).toBe((await fs.stat('/one')).ino)
    await fs.unlink('/one')
    expect(await fs.readFile('/two', 'utf8')).toBe('shared')
    expect((await fs.stat('/two')).nlink).toBe(1)
  },
  'meta/chmod': async (fs) => {
    await fs.writeFile('/m', 'x')
    await fs.chmod('/m', 0o640)
    expect((await fs.stat('/m')).mode & 0o777).toBe(0o640)
  },
  'meta/utimes': async (fs) => {
    await fs.writeFile('/u', 'x')
    await fs.utimes('/u', 1_000_000, 2_000_000)
    expect(Math.round((await fs.stat('/u')).mtimeMs)).toBe(2_000_000_000)
  },
  'search/glob-and-grep': async (fs) => {
    await fs.mkdir('/src/lib', { recursive: true })
    await fs.writeFile('/src/a.ts', 'const TODO = 1\n')
    await fs.writeFile('/src/lib/b.ts', 'ok\nTODO later\n')
    await fs.writeFile('/src/c.md', 'TODO\n')
    const globbed = (await fs.glob('**/*.ts', { cwd: '/src' })).map((m) => m.path).sort()
    expect(globbed).toEqual(['/src/a.ts', '/src/lib/b.ts'])
    const grepped = (await fs.grep('TODO', { path: '/src' })).map((m) => `${m.path}:${m.line}`)
    expect(grepped.sort()).toEqual(['/src/a.ts:1', '/src/c.md:1', '/src/lib/b.ts:2'])
  },
}

/** The ids of every test, for skip maps. */
export const FILESYSTEM_SUITE_IDS = Object.keys(CASES)

/**
 * Registers the `FileSystem` contract with vitest for one implementation: `make` gives a fresh,
 * empty filesystem per test. A skip needs a reason, and a skip id that names no test fails.
 */
export function runFileSystemSuite(
  name: string,
  make: () => Promise<SuiteInstance>,
  options: FileSystemSuiteOptions = {},
): void {
  const skips = options.skip ?? {}
  describe(`FileSystem contract: ${name}`, () => {
    let current: SuiteInstance | undefined
    afterEach(async () => {
      await current?.dispose?.()
      current = undefined
    })
    test('every skip names a test and gives a reason', () => {
      for (const [id, reason] of Object.entries(skips)) {
        expect(FILESYSTEM_SUITE_IDS, `unknown skip id ${id}`).toContain(id)
        expect(reason.length, id).toBeGreaterThan(10)
      }
    })
    for (const [id, run] of Object.entries(CASES)) {
      const reason = skips[id]
      if (reason !== undefined) {
        test.skip(`${id} — skipped: ${reason}`, () => {})
        continue
      }
      test(id, async () => {
        current = await make()
        await run(current.fs)
      })
    }
  })
}
