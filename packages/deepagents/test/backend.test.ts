import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fixedClock } from '@agentfs/core'
import { HostFileSystem } from '@agentfs/overlay'
import { AgentFS } from '@agentfs/sdk'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { AgentFSBackend } from '../src/index.js'

let agentfs: AgentFS
beforeEach(async () => {
  agentfs = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
})
afterEach(async () => {
  await agentfs.close()
})

describe('the backend protocol', () => {
  test('read pages by lines as the protocol defines', async () => {
    const backend = new AgentFSBackend({ fs: agentfs.fs })
    await agentfs.fs.writeFile(
      '/long.txt',
      `${Array.from({ length: 7 }, (_, i) => `l${i + 1}`).join('\n')}\n`,
    )
    expect(await backend.read('/long.txt', 2, 3)).toEqual({
      content: 'l3\nl4\nl5',
      mimeType: 'text/plain',
      totalLines: 7,
      startLine: 3,
      endLine: 5,
      nextOffset: 5,
    })
    expect(await backend.read('/long.txt', 5)).toMatchObject({ content: 'l6\nl7\n', endLine: 7 })
    expect(await backend.read('/long.txt', 9)).toEqual({
      error: 'Line offset 9 exceeds file length (7 lines)',
    })
    expect(await backend.read('/missing.txt')).toEqual({ error: "File '/missing.txt' not found" })
    await agentfs.fs.writeFile('/empty.md', '')
    expect((await backend.read('/empty.md')).content).toMatch(/empty contents/)
  })

  test('binary files: written from base64, read as bytes, downloaded and uploaded as bytes', async () => {
    const backend = new AgentFSBackend({ fs: agentfs.fs })
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 255])
    expect(await backend.write('/img/a.png', png.toString('base64'))).toEqual({
      path: '/img/a.png',
      filesUpdate: null,
    })
    expect(Buffer.from(await agentfs.fs.readFile('/img/a.png'))).toEqual(png)
    const read = await backend.read('/img/a.png')
    expect(read.mimeType).toBe('image/png')
    // A plain Uint8Array, as deepagents' own backends return (not a Buffer).
    expect(Object.getPrototypeOf(read.content)).toBe(Uint8Array.prototype)
    expect(Buffer.from(read.content as Uint8Array)).toEqual(png)
    const rawPng = (await backend.readRaw('/img/a.png')).data?.content
    expect(Object.getPrototypeOf(rawPng)).toBe(Uint8Array.prototype)
    expect(await backend.uploadFiles([['/up/b.bin', new Uint8Array([1, 2, 3])]])).toEqual([
      { path: '/up/b.bin', error: null },
    ])
    expect(await backend.downloadFiles(['/up/b.bin', '/nope', '/up'])).toEqual([
      { path: '/up/b.bin', content: new Uint8Array([1, 2, 3]), error: null },
      { path: '/nope', content: null, error: 'file_not_found' },
      { path: '/up', content: null, error: 'is_directory' },
    ])
    const raw = await backend.readRaw('/up/b.bin')
    expect(raw.data?.content).toBe('\u0001\u0002\u0003')
  })

  test('edit: text that differs from the file only in line ends or indentation is found, in the file style', async () => {
    const backend = new AgentFSBackend({ fs: agentfs.fs })
    await agentfs.fs.writeFile('/w.go', 'func f() {\r\n\treturn 1\r\n}\r\n')
    expect(await backend.edit('/w.go', '    return 1\n}', '    return 2\n}')).toMatchObject({
      occurrences: 1,
    })
    expect(await agentfs.fs.readFile('/w.go', 'utf8')).toBe('func f() {\r\n\treturn 2\r\n}\r\n')
    expect(await backend.edit('/w.go', 'return 3', 'return 4')).toEqual({
      error: "Error: String not found in file: 'return 3'",
    })
  })

  test('edit: exactly one match unless replaceAll, and only on the version it read', async () => {
    const backend = new AgentFSBackend({ fs: agentfs.fs })
    await agentfs.fs.writeFile('/a.md', 'x y x\n')
    expect(await backend.edit('/a.md', 'x', 'z')).toEqual({
      error:
        "Error: String 'x' has multiple occurrences (appears 2 times) in file. Use replace_all=True to replace all instances, or provide a more specific string with surrounding context.",
    })
    expect(await backend.edit('/a.md', 'q', 'z')).toEqual({
      error: "Error: String not found in file: 'q'",
    })
    expect(await backend.edit('/a.md', 'x', 'z', true)).toMatchObject({ occurrences: 2 })
    expect(await agentfs.fs.readFile('/a.md', 'utf8')).toBe('z y z\n')
    // A change between the read and the write is not overwritten.
    const racing = new AgentFSBackend({
      fs: new Proxy(agentfs.fs, {
        get(target, key, receiver) {
          const value = Reflect.get(target, key, receiver)
          if (key !== 'readFile') return typeof value === 'function' ? value.bind(target) : value
          return async (...args: unknown[]) => {
            const text = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args)
            await target.writeFile('/a.md', 'changed by someone else\n')
            return text
          }
        },
      }),
    })
    expect((await racing.edit('/a.md', 'y', 'w')).error).toMatch(
      /changed while it was being edited/,
    )
    expect(await agentfs.fs.readFile('/a.md', 'utf8')).toBe('changed by someone else\n')
  })

  test('ls, glob, grep, delete', async () => {
    const backend = new AgentFSBackend({ fs: agentfs.fs, maxResults: 2 })
    await agentfs.fs.mkdir('/src/lib', { recursive: true })
    await agentfs.fs.writeFile('/src/a.ts', 'TODO a\n')
    await agentfs.fs.writeFile('/src/lib/b.ts', 'TODO b\nTODO c\n')
    await agentfs.fs.writeFile('/src/lib/c.py', 'TODO py\n')
    expect((await backend.ls('/src')).files?.map((f) => [f.path, f.is_dir])).toEqual([
      ['/src/a.ts', false],
      ['/src/lib/', true],
    ])
    expect(await backend.glob('**/*.ts', '/src')).toMatchObject({
      files: [{ path: '/src/a.ts' }, { path: '/src/lib/b.ts' }],
    })
    expect(await backend.grep('TODO', '/src', '*.ts')).toEqual({
      matches: [
        { path: '/src/a.ts', line: 1, text: 'TODO a' },
        { path: '/src/lib/b.ts', line: 1, text: 'TODO b' },
      ],
      truncated: true,
    })
    // Literal: regular expression syntax is searched as text.
    expect(await backend.grep('(a+)+$', '/')).toEqual({ matches: [] })
    expect(await backend.delete('/src/lib')).toEqual({ path: '/src/lib', filesUpdate: null })
    expect(await agentfs.fs.readdir('/src')).toEqual(['a.ts'])
    expect(await backend.delete('/src/lib')).toEqual({ error: "Error: '/src/lib' not found" })
  })

  test('glob on a sandbox (one that can execute): paths relative to the searched directory, directories included, as deepagents shell backends answer', async () => {
    const execute = async () => ({ stdout: '', stderr: '', exitCode: 0 })
    const sandbox = new AgentFSBackend({ fs: agentfs.fs, execute })
    const plain = new AgentFSBackend({ fs: agentfs.fs })
    await agentfs.fs.mkdir('/src/lib', { recursive: true })
    await agentfs.fs.writeFile('/src/a.ts', 'a')
    await agentfs.fs.writeFile('/src/lib/b.ts', 'b')
    expect((await sandbox.glob('**', '/src')).files?.map((f) => [f.path, f.is_dir])).toEqual([
      ['/a.ts', false],
      ['/lib', true],
      ['/lib/b.ts', false],
    ])
    expect((await sandbox.glob('*.ts', '/')).files).toEqual([])
    expect((await plain.glob('**', '/src')).files?.map((f) => f.path)).toEqual([
      '/src/a.ts',
      '/src/lib/b.ts',
    ])
  })

  test("symlinks: followed inside the roots by default; refused with deepagents' texts with symlinks: 'refuse'", async () => {
    await agentfs.fs.writeFile('/real.md', 'real\n')
    await agentfs.fs.symlink('/real.md', '/link.md')
    const follow = new AgentFSBackend({ fs: agentfs.fs })
    expect((await follow.read('/link.md')).content).toBe('real\n')
    const refuse = new AgentFSBackend({ fs: agentfs.fs, symlinks: 'refuse' })
    expect(await refuse.read('/link.md')).toEqual({ error: 'Symlinks are not allowed: /link.md' })
    expect(await refuse.readRaw('/link.md')).toEqual({
      error: 'Symlinks are not allowed: /link.md',
    })
    expect(await refuse.write('/link.md', 'x')).toEqual({
      error: 'Cannot write to /link.md because it is a symlink. Symlinks are not allowed.',
    })
    expect(await refuse.edit('/link.md', 'real', 'x')).toEqual({
      error: 'Error: Symlinks are not allowed: /link.md',
    })
    expect(await agentfs.fs.readFile('/real.md', 'utf8')).toBe('real\n')
    // The file itself is read and written as usual.
    expect((await refuse.read('/real.md')).content).toBe('real\n')
  })
})

