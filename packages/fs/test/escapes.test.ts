import { type Driver, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { describe, expect, test } from 'vitest'
import { createFileSystem, type FsPolicy, MAX_FILE_SIZE } from '../src/index.js'
import { typedCode } from './helpers.js'

// Escape attempts against the policy (issue: hostile agents). Each test failed before the fix
// it names: the attack landed a change outside the roots or destroyed protected content.

async function setup(policy: FsPolicy, driver: Driver = betterSqlite3Driver({ path: ':memory:' })) {
  const db = await openDatabase({ driver })
  const admin = createFileSystem(db)
  await admin.mkdir('/workspace/src', { recursive: true })
  await admin.mkdir('/secret')
  await admin.writeFile('/workspace/src/a.ts', 'export const a = 1\n')
  await admin.writeFile('/secret/key', 'sk-123')
  return { db, admin, fs: createFileSystem(db, { policy }) }
}

const code = typedCode

const ROOTS: FsPolicy = {
  read: ['/', '/workspace', '/workspace/**', '/secret', '/secret/**'],
  write: ['/workspace', '/workspace/**'],
}

describe('hard links are judged by inode', () => {
  test('linking a file the policy protects into a writable root is refused', async () => {
    const { fs, admin } = await setup(ROOTS)
    expect(await code(fs.link('/secret/key', '/workspace/key'))).toBe('EACCES')
    expect(await admin.readFile('/secret/key', 'utf8')).toBe('sk-123')
  })

  test('a write through an existing second name needs every name to allow it', async () => {
    const { fs, admin } = await setup({ ...ROOTS, readOnly: ['/workspace/locked/**'] })
    await admin.mkdir('/workspace/locked')
    await admin.writeFile('/workspace/locked/conf', 'original')
    // A link made before the policy applied (or by someone else).
    await admin.link('/workspace/locked/conf', '/workspace/alias')
    await admin.link('/secret/key', '/workspace/key-alias')
    for (const attempt of [
      fs.writeFile('/workspace/alias', 'changed'),
      fs.appendFile('/workspace/alias', 'more'),
      fs.truncate('/workspace/alias', 0),
      fs.open('/workspace/alias', 'r+'),
      fs.chmod('/workspace/alias', 0o777),
    ])
      expect(['EROFS', 'EACCES']).toContain(await code(attempt))
    expect(await code(fs.writeFile('/workspace/key-alias', 'stolen'))).toBe('EACCES')
    expect(await admin.readFile('/workspace/locked/conf', 'utf8')).toBe('original')
    expect(await admin.readFile('/secret/key', 'utf8')).toBe('sk-123')
    // Removing the second name changes no content: allowed.
    await fs.unlink('/workspace/key-alias')
  })
})

describe('mkdir -p through links', () => {
  test('missing components below a link are judged where they land', async () => {
    const { fs, admin } = await setup(ROOTS)
    await admin.symlink('/secret', '/workspace/link')
    expect(await code(fs.mkdir('/workspace/link/x/y', { recursive: true }))).toBe('EACCES')
    expect(await code(fs.mkdir('/workspace/new/../link/x/y', { recursive: true }))).toBe('EACCES')
    expect(await code(fs.mkdir('/workspace/n2/../../secret/x/y', { recursive: true }))).toBe(
      'EACCES',
    )
    expect(await admin.readdir('/secret')).toEqual(['key'])
    expect(await admin.exists('/workspace/new')).toBe(false)
    await fs.mkdir('/workspace/fine/a/b', { recursive: true })
  })
})

describe('listings never show what cannot be read', () => {
  const POLICY: FsPolicy = { read: ['/', '/workspace', '/workspace/**'] }

  test('glob through a link in the pattern, glob with cwd, opendir', async () => {
    const { fs, admin } = await setup(POLICY)
    await admin.symlink('/secret', '/workspace/link')
    expect((await fs.glob('workspace/link/*')).map((m) => m.path)).toEqual([])
    expect((await fs.glob('link/*', { cwd: '/workspace' })).map((m) => m.path)).toEqual([])
    expect((await fs.glob('**/key')).map((m) => m.path)).toEqual([])
    expect(await code(fs.glob('*', { cwd: '/secret' }))).toBe('EACCES')
    const dir = await fs.opendir('/')
    const names: string[] = []
    for await (const entry of dir) names.push(entry.name)
    expect(names).toEqual(['workspace'])
    expect(await code(fs.opendir('/workspace/link'))).toBe('EACCES')
  })
})

describe("deny: ['delete'] covers every way to destroy content", () => {
  test('overwrite, truncate, rename over, copy over, handle writes over existing bytes', async () => {
    const { fs, admin } = await setup({ deny: ['delete'] })
    await admin.writeFile('/workspace/memory.md', 'remember this')
    await admin.writeFile('/workspace/other.md', 'other')
    for (const attempt of [
      fs.writeFile('/workspace/memory.md', ''),
      fs.truncate('/workspace/memory.md', 3),
      fs.rename('/workspace/other.md', '/workspace/memory.md'),
      fs.copyFile('/workspace/other.md', '/workspace/memory.md'),
      fs.cp('/workspace/other.md', '/workspace/memory.md'),
      fs.open('/workspace/memory.md', 'w'),
    ])
      expect(await code(attempt)).toBe('EPERM')
    const handle = await fs.open('/workspace/memory.md', 'r+')
    expect(await code(handle.write('XX', 0))).toBe('EPERM')
    expect(await code(handle.truncate(0))).toBe('EPERM')
    expect(await code(handle.writeFile('new'))).toBe('EPERM')
    await handle.write(' too', 13)
    await handle.close()
    await fs.appendFile('/workspace/memory.md', '!')
    await fs.writeFile('/workspace/new.md', 'fresh')
    await fs.truncate('/workspace/new.md', 100)
    expect(await admin.readFile('/workspace/memory.md', 'utf8')).toBe('remember this too!')
  })
})

describe('check and change in one transaction', () => {
  test('a symlink swapped in between the check and the write never lands a file outside', async () => {
    // libSQL answers asynchronously, so concurrent calls interleave between statements; a
    // seeded jitter before each top-level statement provokes many different interleavings.
    const { db, fs, admin } = await setup(ROOTS, libsqlDriver({ url: ':memory:' }))
    await admin.mkdir('/workspace/real')
    let seed = 42
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    const tick = () => new Promise((resolve) => setImmediate(resolve))
    const execute = db.execute.bind(db)
    Object.assign(db, {
      execute: async (statement: Parameters<typeof execute>[0]) => {
        for (let k = Math.floor(random() * 4); k > 0; k--) await tick()
        return execute(statement)
      },
    })
    // Writes into dir/ (a link to real/, allowed) while the agent renames a link to /secret
    // over dir: a write checked before the swap must not land after it, through the new link.
    for (let round = 0; round < 100; round++) {
      await admin.symlink('/workspace/real', '/workspace/dir')
      await admin.symlink('/secret', '/workspace/evil')
      const writes = Array.from({ length: 6 }, (_, i) =>
        fs.writeFile(`/workspace/dir/f${round}-${i}`, 'x').catch(() => undefined),
      )
      const swap = fs.rename('/workspace/evil', '/workspace/dir')
      await Promise.all([swap, ...writes])
      await admin.unlink('/workspace/dir')
    }
    expect(await admin.readdir('/secret')).toEqual(['key'])
  })
})

describe('sizes', () => {
  test('a huge truncate or write offset is EFBIG at once; a large hole stores nothing', async () => {
    const { fs, db } = await setup({})
    await fs.writeFile('/workspace/f', 'abc')
    const start = Date.now()
    expect(await code(fs.truncate('/workspace/f', 999_999_999_999_999))).toBe('EFBIG')
    const handle = await fs.open('/workspace/f', 'r+')
    expect(await code(handle.write('x', MAX_FILE_SIZE))).toBe('EFBIG')
    await handle.close()
    // A 1 TiB sparse file: only the first chunk is stored, and reads see zeros past it.
    await fs.truncate('/workspace/f', 2 ** 40)
    expect(Date.now() - start).toBeLessThan(5000)
    const stats = await fs.stat('/workspace/f')
    expect(stats.size).toBe(2 ** 40)
    expect(stats.blocks).toBeLessThanOrEqual(8)
    const { rows } = await db.execute<{ n: number }>({
      sql: 'SELECT COUNT(*) AS n FROM fs_data WHERE ino = ?',
      params: [stats.ino],
    })
    expect(rows[0]!.n).toBe(1)
    const tail = await fs.open('/workspace/f', 'r')
    const { bytesRead, buffer } = await tail.read(Buffer.alloc(8), 0, 8, 2 ** 40 - 8)
    expect(bytesRead).toBe(8)
    expect([...buffer]).toEqual([0, 0, 0, 0, 0, 0, 0, 0])
    await tail.close()
    expect(await code(fs.readFile('/workspace/f'))).toBe('EFBIG')
    await fs.truncate('/workspace/f', 5000)
    const bytes = await fs.readFile('/workspace/f')
    expect(bytes.length).toBe(5000)
    expect(bytes.subarray(0, 3).toString()).toBe('abc')
    expect(bytes.subarray(3).every((b) => b === 0)).toBe(true)
  })
})

describe('grep on hostile content', () => {
  test('a 16 MiB file without a newline is searched in linear time (it took 32 s before)', async () => {
    const { fs } = await setup({})
    await fs.writeFile('/workspace/one-line.txt', Buffer.alloc(16 << 20, 0x61))
    const start = Date.now()
    // A regex, so every byte is read (a literal is filtered inside the engine first).
    const matches = await fs.grep('need+le', { path: '/workspace' })
    expect(matches).toEqual([])
    // A hang guard, not a speed target: quadratic concatenation needed ~30 s here.
    expect(Date.now() - start).toBeLessThan(10_000)
  }, 60_000)

  test('a regex that backtracks exponentially runs in linear time; lookaround is EINVAL', async () => {
    const { fs } = await setup({})
    await fs.writeFile('/workspace/a.txt', `${'a'.repeat(41)}b\n`)
    const start = Date.now()
    expect(await fs.grep('(a+)+$', { path: '/workspace' })).toEqual([])
    expect(Date.now() - start).toBeLessThan(10_000)
    expect(await code(fs.grep('(?=a)', { path: '/workspace' }))).toBe('EINVAL')
    expect((await fs.glob(`${'*a'.repeat(12)}*b`, { cwd: '/workspace' })).length).toBe(0)
  }, 60_000)
})
