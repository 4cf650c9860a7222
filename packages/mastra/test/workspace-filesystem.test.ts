import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fixedClock } from '@agentfs/core'
import { HostFileSystem } from '@agentfs/overlay'
import { AgentFS } from '@agentfs/sdk'
import {
  DirectoryNotEmptyError,
  DirectoryNotFoundError,
  FileExistsError,
  FileNotFoundError,
  IsDirectoryError,
  NotDirectoryError,
  PermissionError,
  StaleFileError,
  WorkspaceReadOnlyError,
} from '@mastra/core/workspace'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { AgentFSFilesystem } from '../src/index.js'

let agent: AgentFS
beforeEach(async () => {
  agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
})
afterEach(async () => {
  await agent.close()
})

describe('the WorkspaceFilesystem contract', () => {
  test('read, write (recursive, overwrite, expectedMtime), append', async () => {
    const fs = new AgentFSFilesystem({ fs: agent.fs })
    await fs._init()
    expect(fs.status).toBe('ready')
    await fs.writeFile('/a/b/c.txt', 'one')
    expect(await fs.readFile('/a/b/c.txt', { encoding: 'utf8' })).toBe('one')
    expect(Buffer.isBuffer(await fs.readFile('a/b/c.txt'))).toBe(true)
    await expect(fs.writeFile('/x/y.txt', 'z', { recursive: false })).rejects.toBeInstanceOf(
      DirectoryNotFoundError,
    )
    await expect(fs.writeFile('/a/b/c.txt', 'two', { overwrite: false })).rejects.toBeInstanceOf(
      FileExistsError,
    )
    const { modifiedAt } = await fs.stat('/a/b/c.txt')
    await fs.writeFile('/a/b/c.txt', 'two', { expectedMtime: modifiedAt })
    await agent.fs.utimes('/a/b/c.txt', 1, 1)
    await expect(
      fs.writeFile('/a/b/c.txt', 'three', { expectedMtime: modifiedAt }),
    ).rejects.toBeInstanceOf(StaleFileError)
    expect(await fs.readFile('/a/b/c.txt', { encoding: 'utf8' })).toBe('two')
    await fs.appendFile('/new/log.txt', 'x')
    await fs.appendFile('/new/log.txt', Buffer.from('y'))
    expect(await agent.fs.readFile('/new/log.txt', 'utf8')).toBe('xy')
    await expect(fs.readFile('/missing')).rejects.toBeInstanceOf(FileNotFoundError)
    await expect(fs.readFile('/a')).rejects.toBeInstanceOf(IsDirectoryError)
  })

  test('delete, copy, move, mkdir, rmdir raise the documented errors', async () => {
    const fs = new AgentFSFilesystem({ fs: agent.fs })
    await fs.writeFile('/d/f.txt', 'f')
    await expect(fs.deleteFile('/d')).rejects.toBeInstanceOf(IsDirectoryError)
    await expect(fs.deleteFile('/nope')).rejects.toBeInstanceOf(FileNotFoundError)
    await fs.deleteFile('/nope', { force: true })
    await fs.copyFile('/d/f.txt', '/e/g.txt')
    await expect(fs.copyFile('/d/f.txt', '/e/g.txt', { overwrite: false })).rejects.toBeInstanceOf(
      FileExistsError,
    )
    await expect(fs.copyFile('/d', '/d2')).rejects.toBeInstanceOf(IsDirectoryError)
    await fs.copyFile('/d', '/d2', { recursive: true })
    expect(await fs.readFile('/d2/f.txt', { encoding: 'utf8' })).toBe('f')
    await expect(fs.copyFile('/none', '/z')).rejects.toBeInstanceOf(FileNotFoundError)
    await expect(fs.moveFile('/d/f.txt', '/e/g.txt', { overwrite: false })).rejects.toBeInstanceOf(
      FileExistsError,
    )
    await fs.moveFile('/d/f.txt', '/moved/f.txt')
    expect(await fs.exists('/d/f.txt')).toBe(false)
    expect(await fs.exists('/moved/f.txt')).toBe(true)
    await expect(fs.moveFile('/none', '/z')).rejects.toBeInstanceOf(FileNotFoundError)
    await fs.mkdir('/m/n/o')
    await fs.mkdir('/m/n/o')
    await expect(fs.mkdir('/q/r', { recursive: false })).rejects.toBeInstanceOf(
      DirectoryNotFoundError,
    )
    await expect(fs.mkdir('/e/g.txt')).rejects.toBeInstanceOf(FileExistsError)
    await expect(fs.rmdir('/m')).rejects.toBeInstanceOf(DirectoryNotEmptyError)
    await expect(fs.rmdir('/e/g.txt')).rejects.toBeInstanceOf(NotDirectoryError)
    await expect(fs.rmdir('/gone')).rejects.toBeInstanceOf(DirectoryNotFoundError)
    await fs.rmdir('/gone', { force: true })
    await fs.rmdir('/m', { recursive: true })
    expect(await fs.exists('/m')).toBe(false)
  })

  test('readdir (recursive, extension, depth), walk, stat, realpath, grep', async () => {
    const fs = new AgentFSFilesystem({ fs: agent.fs })
    await fs.writeFile('/src/a.ts', 'export const a = 1\n')
    await fs.writeFile('/src/lib/b.ts', 'const b = "TODO later"\nconst c = 2\n')
    await fs.writeFile('/src/.hidden/c.ts', 'TODO hidden\n')
    await fs.writeFile('/README.md', '# todo\n')
    await agent.fs.symlink('/src', '/link')
    await agent.fs.symlink('/link', '/src/lib/loop')
    const top = await fs.readdir('/')
    expect(top.map((e) => [e.name, e.type, e.isSymlink === true])).toEqual([
      ['README.md', 'file', false],
      ['link', 'directory', true],
      ['src', 'directory', false],
    ])
    expect(top.find((e) => e.name === 'link')!.symlinkTarget).toBe('/src')
    const deep = await fs.readdir('/src', { recursive: true, extension: '.ts' })
    expect(deep.map((e) => e.name).sort()).toEqual([
      '.hidden',
      '.hidden/c.ts',
      'a.ts',
      'lib',
      'lib/b.ts',
      'lib/loop',
    ])
    expect((await fs.readdir('/src', { recursive: true, maxDepth: 0 })).map((e) => e.name)).toEqual(
      ['.hidden', 'a.ts', 'lib'],
    )
    await expect(fs.readdir('/README.md')).rejects.toBeInstanceOf(NotDirectoryError)
    await expect(fs.readdir('/none')).rejects.toBeInstanceOf(DirectoryNotFoundError)
    const walked = await fs.walk('/src')
    expect(walked.map((e) => e.path)).toEqual(['a.ts', 'lib', 'lib/b.ts', 'lib/loop'])
    const st = await fs.stat('/src/a.ts')
    expect(st).toMatchObject({ name: 'a.ts', path: '/src/a.ts', type: 'file', size: 19 })
    expect((await fs.stat('/')).type).toBe('directory')
    expect(await fs.realpath('/link/a.ts')).toBe('/src/a.ts')
    const hits = await fs.grep({
      pattern: 'todo',
      path: '/',
      caseSensitive: false,
      includeHidden: false,
      contextLines: 1,
    })
    expect(hits).toEqual([
      {
        path: 'README.md',
        matches: [{ line: 1, column: 2, text: '# todo', before: [], after: [] }],
      },
      {
        path: 'src/lib/b.ts',
        matches: [
          {
            line: 1,
            column: 11,
            text: 'const b = "TODO later"',
            before: [],
            after: ['const c = 2'],
          },
        ],
      },
    ])
    // A pattern that takes exponential time in a backtracking engine runs in linear time here.
    await fs.writeFile('/evil.txt', `${'a'.repeat(5000)}!`)
    const evil = await fs.grep({
      pattern: '(a+)+$',
      path: '/evil.txt',
      caseSensitive: true,
      includeHidden: false,
    })
    expect(evil).toEqual([])
    await expect(
      fs.grep({ pattern: '(a)\\1', path: '/', caseSensitive: true, includeHidden: false }),
    ).rejects.toThrow(/backreferences/)
  })

  test('a listing that would exceed maxEntries is refused instead of running on', async () => {
    const fs = new AgentFSFilesystem({ fs: agent.fs, maxEntries: 10 })
    for (let i = 0; i < 11; i++) await agent.fs.writeFile(`/f${i}`, '')
    await expect(fs.readdir('/')).rejects.toThrow(/more than 10 entries/)
  })
})

