import { type AgentFsError, fsck, openDatabase, readChanges } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { describe, expect, test } from 'vitest'
import { createFileSystem, type FsPolicy } from '../src/index.js'
import { typedCode } from './helpers.js'

async function setup(policy: FsPolicy) {
  const db = await openDatabase({ driver: betterSqlite3Driver({ path: ':memory:' }) })
  const admin = createFileSystem(db)
  await admin.mkdir('/workspace/src', { recursive: true })
  await admin.mkdir('/secrets')
  await admin.mkdir('/docs')
  await admin.writeFile('/workspace/src/a.ts', 'export const a = 1\n')
  await admin.writeFile('/workspace/README.md', '# Project\n')
  await admin.writeFile('/secrets/key', 'sk-123')
  await admin.writeFile('/docs/guide.md', 'guide')
  return { db, admin, fs: createFileSystem(db, { policy }) }
}

const code = typedCode

const ROOTS: FsPolicy = {
  read: ['/workspace', '/workspace/**', '/docs/**'],
  write: ['/workspace', '/workspace/**'],
}

describe('allowed roots', () => {
  test('reads and writes inside the roots work; outside they are EACCES with the reason', async () => {
    const { fs } = await setup(ROOTS)
    expect(await fs.readFile('/workspace/src/a.ts', 'utf8')).toBe('export const a = 1\n')
    expect(await fs.readFile('/docs/guide.md', 'utf8')).toBe('guide')
    await fs.writeFile('/workspace/new.ts', 'x')
    expect(await code(fs.readFile('/secrets/key'))).toBe('EACCES')
    expect(await code(fs.writeFile('/docs/guide.md', 'changed'))).toBe('EACCES')
    expect(await code(fs.stat('/secrets/key'))).toBe('EACCES')
    expect(await code(fs.readdir('/secrets'))).toBe('EACCES')
    expect(await fs.exists('/secrets/key')).toBe(false)
    const error = await fs.readFile('/secrets/key').catch((e: Error) => e)
    expect((error as Error).message).toMatch(/the policy does not allow reading \/secrets\/key/)
  })

  test('neither .. nor symlinks nor hard links step outside a root', async () => {
    const { fs, admin } = await setup(ROOTS)
    expect(await code(fs.readFile('/workspace/../secrets/key'))).toBe('EACCES')
    expect(await code(fs.readFile('/workspace/src/../../secrets/key'))).toBe('EACCES')
    // A link the agent makes, and one that was already there.
    await fs.symlink('/secrets/key', '/workspace/key-link')
    await admin.symlink('../secrets', '/workspace/secrets-dir')
    expect(await code(fs.readFile('/workspace/key-link'))).toBe('EACCES')
    expect(await code(fs.readFile('/workspace/secrets-dir/key'))).toBe('EACCES')
    expect(await code(fs.writeFile('/workspace/secrets-dir/new', 'x'))).toBe('EACCES')
    expect(await code(fs.writeFile('/workspace/key-link', 'overwrite'))).toBe('EACCES')
    expect(await code(fs.open('/workspace/key-link', 'r'))).toBe('EACCES')
    expect(await code(fs.copyFile('/workspace/key-link', '/workspace/copy'))).toBe('EACCES')
    expect(
      await code(
        fs.cp('/workspace/secrets-dir/', '/workspace/stolen', {
          recursive: true,
          dereference: true,
        }),
      ),
    ).toBe('EACCES')
    // A dangling link whose target would be created outside.
    await fs.symlink('/secrets/planted', '/workspace/dangling')
    expect(await code(fs.writeFile('/workspace/dangling', 'x'))).toBe('EACCES')
    expect(await code(fs.link('/secrets/key', '/workspace/hard'))).toBe('EACCES')
    expect(await code(fs.rename('/workspace/README.md', '/docs/README.md'))).toBe('EACCES')
    expect(await admin.readFile('/secrets/key', 'utf8')).toBe('sk-123')
    expect(await admin.exists('/secrets/planted')).toBe(false)
    // The link itself can be inspected and removed: it is inside the root.
    expect(await fs.readlink('/workspace/key-link')).toBe('/secrets/key')
    await fs.unlink('/workspace/key-link')
  })

  test('listings and searches leave out what cannot be read', async () => {
    const { fs } = await setup({ read: ['/', '/workspace/**', '/docs/**'] })
    expect(await fs.readdir('/')).toEqual(['docs', 'workspace'])
    const all = (await fs.readdir('/', { recursive: true })) as string[]
    expect(all).not.toContain('secrets/key')
    expect(all).toContain('workspace/src/a.ts')
    const globbed = (await fs.glob('**/*')).map((m) => m.path)
    expect(globbed).toContain('/workspace/src/a.ts')
    expect(globbed).not.toContain('/secrets/key')
    expect((await fs.grep('sk-')).length).toBe(0)
    expect((await fs.grep('export')).map((m) => m.path)).toEqual(['/workspace/src/a.ts'])
  })
})