test('allowedRoots on a host directory: every operation refuses paths outside, links included', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentfs-deep-'))
  try {
    const host = new HostFileSystem({ root: dir, writable: true })
    await host.mkdir('/public')
    await host.writeFile('/private.txt', 'the host key\n')
    await host.symlink('/private.txt', '/public/leak')
    await host.symlink('/', '/public/up')
    const backend = new AgentFSBackend({ fs: host, allowedRoots: ['/public'] })
    const outcomes = [
      await backend.read('/private.txt'),
      await backend.read('/public/leak'),
      await backend.read('/public/up/private.txt'),
      await backend.readRaw('/public/leak').catch((e: Error) => ({ error: e.message })),
      await backend.write('/public/leak', 'pwned'),
      await backend.write('/public/up/private.txt', 'pwned'),
      await backend.edit('/public/leak', 'key', 'pwned'),
      await backend.delete('/public/up/private.txt'),
      await backend.ls('/public/up'),
      await backend.glob('**/*', '/public'),
      await backend.grep('host key', '/public'),
      await backend.uploadFiles([['/public/up/private.txt', new Uint8Array([1])]]),
      await backend.downloadFiles(['/public/leak', '/private.txt']),
    ]
    expect(JSON.stringify(outcomes)).not.toContain('host key')
    expect(outcomes[11]).toEqual([{ path: '/public/up/private.txt', error: 'permission_denied' }])
    expect(outcomes[12]).toEqual([
      { path: '/public/leak', content: null, error: 'permission_denied' },
      { path: '/private.txt', content: null, error: 'permission_denied' },
    ])
    expect(await host.readFile('/private.txt', 'utf8')).toBe('the host key\n')
    // Deleting the link removes the link, not what it leads to.
    expect(await backend.delete('/public/leak')).toEqual({
      path: '/public/leak',
      filesUpdate: null,
    })
    expect(await host.readFile('/private.txt', 'utf8')).toBe('the host key\n')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

describe("a root is the agent's /: never deleted, never left", () => {
  test("delete('/') with a root removes nothing and is refused as without one", async () => {
    await agentfs.fs.mkdir('/workspace/src', { recursive: true })
    await agentfs.fs.writeFile('/workspace/src/a.ts', 'a')
    await agentfs.fs.writeFile('/outside.txt', 'o')
    const rooted = new AgentFSBackend({ fs: agentfs.fs, root: '/workspace' })
    const plain = new AgentFSBackend({ fs: agentfs.fs })
    for (const path of ['/', '', '.', '/.', '/src/..'])
      expect((await rooted.delete(path)).error, path).toMatch(/root directory cannot be deleted/)
    expect((await plain.delete('/')).error).toMatch(/root directory cannot be deleted/)
    expect(await agentfs.fs.readFile('/workspace/src/a.ts', 'utf8')).toBe('a')
    expect(await agentfs.fs.readFile('/outside.txt', 'utf8')).toBe('o')
  })

  test('.. above the root is refused as a path traversal, not clamped to the root', async () => {
    await agentfs.fs.mkdir('/workspace', { recursive: true })
    await agentfs.fs.writeFile('/workspace/a.txt', 'a')
    const rooted = new AgentFSBackend({ fs: agentfs.fs, root: '/workspace' })
    for (const path of ['/../a.txt', '../a.txt', '/x/../../a.txt', '/..'])
      expect((await rooted.read(path)).error, path).toMatch(/path traversal/)
    expect((await rooted.write('/../../b.txt', 'b')).error).toMatch(/path traversal/)
    expect((await rooted.delete('/..')).error).toMatch(/path traversal/)
    expect(await agentfs.fs.exists('/workspace/b.txt')).toBe(false)
    expect(await agentfs.fs.readFile('/workspace/a.txt', 'utf8')).toBe('a')
    // Inside the root, .. is fine.
    expect((await rooted.read('/x/../a.txt')).content).toBe('a')
  })
})