describe('policy', () => {
  test('read-only raises WorkspaceReadOnlyError for every change and changes nothing', async () => {
    await agent.fs.writeFile('/keep.txt', 'keep')
    const fs = new AgentFSFilesystem({ fs: agent.fs, readOnly: true })
    expect(fs.getInfo().readOnly).toBe(true)
    const attempts: Array<() => Promise<unknown>> = [
      () => fs.writeFile('/keep.txt', 'x'),
      () => fs.appendFile('/keep.txt', 'x'),
      () => fs.deleteFile('/keep.txt'),
      () => fs.copyFile('/keep.txt', '/copy.txt'),
      () => fs.moveFile('/keep.txt', '/moved.txt'),
      () => fs.mkdir('/dir'),
      () => fs.rmdir('/', { recursive: true }),
    ]
    for (const attempt of attempts)
      await expect(attempt()).rejects.toBeInstanceOf(WorkspaceReadOnlyError)
    expect(await fs.readFile('/keep.txt', { encoding: 'utf8' })).toBe('keep')
    expect(await agent.fs.readdir('/')).toEqual(['keep.txt'])
  })

  test('a root confines the agent: .., absolute paths and symlinks cannot leave it', async () => {
    await agent.fs.writeFile('/secret.txt', 'secret')
    await agent.fs.mkdir('/ws')
    await agent.fs.symlink('/secret.txt', '/ws/out')
    await agent.fs.symlink('/', '/ws/rootlink')
    await agent.fs.symlink('/elsewhere/new.txt', '/ws/dangling')
    const fs = new AgentFSFilesystem({ fs: agent.fs, root: '/ws' })
    await fs._init()
    await fs.writeFile('/inside.txt', 'in')
    expect(await agent.fs.readFile('/ws/inside.txt', 'utf8')).toBe('in')
    // .. above the root is refused as a traversal, not clamped to the root.
    for (const path of ['/', '.', '/inside/..'])
      await expect(fs.rmdir(path, { recursive: true })).rejects.toBeInstanceOf(PermissionError)
    expect(await agent.fs.readFile('/ws/inside.txt', 'utf8')).toBe('in')
    const climb = await fs.readFile('/../../secret.txt').catch((e) => e)
    expect(climb).toBeInstanceOf(PermissionError)
    expect(climb.message).toMatch(/path traversal/)
    for (const path of ['/out', '/rootlink/secret.txt', 'rootlink/secret.txt']) {
      await expect(fs.readFile(path)).rejects.toBeInstanceOf(PermissionError)
      await expect(fs.writeFile(path, 'pwned')).rejects.toBeInstanceOf(PermissionError)
    }
    await expect(fs.writeFile('/dangling', 'pwned')).rejects.toBeInstanceOf(PermissionError)
    await expect(fs.copyFile('/out', '/copy.txt')).rejects.toBeInstanceOf(PermissionError)
    await expect(fs.moveFile('/inside.txt', '/rootlink/moved.txt')).rejects.toBeInstanceOf(
      PermissionError,
    )
    expect(await fs.exists('/out')).toBe(false)
    const hits = await fs.grep({
      pattern: 'secret',
      path: '/',
      caseSensitive: true,
      includeHidden: true,
    })
    expect(hits).toEqual([])
    expect(await agent.fs.readFile('/secret.txt', 'utf8')).toBe('secret')
    expect(await agent.fs.exists('/elsewhere')).toBe(false)
  })

  test('allowedRoots on a host directory refuse paths outside them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfs-mastra-'))
    try {
      const host = new HostFileSystem({ root: dir, writable: true })
      await host.mkdir('/public')
      await host.writeFile('/private.txt', 'private')
      const fs = new AgentFSFilesystem({ fs: host, allowedRoots: ['/public'] })
      await fs.writeFile('/public/a.txt', 'a')
      await expect(fs.readFile('/private.txt')).rejects.toBeInstanceOf(PermissionError)
      await expect(fs.writeFile('/private.txt', 'x')).rejects.toBeInstanceOf(PermissionError)
      await host.symlink('/private.txt', '/public/leak')
      await expect(fs.readFile('/public/leak')).rejects.toBeInstanceOf(PermissionError)
      expect(await host.readFile('/private.txt', 'utf8')).toBe('private')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("getHistory and count: Mastra's filesystem audit, from the change feed", () => {
  test('every change inside the workspace, newest first, as the agent sees the paths; filters and pages', async () => {
    await agent.fs.mkdir('/ws', { recursive: true })
    const fs = new AgentFSFilesystem({ fs: agent.fs, root: '/ws', changes: agent.changes })
    await fs._init()
    await fs.writeFile('/notes/a.md', 'one')
    await fs.copyFile('/notes/a.md', '/notes/b.md')
    await fs.moveFile('/notes/b.md', '/c.md')
    await fs.deleteFile('/notes/a.md')
    await agent.fs.writeFile('/outside.txt', 'not in the workspace')
    await fs.rmdir('/notes')
    const history = await fs.getHistory()
    expect(history.map((e) => [e.operation, e.path, e.targetPath])).toEqual([
      ['rmdir', '/notes', undefined],
      ['delete', '/notes/a.md', undefined],
      ['move', '/notes/b.md', '/c.md'],
      ['copy', '/notes/a.md', '/notes/b.md'],
      ['write', '/notes/a.md', undefined],
      ['mkdir', '/notes', undefined],
      ['mkdir', '/', undefined], // the workspace's root itself, made before
    ])
    expect(history[4]).toMatchObject({ size: 3, metadata: { op: 'create' } })
    expect(history.every((e) => e.timestamp instanceof Date && /^\d+$/.test(e.id))).toBe(true)
    expect((await fs.getHistory({ operations: ['move', 'copy'] })).map((e) => e.operation)).toEqual(
      ['move', 'copy'],
    )
    expect((await fs.getHistory({ pathPrefix: '/c.md' })).map((e) => e.operation)).toEqual(['move'])
    expect((await fs.getHistory({ limit: 2, offset: 1 })).map((e) => e.operation)).toEqual([
      'delete',
      'move',
    ])
    expect(await fs.count()).toBe(history.length)
    expect(await fs.count({ operations: ['delete', 'rmdir'] })).toBe(2)
    const cut = history[2]!.timestamp
    expect(
      (await fs.getHistory({ until: new Date(cut.getTime() - 1) })).every((e) => e.timestamp < cut),
    ).toBe(true)
    expect((await fs.getHistory({ since: cut })).every((e) => e.timestamp >= cut)).toBe(true)
    // Without the feed: one clear error, not an empty history.
    await expect(new AgentFSFilesystem({ fs: agent.fs }).getHistory()).rejects.toThrow(
      /pass the change feed as the changes option/,
    )
  })
})
