import { spawnSync } from 'node:child_process'
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { afterAll, expect, test } from 'vitest'
import { createFileSystem } from '../src/index.js'

// `permissions: 'enforce'` against the kernel: the same tree (modes and owners) on a real
// directory and in a database, the same operations by an unprivileged user — a child process
// running as that user on the real one, the filesystem with that caller on the database — and
// the same outcome for every operation.
const USER = 65534
const GROUP = 65534
const asRoot = process.getuid?.() === 0

/** The tree: path, kind, mode, owner. */
const TREE: Array<[string, 'dir' | 'file', number, number, number]> = [
  ['/pub', 'dir', 0o755, 0, 0],
  ['/pub/r.txt', 'file', 0o644, 0, 0],
  ['/priv', 'dir', 0o700, 0, 0],
  ['/priv/s.txt', 'file', 0o600, 0, 0],
  ['/noexec', 'dir', 0o666, 0, 0],
  ['/noexec/f', 'file', 0o644, 0, 0],
  ['/wdir', 'dir', 0o777, 0, 0],
  ['/wdir/rootfile', 'file', 0o644, 0, 0],
  ['/sticky', 'dir', 0o1777, 0, 0],
  ['/sticky/rootfile', 'file', 0o666, 0, 0],
  ['/mine', 'dir', 0o755, USER, GROUP],
  ['/mine/m.txt', 'file', 0o600, USER, GROUP],
  ['/mine/ro.txt', 'file', 0o444, USER, GROUP],
  ['/mine/sub', 'dir', 0o755, USER, GROUP],
  ['/mine/sub/x', 'file', 0o644, USER, GROUP],
  ['/grp', 'dir', 0o770, 0, GROUP],
  ['/grp/g.txt', 'file', 0o640, 0, GROUP],
  ['/locked', 'dir', 0o555, USER, GROUP],
  ['/locked/inner', 'dir', 0o755, USER, GROUP],
  ['/locked/inner/f', 'file', 0o644, USER, GROUP],
  ['/mine/frozen', 'dir', 0o555, USER, GROUP],
  ['/mine/frozen2', 'dir', 0o555, USER, GROUP],
  ['/mine/g.txt', 'file', 0o644, USER, GROUP],
  ['/wdir/secret', 'file', 0o600, 0, 0],
]

