import * as nodeFs from 'node:fs/promises'
import { fixedClock, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { createFileSystem } from '@agentfs/fs'
import { type DifferentialFs, snapshotTree } from '@agentfs/test-kit'
import { describe, expect, test } from 'vitest'
import { createOverlay, HostFileSystem, OverlayConflictError, openOverlay } from '../src/index.js'
import { hostOverlay } from './helpers.js'

const code = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: { code?: string }) => e.code,
  )

describe('overlay over a host directory', () => {
  test('reads fall through; writes copy up; the host tree never changes', async () => {
    const { overlay, snapshot } = await hostOverlay()
    const before = await snapshot()
    expect(await overlay.readFile('/src/lib/a.ts', 'utf8')).toBe('export const a = 1\n')
    expect(await overlay.readFile('/latest', 'utf8')).toBe('guide\n')
    expect(await overlay.readdir('/')).toEqual(['README.md', 'docs', 'latest', 'src'])
    await overlay.appendFile('/README.md', 'Line three.\n')
    await overlay.writeFile('/src/new.ts', 'new\n')
    await overlay.mkdir('/build/out', { recursive: true })
    await overlay.chmod('/src/index.ts', 0o600)
    await overlay.truncate('/docs/guide.md', 2)
    await overlay.rename('/src/lib', '/src/library')
    await overlay.unlink('/latest')
    await overlay.symlink('src/new.ts', '/latest')
    await overlay.link('/README.md', '/README.copy')
    expect(await overlay.readFile('/README.md', 'utf8')).toBe(
      '# Project\n\nLine two.\nLine three.\n',
    )
    expect(await overlay.readdir('/src')).toEqual(['index.ts', 'library', 'new.ts'])
    expect(await overlay.readFile('/src/library/a.ts', 'utf8')).toBe('export const a = 1\n')
    expect(await code(overlay.readFile('/src/lib/a.ts'))).toBe('ENOENT')
    expect(await overlay.readFile('/latest', 'utf8')).toBe('new\n')
    expect((await overlay.stat('/README.copy')).nlink).toBe(2)
    expect(await snapshot()).toEqual(before)
  })

  test('a keyed write or append copies up and applies once; the host directory refuses a key', async () => {
    const { overlay, dir, snapshot } = await hostOverlay()
    const before = await snapshot()
    await overlay.appendFile('/README.md', 'Line three.\n', { idempotencyKey: 'a1' })
    await overlay.appendFile('/README.md', 'Line three.\n', { idempotencyKey: 'a1' })
    await overlay.writeFile('/src/new.ts', 'new\n', { idempotencyKey: 'w1', flag: 'wx' })
    await overlay.writeFile('/src/new.ts', 'new\n', { idempotencyKey: 'w1', flag: 'wx' })
    expect(await overlay.readFile('/README.md', 'utf8')).toBe(
      '# Project\n\nLine two.\nLine three.\n',
    )
    expect(await overlay.readFile('/src/new.ts', 'utf8')).toBe('new\n')
    await expect(
      overlay.appendFile('/README.md', 'other', { idempotencyKey: 'a1' }),
    ).rejects.toMatchObject({ code: 'IDEMPOTENCY_MISMATCH' })
    expect(await snapshot()).toEqual(before)
    const host = new HostFileSystem({ root: dir, writable: true })
    await expect(
      host.appendFile('/README.md', 'x', { idempotencyKey: 'h1' }),
    ).rejects.toMatchObject({
      code: 'EINVAL',
      message: expect.stringMatching(/database filesystem/),
    })
    expect(await snapshot()).toEqual(before)
  })

  test('copy-up keeps mode, times and the base inode number (fs_origin)', async () => {
    const { overlay, dir, db } = await hostOverlay()
    const base = await nodeFs.stat(`${dir}/README.md`, { bigint: true })
    await overlay.utimes('/README.md', 1_000, 2_000)
    const stats = await overlay.stat('/README.md')
    expect(stats.ino).toBe(Number(base.ino))
    expect(stats.mode).toBe(Number(base.mode))
    expect(stats.mtimeMs).toBe(2_000_000)
    const origin = await db.execute({ sql: 'SELECT base_ino FROM fs_origin' })
    expect(origin.rows).toContainEqual({ base_ino: Number(base.ino) })
    await overlay.appendFile('/src/index.ts', '// more\n')
    const copied = await overlay.stat('/src/index.ts')
    expect(copied.ino).toBe(
      Number((await nodeFs.stat(`${dir}/src/index.ts`, { bigint: true })).ino),
    )
  })

  test('whiteouts per spec; re-creating removes them; a re-created directory is opaque', async () => {
    const { overlay, db } = await hostOverlay()
    await overlay.rm('/src', { recursive: true })
    await overlay.unlink('/README.md')
    const rows = await db.execute({
      sql: 'SELECT path, parent_path FROM fs_whiteout ORDER BY path',
    })
    expect(rows.rows).toEqual([
      { path: '/README.md', parent_path: '/' },
      { path: '/src', parent_path: '/' },
    ])
    expect(await overlay.readdir('/')).toEqual(['docs', 'latest'])
    await overlay.writeFile('/README.md', 'fresh')
    await overlay.mkdir('/src')
    expect(await overlay.readdir('/src')).toEqual([])
    expect(await code(overlay.readFile('/src/index.ts'))).toBe('ENOENT')
    const after = await db.execute<{ path: string }>({
      sql: 'SELECT path FROM fs_whiteout ORDER BY path',
    })
    expect(after.rows.map((r) => r.path)).toEqual(['/src/index.ts', '/src/lib'])
    expect(await overlay.readFile('/README.md', 'utf8')).toBe('fresh')
  })

  test('write handles and streams on base files outlive the copy-up transaction', async () => {
    const { overlay, snapshot } = await hostOverlay()
    const before = await snapshot()
    const handle = await overlay.open('/README.md', 'r+')
    await handle.write(Buffer.from('#!'), 0, 2, 0)
    await handle.write(Buffer.from(' appended'), 0, 9, (await handle.stat()).size)
    await handle.close()
    expect(await overlay.readFile('/README.md', 'utf8')).toBe('#!Project\n\nLine two.\n appended')
    const { pipeline } = await import('node:stream/promises')
    const { Readable } = await import('node:stream')
    await pipeline(
      Readable.from([Buffer.from('streamed '), Buffer.from('content')]),
      overlay.createWriteStream('/docs/guide.md'),
    )
    expect(await overlay.readFile('/docs/guide.md', 'utf8')).toBe('streamed content')
    const chunks: Buffer[] = []
    for await (const chunk of overlay.createReadStream('/src/lib/a.ts'))
      chunks.push(chunk as Buffer)
    expect(Buffer.concat(chunks).toString()).toBe('export const a = 1\n')
    expect(await snapshot()).toEqual(before)
  })

  test('POSIX errors through the merged view', async () => {
    const { overlay } = await hostOverlay()
    expect(await code(overlay.rmdir('/src'))).toBe('ENOTEMPTY')
    expect(await code(overlay.mkdir('/src'))).toBe('EEXIST')
    expect(await code(overlay.unlink('/docs'))).toBe('EISDIR')
    expect(await code(overlay.rename('/src', '/src/lib/x'))).toBe('EINVAL')
    expect(await code(overlay.writeFile('/README.md/x', 'no'))).toBe('ENOTDIR')
    expect(await code(overlay.link('/docs', '/d2'))).toBe('EPERM')
    expect(await code(overlay.writeFile('/README.md', 'x', { flag: 'wx' }))).toBe('EEXIST')
  })

  test('diff lists added, modified and deleted entries with unified diffs; discard resets', async () => {
    const { overlay } = await hostOverlay()
    await overlay.writeFile('/README.md', '# Project\n\nLine 2.\n')
    await overlay.writeFile('/notes.txt', 'hello\n')
    await overlay.unlink('/docs/guide.md')
    await overlay.chmod('/src/index.ts', 0o600)
    const changes = await overlay.diff()
    expect(changes.map((c) => [c.kind, c.path, c.type])).toEqual([
      ['modified', '/README.md', 'file'],
      ['deleted', '/docs/guide.md', 'file'],
      ['added', '/notes.txt', 'file'],
      ['modified', '/src/index.ts', 'file'],
    ])
    expect(changes[0]!.diff).toContain('-Line two.\n+Line 2.')
    expect(changes[2]!.diff).toContain('+hello')
    // The text diffs are made of has a budget (both sides counted); every change still listed.
    const [readme, guide] = changes.map((c) => c.path)
    const readmeCost = (await overlay.base.stat(readme!)).size + (await overlay.stat(readme!)).size
    const budgeted = await overlay.diff({ maxTextBytes: readmeCost })
    expect(budgeted.map((c) => [c.path, c.diff !== undefined])).toEqual([
      ['/README.md', true],
      [guide, false],
      ['/notes.txt', false],
      ['/src/index.ts', false],
    ])
    await expect(overlay.diff({ maxTextBytes: -1 })).rejects.toThrow(/maxTextBytes/)
    await overlay.discard()
    expect(await overlay.diff()).toEqual([])
    expect(await overlay.readFile('/docs/guide.md', 'utf8')).toBe('guide\n')
  })

  test('the diff of a wholly rewritten 10,000-line file is bounded: one linear hunk, at once', async () => {
    const { overlay, dir } = await hostOverlay()
    const lines = (tag: string) =>
      `${Array.from({ length: 10_000 }, (_, i) => `line ${i} ${tag}`).join('\n')}\n`
    await nodeFs.writeFile(`${dir}/big.txt`, lines('old'))
    await overlay.writeFile('/big.txt', lines('new'))
    // Quadratic diffing took 48 s here (a hang guard, not a speed target).
    const started = Date.now()
    const [change] = await overlay.diff()
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(change!.diff!.match(/^@@ -1,10000 \+1,10000 @@$/gm)).toHaveLength(1)
  })

  test('commit makes the host equal to the overlay; a base changed since copy-up is refused', async () => {
    const { overlay, dir, snapshot } = await hostOverlay()
    await overlay.writeFile('/README.md', 'rewritten\n')
    await overlay.rm('/src/lib', { recursive: true })
    await overlay.mkdir('/new/dir', { recursive: true })
    await overlay.writeFile('/new/dir/file.txt', 'content')
    await overlay.symlink('../README.md', '/new/link')
    await overlay.rename('/docs/guide.md', '/docs/manual.md')
    const view = await snapshotTree(overlay as unknown as DifferentialFs, '')
    const result = await overlay.commit(new HostFileSystem({ root: dir, writable: true }))
    expect(result.applied.length).toBeGreaterThan(0)
    expect(await snapshot()).toEqual(view)
    expect(await overlay.diff()).toEqual([])

    await overlay.writeFile('/README.md', 'overlay edit\n')
    await new Promise((resolve) => setTimeout(resolve, 20))
    await nodeFs.writeFile(`${dir}/README.md`, 'someone else edited the base\n')
    const error = await overlay
      .commit(new HostFileSystem({ root: dir, writable: true }))
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OverlayConflictError)
    expect((error as OverlayConflictError).conflicts[0]!.path).toBe('/README.md')
    expect(await nodeFs.readFile(`${dir}/README.md`, 'utf8')).toBe('someone else edited the base\n')
  })

  test('the base is stored in fs_overlay_config and restored by openOverlay', async () => {
    const { dir, db } = await hostOverlay()
    const config = await db.execute({
      sql: 'SELECT key, value FROM fs_overlay_config ORDER BY key',
    })
    expect(config.rows).toEqual([
      { key: 'base_kind', value: 'host' },
      { key: 'base_path', value: dir },
    ])
    const reopened = await openOverlay(db)
    expect(await reopened.readFile('/docs/guide.md', 'utf8')).toBe('guide\n')
    // The reference CLI writes only base_path: a host directory.
    await db.execute({ sql: "DELETE FROM fs_overlay_config WHERE key = 'base_kind'" })
    expect((await openOverlay(db)).base).toBeInstanceOf(HostFileSystem)
  })

  test('the host filesystem refuses writes and links that leave its root', async () => {
    const { dir } = await hostOverlay()
    const host = new HostFileSystem({ root: dir })
    expect(await code(host.writeFile('/x', 'y'))).toBe('EROFS')
    await nodeFs.symlink('/etc/hostname', `${dir}/escape`)
    expect(await code(host.readFile('/escape'))).toBe('EACCES')
    expect(await host.readFile('/../../docs/guide.md', 'utf8')).toBe('guide\n')
  })
})