describe('read-only and protected paths, denied operations', () => {
  test('read-only paths are EROFS whatever write allows', async () => {
    const { fs } = await setup({ readOnly: ['/docs/**'] })
    expect(await fs.readFile('/docs/guide.md', 'utf8')).toBe('guide')
    expect(await code(fs.writeFile('/docs/guide.md', 'x'))).toBe('EROFS')
    expect(await code(fs.unlink('/docs/guide.md'))).toBe('EROFS')
    expect(await code(fs.chmod('/docs/guide.md', 0o600))).toBe('EROFS')
    expect(await code(fs.open('/docs/guide.md', 'r+'))).toBe('EROFS')
    expect(await code(fs.rm('/docs', { recursive: true }))).toBe('EROFS')
  })

  test('rules and names meet in Unicode NFC: a rule in one form protects a name stored in the other', async () => {
    const nfc = 'caf\u00e9'
    const nfd = 'cafe\u0301'
    for (const [rule, stored] of [
      [nfc, nfd],
      [nfd, nfc],
    ] as const) {
      const { fs, admin } = await setup({
        readOnly: [`/workspace/${rule}/**`],
        protected: [`/workspace/${rule}-notes.md`],
        read: ['/workspace', '/workspace/**'],
      })
      await admin.mkdir(`/workspace/${stored}`)
      await admin.writeFile(`/workspace/${stored}/menu.md`, 'menu')
      await admin.writeFile(`/workspace/${stored}-notes.md`, 'notes')
      // Named in either form, the stored name is judged by the rule.
      for (const name of [nfc, nfd]) {
        expect(await code(fs.writeFile(`/workspace/${stored}/menu.md`, 'x'))).toBe('EROFS')
        expect(await code(fs.unlink(`/workspace/${stored}/menu.md`))).toBe('EROFS')
        expect(await code(fs.writeFile(`/workspace/${stored}/${name}.md`, 'new'))).toBe('EROFS')
        expect(await code(fs.unlink(`/workspace/${stored}-notes.md`))).toBe('EPERM')
      }
      // A read allowed in one form is allowed in the other.
      expect(await fs.readFile(`/workspace/${stored}/menu.md`, 'utf8')).toBe('menu')
      // Creating the other form beside it lands under the same rule.
      expect(await code(fs.mkdir(`/workspace/${rule === nfc ? nfd : nfc}`))).toBe('EROFS')
      expect(await admin.readFile(`/workspace/${stored}/menu.md`, 'utf8')).toBe('menu')
    }
  })

  test('protected paths can be edited but not deleted, moved or replaced, also through a parent', async () => {
    const { fs } = await setup({ protected: ['/workspace/README.md'] })
    await fs.writeFile('/workspace/README.md', '# Edited\n')
    expect(await code(fs.unlink('/workspace/README.md'))).toBe('EPERM')
    expect(await code(fs.rename('/workspace/README.md', '/workspace/OLD.md'))).toBe('EPERM')
    expect(await code(fs.rename('/workspace/src/a.ts', '/workspace/README.md'))).toBe('EPERM')
    expect(await code(fs.rm('/workspace', { recursive: true }))).toBe('EPERM')
    expect(await code(fs.rename('/workspace', '/moved'))).toBe('EPERM')
    expect(await fs.readFile('/workspace/README.md', 'utf8')).toBe('# Edited\n')
  })

  test('deny: a memory that only grows', async () => {
    const { fs } = await setup({ deny: ['delete', 'rename'] })
    await fs.writeFile('/workspace/note.md', 'remember')
    await fs.appendFile('/workspace/note.md', ' this')
    expect(await code(fs.unlink('/workspace/note.md'))).toBe('EPERM')
    expect(await code(fs.rmdir('/docs'))).toBe('EPERM')
    expect(await code(fs.rename('/workspace/note.md', '/workspace/n.md'))).toBe('EPERM')
    const error = await fs.unlink('/workspace/note.md').catch((e: Error) => e)
    expect((error as Error).message).toMatch(/the policy denies delete/)
  })

  test('the policy holds inside transactions and on handles', async () => {
    const { fs } = await setup(ROOTS)
    expect(
      await code(
        fs.transaction(async (tx) => {
          await tx.writeFile('/workspace/ok.txt', 'fine')
          await tx.readFile('/secrets/key')
        }),
      ),
    ).toBe('EACCES')
    expect(await fs.exists('/workspace/ok.txt')).toBe(false)
    expect(await code(fs.bind(fs.queryable).readFile('/secrets/key'))).toBe('EACCES')
  })
})