/** Operations, in order (some change the tree): name, method, arguments (paths first). */
const OPS: Array<[string, string, ...unknown[]]> = [
  ['read a world-readable file', 'readFile', '/pub/r.txt'],
  ['write a file of root', 'writeFile', '/pub/r.txt', 'x'],
  ['read a private file', 'readFile', '/priv/s.txt'],
  ['stat through a directory without x for us', 'stat', '/priv/s.txt'],
  ['list a private directory', 'readdir', '/priv'],
  ['list a directory without x', 'readdir', '/noexec'],
  ['stat through a directory without x', 'stat', '/noexec/f'],
  ['create in a directory of root', 'writeFile', '/pub/new', 'x'],
  ['create in a world-writable directory', 'writeFile', '/wdir/new', 'x'],
  ['delete a file of root from a world-writable directory', 'unlink', '/wdir/rootfile'],
  ['delete a file of root from a sticky directory', 'unlink', '/sticky/rootfile'],
  ['write a file of root in a sticky directory', 'appendFile', '/sticky/rootfile', 'y'],
  ['create in a sticky directory', 'writeFile', '/sticky/mine', 'x'],
  ['delete our own file in a sticky directory', 'unlink', '/sticky/mine'],
  ['chmod a file of root', 'chmod', '/pub/r.txt', 0o777],
  ['chmod our file', 'chmod', '/mine/m.txt', 0o640],
  ['chown our file to root', 'chown', '/mine/m.txt', 0, 0],
  ['chown our file to our group, keeping it', 'chown', '/mine/g.txt', -1, GROUP],
  ['chown our file to a group we are not in', 'chown', '/mine/g.txt', -1, 0],
  ['move our read-only directory to another parent', 'rename', '/mine/frozen', '/wdir/frozen'],
  ['rename our read-only directory in place', 'rename', '/mine/frozen2', '/mine/thawed'],
  ['utimes a file of root', 'utimes', '/pub/r.txt', 1, 1],
  ['utimes our file', 'utimes', '/mine/m.txt', 1, 1],
  ['mkdir in a directory of root', 'mkdir', '/pub/d'],
  ['mkdir in our directory', 'mkdir', '/mine/d'],
  ['move our file into a directory of root', 'rename', '/mine/m.txt', '/pub/m.txt'],
  ['rename inside our directory', 'rename', '/mine/m.txt', '/mine/m2.txt'],
  ['open our read-only file for writing', 'open', '/mine/ro.txt', 'r+'],
  ['overwrite our read-only file', 'writeFile', '/mine/ro.txt', 'z'],
  ['read a file through its group', 'readFile', '/grp/g.txt'],
  ['write a file through its group', 'writeFile', '/grp/g.txt', 'w'],
  ['create in a group-writable directory', 'writeFile', '/grp/new', 'n'],
  ['access W_OK on a file of root', 'access', '/pub/r.txt', 2],
  ['access R_OK on our file', 'access', '/mine/m2.txt', 4],
  ['access X_OK on a directory of root', 'access', '/pub', 1],
  ['symlink in a directory of root', 'symlink', '/pub/r.txt', '/pub/link'],
  ['symlink in our directory', 'symlink', '/pub/r.txt', '/mine/link'],
  ['read through our link', 'readFile', '/mine/link'],
  ['hard link into a directory of root', 'link', '/mine/m2.txt', '/pub/hard'],
  ['copy a private file', 'copyFile', '/priv/s.txt', '/mine/copy'],
  ['copy a readable file into our directory', 'copyFile', '/pub/r.txt', '/mine/copy'],
  [
    'copy an unreadable file from a directory we can search',
    'copyFile',
    '/wdir/secret',
    '/mine/c2',
  ],
  ['rm -r a tree with a directory we cannot write', 'rm', '/locked', { recursive: true }],
  ['rm -r our tree', 'rm', '/mine/sub', { recursive: true }],
  ['rmdir in a directory of root', 'rmdir', '/pub'],
  ['truncate a file of root', 'truncate', '/pub/r.txt', 0],
  ['truncate our file', 'truncate', '/mine/m2.txt', 0],
]

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** What the kernel says for each operation, run as USER:GROUP in a child process. */
function kernel(root: string): unknown[] {
  const script = `
const fs = require('node:fs/promises')
const root = ${JSON.stringify(root)}
const ops = ${JSON.stringify(OPS)}
;(async () => {
  const out = []
  for (const [, method, ...args] of ops) {
    const real = args.map((a) => (typeof a === 'string' && a.startsWith('/') ? root + a : a))
    try {
      const r = await fs[method](...real)
      if (r && typeof r.close === 'function') await r.close()
      out.push('ok')
    } catch (e) { out.push(e.code) }
  }
  console.log(JSON.stringify(out))
})()`
  const r = spawnSync(process.execPath, ['-e', script], { uid: USER, gid: GROUP, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(r.stderr)
  return JSON.parse(r.stdout)
}

test.skipIf(!asRoot)(
  'permissions: enforce refuses and allows exactly what the kernel does',
  async () => {
    const root = mkdtempSync(join(tmpdir(), 'agentfs-perm-'))
    dirs.push(root)
    chmodSync(root, 0o755)
    const db = await openDatabase({ driver: betterSqlite3Driver({ path: ':memory:' }) })
    const admin = createFileSystem(db, { umask: 0 })
    for (const [path, kind, mode, uid, gid] of TREE) {
      if (kind === 'dir') {
        mkdirSync(root + path)
        await admin.mkdir(path)
      } else {
        writeFileSync(root + path, `${path}\n`)
        await admin.writeFile(path, `${path}\n`)
      }
      chownSync(root + path, uid, gid)
      chmodSync(root + path, mode)
      await admin.chown(path, uid, gid)
      await admin.chmod(path, mode)
    }
    const expected = kernel(root)
    const user = createFileSystem(db, {
      permissions: 'enforce',
      uid: USER,
      gid: GROUP,
      umask: 0o022,
    })
    const actual: unknown[] = []
    for (const [, method, ...args] of OPS) {
      try {
        const r = await (user as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[
          method
        ]!(...args)
        if (r && typeof (r as { close?: unknown }).close === 'function')
          await (r as { close(): Promise<void> }).close()
        actual.push('ok')
      } catch (e) {
        actual.push((e as { code?: string }).code)
      }
    }
    const rows = OPS.map(([name], i) => [name, actual[i], expected[i]])
    expect(rows).toEqual(OPS.map(([name], i) => [name, expected[i], expected[i]]))
    // A sample of what the kernel said, so the comparison is about something.
    expect(expected).toContain('EACCES')
    expect(expected).toContain('EPERM')
    expect(expected.filter((e) => e === 'ok').length).toBeGreaterThan(10)
    // Searches and listings leave out what the caller may not read.
    const hits = await user.grep('txt', { path: '/' })
    expect(hits.map((m) => m.path)).not.toContain('/priv/s.txt')
    expect(hits.map((m) => m.path)).toContain('/pub/r.txt')
    const globbed = await user.glob('**/*.txt')
    expect(globbed.map((m) => m.path)).not.toContain('/priv/s.txt')
    // A name in a directory we can list is listed (as ls shows it); its content is not searched.
    expect((await user.glob('wdir/*')).map((m) => m.path)).toContain('/wdir/secret')
    expect((await user.grep('secret', { path: '/wdir' })).map((m) => m.path)).toEqual([])
    expect((await admin.grep('secret', { path: '/wdir' })).map((m) => m.path)).toEqual([
      '/wdir/secret',
    ])
    // Root (the default caller) may do anything the policy allows, as before.
    const rootFs = createFileSystem(db, { permissions: 'enforce' })
    expect(await rootFs.readFile('/priv/s.txt', 'utf8')).toBe('/priv/s.txt\n')
    await db.close()
  },
)
