import * as realFs from 'node:fs'
import { mkdtemp as hostMkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import git, { type FsClient } from 'isomorphic-git'
import { afterAll, describe, expect, test } from 'vitest'
import { toNodeFs } from '../src/index.js'
import { freshFs } from './helpers.js'

const hostDirs: string[] = []
afterAll(async () => {
  for (const dir of hostDirs) await rm(dir, { recursive: true, force: true })
})

const author = {
  name: 'Agent',
  email: 'agent@example.com',
  timestamp: 1_700_000_000,
  timezoneOffset: 0,
}

/** The same git work on any `fs`: init, commits on two branches, checkout, log. */
async function gitWork(fs: FsClient, dir: string) {
  const write = (path: string, text: string) =>
    (fs as typeof realFs).promises.writeFile(`${dir}/${path}`, text)
  await git.init({ fs, dir, defaultBranch: 'main' })
  await write('README.md', '# Project\n')
  await (fs as typeof realFs).promises.mkdir(`${dir}/src`)
  await write('src/app.ts', 'export const answer = 42\n')
  await git.add({ fs, dir, filepath: '.' })
  const first = await git.commit({ fs, dir, message: 'first', author })
  await git.branch({ fs, dir, ref: 'feature', checkout: true })
  await write('src/app.ts', 'export const answer = 43\n')
  await write('notes.txt', 'feature notes\n')
  await git.add({ fs, dir, filepath: 'src/app.ts' })
  await git.add({ fs, dir, filepath: 'notes.txt' })
  const second = await git.commit({ fs, dir, message: 'feature', author })
  await git.checkout({ fs, dir, ref: 'main' })
  const onMain = await (fs as typeof realFs).promises.readFile(`${dir}/src/app.ts`, 'utf8')
  const notesOnMain = await (fs as typeof realFs).promises.access(`${dir}/notes.txt`).then(
    () => true,
    () => false,
  )
  await git.checkout({ fs, dir, ref: 'feature' })
  const log = (await git.log({ fs, dir })).map((c) => [c.oid, c.commit.message])
  const status = await git.statusMatrix({ fs, dir })
  return {
    first,
    second,
    onMain,
    notesOnMain,
    log,
    status,
    branches: await git.listBranches({ fs, dir }),
  }
}

describe('toNodeFs', () => {
  test('isomorphic-git gives the same commit ids on AgentFS as on a real directory', async () => {
    const host = await hostMkdtemp(join(tmpdir(), 'agentfs-git-'))
    hostDirs.push(host)
    const expected = await gitWork(realFs, host)
    const { fs } = await freshFs('better-sqlite3')
    const actual = await gitWork(toNodeFs(fs) as unknown as FsClient, '/repo')
    expect(actual).toEqual(expected)
    expect(actual.onMain).toBe('export const answer = 42\n')
    expect(actual.notesOnMain).toBe(false)
    expect(actual.log.map(([, message]) => message)).toEqual(['feature\n', 'first\n'])
  })

  test('the callback API and descriptors behave as Node’s', async () => {
    const { fs } = await freshFs('better-sqlite3')
    const nfs = toNodeFs(fs)
    const call = <T>(fn: (...a: unknown[]) => void, ...args: unknown[]) =>
      new Promise<T>((resolve, reject) =>
        fn(...args, (error: Error | null, value: T) => (error ? reject(error) : resolve(value))),
      )
    await call(nfs.writeFile, '/a.txt', 'hello')
    expect(await call(nfs.readFile, '/a.txt', 'utf8')).toBe('hello')
    expect(await new Promise((r) => nfs.exists('/a.txt', r))).toBe(true)
    expect(await new Promise((r) => nfs.exists('/none', r))).toBe(false)
    const fd = await call<number>(nfs.open, '/a.txt', 'r+')
    const got = await new Promise<[number, Buffer]>((resolve, reject) =>
      nfs.read(fd, Buffer.alloc(3), 0, 3, 1, (e: Error | null, n: number, b: Buffer) =>
        e ? reject(e) : resolve([n, b]),
      ),
    )
    expect([got[0], got[1].toString()]).toEqual([3, 'ell'])
    await new Promise<void>((resolve, reject) =>
      nfs.write(fd, Buffer.from('J'), 0, 1, 0, (e: Error | null) => (e ? reject(e) : resolve())),
    )
    expect((await call<{ size: number }>(nfs.fstat, fd)).size).toBe(5)
    await call(nfs.close, fd)
    expect(await fs.readFile('/a.txt', 'utf8')).toBe('Jello')
    await expect(call(nfs.close, fd)).rejects.toMatchObject({ code: 'EBADF' })
    await expect(call(nfs.readFile, '/missing')).rejects.toMatchObject({
      code: 'ENOENT',
      syscall: 'open',
    })
    expect(() => nfs.readFileSync('/a.txt')).toThrow(/readFileSync needs a synchronous bridge/)
  })

  test('paths as Buffers and file URLs, modes as octal strings, as Node takes them', async () => {
    const { fs } = await freshFs('better-sqlite3')
    const { promises } = toNodeFs(fs) as unknown as { promises: typeof realFs.promises }
    await promises.writeFile(Buffer.from('/b.txt'), 'b', { mode: '600' as unknown as number })
    expect((await promises.stat(new URL('file:///b.txt'))).mode & 0o777).toBe(0o600)
    await promises.chmod('/b.txt', '755' as unknown as number)
    expect((await fs.stat('/b.txt')).mode & 0o777).toBe(0o755)
    await promises.mkdir('/d', '711' as unknown as number)
    expect((await fs.stat('/d')).mode & 0o777).toBe(0o711)
    // Node's own errors for bad modes, compared with node:fs on a real file.
    const host = await hostMkdtemp(join(tmpdir(), 'agentfs-mode-'))
    hostDirs.push(host)
    await realFs.promises.writeFile(join(host, 'f'), '')
    for (const bad of ['8', 'rwx', '', '0o755', -1, 1.5, {}, 2 ** 32, Number.NaN]) {
      const real = await realFs.promises.chmod(join(host, 'f'), bad as never).then(
        () => 'ok',
        (e: NodeJS.ErrnoException) => [e.name, e.code, e.message.replace(/Received .*/, '')],
      )
      const ours = await promises.chmod('/b.txt', bad as never).then(
        () => 'ok',
        (e: NodeJS.ErrnoException) => [e.name, e.code, e.message.replace(/Received .*/, '')],
      )
      expect(ours, String(bad)).toEqual(real)
    }
  })

  test('the filesystem itself takes octal string modes everywhere Node does', async () => {
    const { fs } = await freshFs('better-sqlite3')
    await fs.writeFile('/w', 'x', { mode: '640' })
    await fs.mkdir('/d', '750')
    await fs.mkdir('/e/f', { recursive: true, mode: '700' })
    const handle = await fs.open('/o', 'w', '600')
    await handle.chmod('604')
    await handle.close()
    await fs.chmod('/w', '0644')
    const modes = await Promise.all(
      ['/w', '/d', '/e', '/o'].map(async (p) => (await fs.stat(p)).mode & 0o777),
    )
    expect(modes).toEqual([0o644, 0o750 & ~0o022, 0o700, 0o604])
    // The filesystem's own methods raise typed errors (EINVAL, Node's wording as the hint);
    // toNodeFs raises Node's argument errors (the test above).
    await expect(fs.chmod('/w', '9')).rejects.toMatchObject({
      code: 'EINVAL',
      syscall: 'chmod',
      message: expect.stringContaining('must be a 32-bit unsigned integer or an octal string'),
    })
    await expect(fs.chmod('/w', -1)).rejects.toMatchObject({ code: 'EINVAL' })
    await expect(fs.mkdir('/g', 'x')).rejects.toMatchObject({ code: 'EINVAL', syscall: 'mkdir' })
    await expect(fs.writeFile('/h', 'x', { mode: 'rw' })).rejects.toMatchObject({ code: 'EINVAL' })
    expect(await fs.exists('/g')).toBe(false)
    expect(await fs.exists('/h')).toBe(false)
  })

  test('mkdtemp makes a fresh 0700 directory each time', async () => {
    const { fs } = await freshFs('better-sqlite3')
    const { promises } = toNodeFs(fs) as unknown as { promises: typeof realFs.promises }
    await fs.mkdir('/tmp')
    const a = await promises.mkdtemp('/tmp/run-')
    const b = await promises.mkdtemp('/tmp/run-')
    expect(a).toMatch(/^\/tmp\/run-[A-Za-z0-9]{6}$/)
    expect(a).not.toBe(b)
    expect((await fs.stat(a)).mode & 0o777).toBe(0o700)
    await expect(promises.mkdtemp('/missing/run-')).rejects.toMatchObject({ code: 'ENOENT' })
  })
})

test('errors through links name the path Node names (a dangling link in the way: the link)', async () => {
  const host = await hostMkdtemp(join(tmpdir(), 'agentfs-links-'))
  hostDirs.push(host)
  const { fs } = await freshFs('better-sqlite3')
  const setups: Array<[string, (root: string, f: typeof realFs.promises) => Promise<unknown>]> = [
    ['dangling', (r, f) => f.symlink(`${r}/missing`, `${r}/dangling`)],
    ['file', (r, f) => f.writeFile(`${r}/file`, 'x')],
    ['flink', (r, f) => f.symlink(`${r}/file`, `${r}/flink`)],
  ]
  const ours = toNodeFs(fs).promises as unknown as typeof realFs.promises
  for (const [, make] of setups) {
    await make(host, realFs.promises)
    await make('', ours)
  }
  const calls: Array<[string, (root: string, f: typeof realFs.promises) => Promise<unknown>]> = [
    ['mkdir -p through a dangling link', (r, f) => f.mkdir(`${r}/dangling/x`, { recursive: true })],
    ['mkdir -p on a dangling link', (r, f) => f.mkdir(`${r}/dangling`, { recursive: true })],
    ['mkdir -p through a file', (r, f) => f.mkdir(`${r}/file/a/b`, { recursive: true })],
    ['mkdir -p through a link to a file', (r, f) => f.mkdir(`${r}/flink/x`, { recursive: true })],
    ['writeFile through a dangling link', (r, f) => f.writeFile(`${r}/dangling/x`, 'y')],
    ['stat through a file', (r, f) => f.stat(`${r}/file/x`)],
    ['open through a link to a file', (r, f) => f.open(`${r}/flink/x`, 'w')],
  ]
  for (const [name, call] of calls) {
    const outcome = (root: string, f: typeof realFs.promises) =>
      call(root, f).then(
        () => 'ok',
        (e: NodeJS.ErrnoException) => [e.code, e.syscall, e.path?.slice(root.length)],
      )
    expect(await outcome('', ours), name).toEqual(await outcome(host, realFs.promises))
  }
})

describe('file handle streams, as Node’s', () => {
  const content = 'line one\nline two\r\nline three'

  async function both<T>(
    work: (open: (flags: string) => Promise<realFs.promises.FileHandle>) => Promise<T>,
  ) {
    const host = await hostMkdtemp(join(tmpdir(), 'agentfs-handle-'))
    hostDirs.push(host)
    await realFs.promises.writeFile(join(host, 'f'), content)
    const real = await work((flags) => realFs.promises.open(join(host, 'f'), flags))
    const { fs } = await freshFs('better-sqlite3')
    await fs.writeFile('/f', content)
    const ours = await work(
      (flags) => fs.open('/f', flags) as unknown as Promise<realFs.promises.FileHandle>,
    )
    return { real, ours }
  }

  test('createReadStream: chunks, bytesRead, start/end, the cursor, close(cb)', async () => {
    const { real, ours } = await both(async (open) => {
      const h = await open('r')
      const s = h.createReadStream({ start: 5, end: 12, highWaterMark: 4 })
      const chunks: string[] = []
      for await (const c of s) chunks.push(String(c))
      const h2 = await open('r')
      await h2.read(Buffer.alloc(5), 0, 5, null)
      const rest: string[] = []
      for await (const c of h2.createReadStream({ encoding: 'utf8' })) rest.push(c as string)
      const h3 = await open('r')
      const s3 = h3.createReadStream()
      const closed = await new Promise((resolve) => s3.close(() => resolve('closed')))
      return { chunks, bytesRead: s.bytesRead, rest: rest.join(''), closed }
    })
    expect(ours).toEqual(real)
  })

  test('createWriteStream, readLines, readableWebStream', async () => {
    const { real, ours } = await both(async (open) => {
      const w = await open('r+')
      const ws = w.createWriteStream({ start: 5 })
      ws.write('LINE')
      await new Promise((resolve) => ws.end(resolve))
      const r = await open('r')
      const lines: string[] = []
      for await (const line of r.readLines()) lines.push(line)
      const web = await open('r')
      const parts: string[] = []
      for await (const chunk of web.readableWebStream() as AsyncIterable<Uint8Array>)
        parts.push(Buffer.from(chunk).toString())
      await web.close()
      return { lines, written: ws.bytesWritten, web: parts.join('') }
    })
    expect(ours).toEqual(real)
    expect(ours.lines).toEqual(['line LINEline two', 'line three'])
  })
})