describe('every change a call makes is judged, in the one transaction of the call', () => {
  test('mkdir -p: each directory it would create is judged; a refusal leaves none of them', async () => {
    // Below /workspace/gen/a may be written; /workspace/gen itself may not be created.
    const { fs, admin } = await setup({
      read: ['/workspace', '/workspace/**'],
      write: ['/workspace', '/workspace/src/**', '/workspace/gen/a/**'],
    })
    expect(await code(fs.mkdir('/workspace/gen/a/b', { recursive: true }))).toBe('EACCES')
    expect(await admin.exists('/workspace/gen')).toBe(false)
    expect(await code(fs.mkdir('/workspace/gen/a/b/c', { recursive: true }))).toBe('EACCES')
    expect(await admin.exists('/workspace/gen')).toBe(false)
    await admin.mkdir('/workspace/gen')
    await fs.mkdir('/workspace/gen/a/b', { recursive: true })
    expect(await admin.exists('/workspace/gen/a/b')).toBe(true)
  })

  test('a refused rename over a file leaves the target as it was and adds no feed row', async () => {
    const { fs, admin, db } = await setup({ readOnly: ['/docs/**'] })
    await admin.writeFile('/workspace/target.md', 'keep me')
    const before = await readChanges(db, 0, { limit: 1000 })
    // The source may not be removed from /docs: the whole rename is refused, the target stays.
    expect(await code(fs.rename('/docs/guide.md', '/workspace/target.md'))).toBe('EROFS')
    expect(await admin.readFile('/workspace/target.md', 'utf8')).toBe('keep me')
    expect(await admin.readFile('/docs/guide.md', 'utf8')).toBe('guide')
    expect((await readChanges(db, 0, { limit: 1000 })).changes).toHaveLength(before.changes.length)
    // A rename that fails on its own terms (a directory over a file) changes nothing either.
    await admin.mkdir('/workspace/dir')
    expect(await code(fs.rename('/workspace/dir', '/workspace/target.md'))).toBe('ENOTDIR')
    expect(await admin.readFile('/workspace/target.md', 'utf8')).toBe('keep me')
    expect((await readChanges(db, 0, { limit: 1000 })).changes).toHaveLength(
      before.changes.length + 1,
    )
  })
})

describe('quotas', () => {
  test('maxFileSize: writes, appends, truncates, handles and streams beyond it are EFBIG; nothing is left', async () => {
    const { fs, db } = await setup({ maxFileSize: 1000 })
    await fs.writeFile('/workspace/ok.bin', Buffer.alloc(1000))
    expect(await code(fs.writeFile('/workspace/big.bin', Buffer.alloc(1001)))).toBe('EFBIG')
    expect(await fs.exists('/workspace/big.bin')).toBe(false)
    expect(await code(fs.appendFile('/workspace/ok.bin', 'x'))).toBe('EFBIG')
    expect(await code(fs.truncate('/workspace/ok.bin', 5000))).toBe('EFBIG')
    const handle = await fs.open('/workspace/ok.bin', 'r+')
    expect(await code(handle.write(Buffer.alloc(10), 0, 10, 995))).toBe('EFBIG')
    await handle.close()
    const stream = fs.createWriteStream('/workspace/stream.bin')
    const streamed = await new Promise<unknown>((resolve) => {
      stream.on('error', resolve)
      stream.on('finish', () => resolve(undefined))
      stream.end(Buffer.alloc(4000))
    })
    expect((streamed as AgentFsError).code).toBe('EFBIG')
    expect((await fs.stat('/workspace/ok.bin')).size).toBe(1000)
    const error = await fs.appendFile('/workspace/ok.bin', 'x').catch((e: Error) => e)
    expect((error as Error).message).toMatch(/limits files to 1000 bytes/)
    expect((await fsck(db)).findings).toEqual([])
  })

  test('maxTotalBytes and maxInodes: growth beyond them is EDQUOT, deleting is always possible', async () => {
    const { fs, admin, db } = await setup({ maxTotalBytes: 10_000, maxInodes: 12 })
    const used = (await admin.statfs('/')).files
    expect(used).toBe(9)
    await fs.writeFile('/workspace/a.bin', Buffer.alloc(5000))
    expect(await code(fs.writeFile('/workspace/b.bin', Buffer.alloc(5000)))).toBe('EDQUOT')
    expect(await fs.exists('/workspace/b.bin')).toBe(false)
    await fs.mkdir('/workspace/d1')
    await fs.mkdir('/workspace/d2')
    expect(await code(fs.mkdir('/workspace/d3'))).toBe('EDQUOT')
    expect(await code(fs.cp('/workspace/src', '/workspace/src2', { recursive: true }))).toBe(
      'EDQUOT',
    )
    expect(await fs.exists('/workspace/src2')).toBe(false)
    await fs.unlink('/workspace/a.bin')
    await fs.writeFile('/workspace/b.bin', Buffer.alloc(5000))
    expect((await fsck(db)).findings).toEqual([])
  })

  test('a bad policy is refused when the filesystem is made', async () => {
    const db = await openDatabase({ driver: betterSqlite3Driver({ path: ':memory:' }) })
    expect(() => createFileSystem(db, { policy: { maxFileSize: -1 } })).toThrow(/maxFileSize/)
    expect(() => createFileSystem(db, { policy: { read: '/x' as never } })).toThrow(/glob strings/)
  })
})