describe('overlay over another AgentFS database', () => {
  test('copy-on-write, diff and commit into the base database', async () => {
    const baseDb = await openDatabase({
      driver: betterSqlite3Driver({ path: ':memory:' }),
      clock: fixedClock(),
    })
    const base = createFileSystem(baseDb)
    await base.mkdir('/proj')
    await base.writeFile('/proj/a.txt', 'base a')
    const deltaDb = await openDatabase({
      driver: betterSqlite3Driver({ path: ':memory:' }),
      clock: fixedClock(),
    })
    const overlay = await createOverlay({
      base,
      delta: createFileSystem(deltaDb),
      describeBase: { kind: 'agentfs', path: '/srv/base.db' },
    })
    await overlay.writeFile('/proj/a.txt', 'overlay a')
    await overlay.writeFile('/proj/b.txt', 'overlay b')
    expect(await base.readFile('/proj/a.txt', 'utf8')).toBe('base a')
    expect((await overlay.stat('/proj/a.txt')).ino).toBe((await base.stat('/proj/a.txt')).ino)
    expect((await overlay.diff()).map((c) => `${c.kind} ${c.path}`)).toEqual([
      'modified /proj/a.txt',
      'added /proj/b.txt',
    ])
    await overlay.commit()
    expect(await base.readFile('/proj/a.txt', 'utf8')).toBe('overlay a')
    expect(await base.readFile('/proj/b.txt', 'utf8')).toBe('overlay b')
    await expect(openOverlay(deltaDb)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(
      await (await openOverlay(deltaDb, { openBase: async () => base })).readFile(
        '/proj/b.txt',
        'utf8',
      ),
    ).toBe('overlay b')
    await baseDb.close()
    await deltaDb.close()
  })
})

describe('opendir', () => {
  test('the overlay and the host directory list merged entries in order; ERR_DIR_CLOSED after close', async () => {
    const { overlay, dir } = await hostOverlay()
    await overlay.writeFile('/src/new.ts', 'new\n')
    await overlay.unlink('/src/index.ts')
    for (const fs of [overlay, new HostFileSystem({ root: dir })]) {
      const handle = await fs.opendir('/src')
      expect(handle.path).toBe('/src')
      const names: string[] = []
      for await (const entry of handle) names.push(entry.name)
      expect(names).toEqual(fs === overlay ? ['lib', 'new.ts'] : ['index.ts', 'lib'])
      // As in Node: iterating closed the handle.
      expect(await code(handle.read())).toBe('ERR_DIR_CLOSED')
      expect(await code(handle.close())).toBe('ERR_DIR_CLOSED')
      const again = await fs.opendir('/src')
      expect((await again.read())?.name).toBe(names[0])
      await again.close()
      expect(await code(again.read())).toBe('ERR_DIR_CLOSED')
      expect(await code(again.close())).toBe('ERR_DIR_CLOSED')
    }
  })
})
