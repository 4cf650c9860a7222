import { openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { describe, expect, test } from 'vitest'
import { type ContentChange, type ContentRule, createFileSystem } from '../src/index.js'
import { typedCode as code } from './helpers.js'

/** A rule on /kept/**: a file that had the line KEEP keeps it; new files need none. */
function keepRule(seen: ContentChange[] = []): ContentRule {
  return {
    paths: ['/kept/**'],
    check(change) {
      seen.push(change)
      const had = change.before?.toString('utf8').includes('KEEP\n') === true
      if (had && change.after === null) return 'a file with the line KEEP cannot be removed'
      if (had && !change.after?.toString('utf8').includes('KEEP\n'))
        return 'the line KEEP was removed'
      return undefined
    },
  }
}

async function setup(rules: ContentRule[] = [keepRule()]) {
  const db = await openDatabase({ driver: betterSqlite3Driver({ path: ':memory:' }) })
  const admin = createFileSystem(db)
  await admin.mkdir('/kept')
  await admin.mkdir('/free')
  await admin.writeFile('/kept/a.md', 'head\nKEEP\ntail\n')
  await admin.writeFile('/free/b.md', 'no keep here\n')
  const fs = createFileSystem(db, { policy: { content: rules } })
  const text = () => admin.readFile('/kept/a.md', 'utf8')
  return { db, admin, fs, text }
}

const ORIGINAL = 'head\nKEEP\ntail\n'

describe('content rules', () => {
  test('whole-file writes: a change the rule refuses is EPERM with its reason and changes nothing', async () => {
    const seen: ContentChange[] = []
    const { fs, text } = await setup([keepRule(seen)])
    const error = await fs.writeFile('/kept/a.md', 'head\ntail\n').catch((e: Error) => e)
    expect((error as { code?: string }).code).toBe('EPERM')
    expect((error as Error).message).toMatch(/the line KEEP was removed/)
    expect(await text()).toBe(ORIGINAL)
    expect(seen[0]).toMatchObject({ path: '/kept/a.md', syscall: 'open' })
    expect(seen[0]!.before?.toString()).toBe(ORIGINAL)
    await fs.writeFile('/kept/a.md', 'new head\nKEEP\n')
    await fs.appendFile('/kept/a.md', 'more\n')
    expect(await text()).toBe('new head\nKEEP\nmore\n')
    expect(await code(fs.truncate('/kept/a.md', 3))).toBe('EPERM')
    expect(await text()).toBe('new head\nKEEP\nmore\n')
    // New files: the rule sees no before.
    await fs.writeFile('/kept/new.md', 'anything')
    expect(seen.at(-1)?.before).toBeNull()
    // Paths the rule does not judge are not judged.
    await fs.writeFile('/free/b.md', '')
  })

  test('opens and handles: a truncating open and a handle write over the line are refused', async () => {
    const { fs, text } = await setup()
    expect(await code(fs.open('/kept/a.md', 'w'))).toBe('EPERM')
    expect(await text()).toBe(ORIGINAL)
    const h = await fs.open('/kept/a.md', 'r+')
    expect(await code(h.write('XXXX', 5))).toBe('EPERM')
    await h.write('HEAD', 0)
    expect(await code(h.truncate(0))).toBe('EPERM')
    expect(await code(h.writeFile('gone'))).toBe('EPERM')
    await h.close()
    expect(await text()).toBe('HEAD\nKEEP\ntail\n')
    const a = await fs.open('/kept/a.md', 'a')
    await a.write('appended\n')
    await a.close()
    expect(await text()).toBe('HEAD\nKEEP\ntail\nappended\n')
    // A stream writes through a handle: a whole-file stream truncates at open.
    const stream = fs.createWriteStream('/kept/a.md')
    const failed = await new Promise<Error>((resolve) => stream.on('error', resolve))
    expect((failed as { code?: string }).code).toBe('EPERM')
    expect(await text()).toBe('HEAD\nKEEP\ntail\nappended\n')
  })

  test('copies, renames, links and symlinks cannot carry a change past the rule', async () => {
    const { fs, admin, text } = await setup()
    expect(await code(fs.copyFile('/free/b.md', '/kept/a.md'))).toBe('EPERM')
    expect(await code(fs.rename('/free/b.md', '/kept/a.md'))).toBe('EPERM')
    expect(await admin.readFile('/free/b.md', 'utf8')).toBe('no keep here\n')
    // Moved away, it could be edited there and moved back: the rule sees a removal.
    expect(await code(fs.rename('/kept/a.md', '/free/a.md'))).toBe('EPERM')
    expect(await code(fs.rename('/kept', '/elsewhere'))).toBe('EPERM')
    expect(await code(fs.unlink('/kept/a.md'))).toBe('EPERM')
    expect(await code(fs.rm('/kept', { recursive: true }))).toBe('EPERM')
    // A file the rule lets go can be removed.
    await fs.writeFile('/kept/loose.md', 'x')
    await fs.unlink('/kept/loose.md')
    expect(await code(fs.link('/kept/a.md', '/free/alias'))).toBe('EPERM')
    expect(await code(fs.link('/free/b.md', '/kept/alias'))).toBe('EPERM')
    expect(await code(fs.cp('/free/b.md', '/kept/a.md'))).toBe('EPERM')
    // A symlink elsewhere is judged where it lands.
    await fs.symlink('/kept/a.md', '/free/link')
    expect(await code(fs.writeFile('/free/link', 'x'))).toBe('EPERM')
    expect(await text()).toBe(ORIGINAL)
    // What keeps the line passes every way.
    await admin.writeFile('/free/ok.md', 'KEEP\n')
    await fs.copyFile('/free/ok.md', '/kept/a.md')
    expect(await text()).toBe('KEEP\n')
  })

  test('a rule that throws refuses with its message; files past maxBytes are refused unread', async () => {
    const { fs, text } = await setup([
      {
        paths: ['/kept/**'],
        check: () => {
          throw new Error('rule exploded')
        },
      },
    ])
    expect(((await fs.writeFile('/kept/a.md', 'x').catch((e) => e)) as Error).message).toMatch(
      /rule exploded/,
    )
    const small = await setup([{ ...keepRule(), maxBytes: 4 }])
    expect(await code(small.fs.appendFile('/kept/a.md', 'KEEP\n'))).toBe('EPERM')
    expect(await text()).toBe(ORIGINAL)
  })

  test('a narrowed filesystem keeps the rules of the one it narrows', async () => {
    const { fs, text } = await setup()
    const narrowed = fs.restrict({ write: ['/kept/**'] })
    expect(await code(narrowed.writeFile('/kept/a.md', 'gone'))).toBe('EPERM')
    expect(await text()).toBe(ORIGINAL)
  })

  test('without the rule every one of these changes goes through', async () => {
    const { admin } = await setup()
    await admin.writeFile('/kept/a.md', 'head\n')
    await admin.rename('/kept/a.md', '/free/a.md')
    expect(await admin.readFile('/free/a.md', 'utf8')).toBe('head\n')
  })
})
