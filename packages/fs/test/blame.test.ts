import { withActor, withMessage } from '@agentfs/core'
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import type { Blame } from '../src/index.js'
import { code, freshFs } from './helpers.js'

const VERSIONS = { feed: { versions: { maxCount: 1000 } } } as const

/** Each line's text and the seq of the change it is blamed on (null: unattributed). */
const owners = (b: Blame) => b.lines.map((l) => [l.text, l.change?.seq ?? null])

describe('fs.blame', () => {
  test('each line is the change that gave it its text, with its session and message', async () => {
    const { fs } = await freshFs('better-sqlite3', VERSIONS)
    await withActor({ sessionId: 'alice' }, () =>
      fs.writeFile('/a.txt', 'one\ntwo\nthree\n', { message: 'first draft' }),
    )
    await withActor({ sessionId: 'bob' }, () =>
      fs.writeFile('/a.txt', 'one\nTWO\nthree\nfour\n', { message: 'shout two, add four' }),
    )
    await fs.writeFile('/a.txt', 'zero\none\nTWO\nthree\nfour\n')
    const seqs = (await fs.history('/a.txt')).map((v) => v.seq).reverse()
    const blame = await fs.blame('/a.txt')
    expect(owners(blame)).toEqual([
      ['zero', seqs[2]],
      ['one', seqs[0]],
      ['TWO', seqs[1]],
      ['three', seqs[0]],
      ['four', seqs[1]],
    ])
    expect(blame.lines[1]!.change).toMatchObject({
      sessionId: 'alice',
      message: 'first draft',
      op: 'create',
    })
    expect(blame.lines[2]!.change).toMatchObject({
      sessionId: 'bob',
      message: 'shout two, add four',
    })
    expect(blame.complete).toBe(true)
    expect(blame.unattributed).toBe(0)
    expect(blame.changes.map((c) => c.seq)).toEqual([seqs[2], seqs[1], seqs[0]])
    // history shows the messages too
    expect((await fs.history('/a.txt')).map((v) => v.message)).toEqual([
      null,
      'shout two, add four',
      'first draft',
    ])
  })

  test('a message covers a group of changes; a bad one is refused before anything is written', async () => {
    const { fs } = await freshFs('better-sqlite3', VERSIONS)
    await withMessage('scaffold', async () => {
      await fs.mkdir('/src')
      await fs.writeFile('/src/a.ts', 'a\n')
      await fs.writeFile('/src/b.ts', 'b\n')
    })
    expect((await fs.blame('/src/b.ts')).lines[0]!.change?.message).toBe('scaffold')
    expect((await fs.history('/src/a.ts'))[0]!.message).toBe('scaffold')
    for (const bad of ['', 'x'.repeat(4097), 'a\0b'])
      expect(await code(fs.writeFile('/bad.txt', 'x', { message: bad }))).toBe('INVALID_ARGUMENT')
    expect(await fs.exists('/bad.txt')).toBe(false)
  })

  test('renames keep the history; a given version is blamed as it was', async () => {
    const { fs } = await freshFs('better-sqlite3', VERSIONS)
    await fs.writeFile('/old.md', 'a\nb\n')
    const first = (await fs.stat('/old.md')).version
    await fs.rename('/old.md', '/new.md')
    await fs.appendFile('/new.md', 'c\n')
    const [c, a] = await fs.history('/new.md').then((h) => h.filter((v) => v.op !== 'rename'))
    expect(owners(await fs.blame('/new.md'))).toEqual([
      ['a', a!.seq],
      ['b', a!.seq],
      ['c', c!.seq],
    ])
    const then = await fs.blame('/new.md', { version: first })
    expect(owners(then)).toEqual([
      ['a', a!.seq],
      ['b', a!.seq],
    ])
    expect(then.version).toBe(first)
  })

  test('without kept versions, lines are unattributed with what is known, never guessed', async () => {
    const { fs } = await freshFs('better-sqlite3', { feed: { versions: { maxCount: 2 } } })
    await fs.writeFile('/f', 'a\n')
    await fs.writeFile('/f', 'a\nb\n')
    await fs.writeFile('/f', 'a\nb\nc\n')
    await fs.writeFile('/f', 'a\nb\nc\nd\n')
    const seqs = (await fs.history('/f')).map((v) => v.seq).reverse()
    const blame = await fs.blame('/f')
    // Versions 1 and 2 were dropped: a and b came from somewhere up to version 3.
    expect(owners(blame)).toEqual([
      ['a', null],
      ['b', null],
      ['c', null],
      ['d', seqs[3]],
    ])
    expect(blame.lines[0]!.between).toEqual({ after: null, by: seqs[2] })
    expect(blame.unattributed).toBe(3)
    expect(blame.complete).toBe(false)

    const off = await freshFs('better-sqlite3')
    await off.fs.writeFile('/g', 'x\ny\n')
    await off.fs.writeFile('/g', 'x\ny\nz\n')
    const none = await off.fs.blame('/g')
    expect(none.unattributed).toBe(3)
    expect(none.lines.map((l) => l.text)).toEqual(['x', 'y', 'z'])
  })

  test('refusals: a directory, a binary file, a missing path, a version not kept, bad options', async () => {
    const { fs } = await freshFs('better-sqlite3', VERSIONS)
    await fs.mkdir('/d')
    await fs.writeFile('/bin', Buffer.from([1, 0, 2]))
    await fs.writeFile('/t', 'x\n')
    expect(await code(fs.blame('/d'))).toBe('EINVAL')
    expect(await code(fs.blame('/bin'))).toBe('EINVAL')
    expect(await code(fs.blame('/nope'))).toBe('ENOENT')
    expect(await code(fs.blame('/t', { version: '12345' }))).toBe('ENOENT')
    expect(await code(fs.blame('/t', { maxVersions: 0 }))).toBe('EINVAL')
    expect(await code(fs.blame('/t', { timeoutMs: -1 }))).toBe('EINVAL')
  })

  test('the walk stops at maxVersions; older lines are unattributed', async () => {
    const { fs } = await freshFs('better-sqlite3', VERSIONS)
    let text = ''
    for (let i = 0; i < 6; i++) {
      text += `line ${i}\n`
      await fs.writeFile('/f', text)
    }
    const blame = await fs.blame('/f', { maxVersions: 3 })
    expect(blame.walked).toBe(3)
    expect(blame.lines.map((l) => l.change === null)).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
    ])
  })

  test('a line that grows at its start, or loses or gains its last newline, is read as whole lines', async () => {
    const { fs } = await freshFs('better-sqlite3', VERSIONS)
    await fs.writeFile('/f', 'x\nab\n')
    await fs.writeFile('/f', 'x\nzab\n')
    await fs.writeFile('/f', 'x\nzab\ncd')
    await fs.writeFile('/f', 'x\nzab\ncde\n')
    const [v1, v2, , v4] = (await fs.history('/f')).map((v) => v.seq).reverse()
    expect(owners(await fs.blame('/f'))).toEqual([
      ['x', v1],
      ['zab', v2],
      ['cde', v4],
    ])
  })

  // For random edit histories (insert, delete and replace lines, a last line with or without a
  // newline) where every new line's text names the version that introduced it, blame names that
  // version's change for every line: on small files, and on files of many stored chunks (long
  // lines, a first version of 150 of them), where versions are aligned by the chunks they share.
  const op = fc.oneof(
    fc.record({
      kind: fc.constant('insert' as const),
      at: fc.nat(),
      lines: fc.integer({ min: 1, max: 4 }),
    }),
    fc.record({
      kind: fc.constant('delete' as const),
      at: fc.nat(),
      lines: fc.integer({ min: 1, max: 3 }),
    }),
    fc.record({
      kind: fc.constant('replace' as const),
      at: fc.nat(),
      lines: fc.integer({ min: 1, max: 2 }),
    }),
    fc.record({ kind: fc.constant('newline' as const), at: fc.nat(), lines: fc.constant(0) }),
  )
  const history = fc.array(fc.array(op, { minLength: 1, maxLength: 4 }), {
    minLength: 1,
    maxLength: 25,
  })
  for (const [name, first, pad] of [
    ['small files', 0, 0],
    ['files of many chunks', 150, 160],
  ] as const)
    test(`property: every line is blamed on the change that introduced its current text (${name})`, async () => {
      await fc.assert(
        fc.asyncProperty(history, async (steps) => {
          const { fs } = await freshFs('better-sqlite3', VERSIONS)
          let made = 0
          // A line's text: the version that made it, a unique number, and filler.
          const text = (v: number) => {
            const id = made++
            return `v${v}#${id}${pad ? ` ${'abcdefghij'.repeat(pad / 10).slice(id % 7)}` : ''}`
          }
          const lines: string[] = Array.from({ length: first }, () => text(0))
          let trailing = true
          for (const [v, edits] of steps.entries()) {
            for (const e of edits) {
              const at = lines.length === 0 ? 0 : e.at % (lines.length + 1)
              const fresh = () => Array.from({ length: e.lines }, () => text(v))
              if (e.kind === 'insert') lines.splice(at, 0, ...fresh())
              else if (e.kind === 'delete') lines.splice(at, e.lines)
              else if (e.kind === 'replace') lines.splice(at, e.lines, ...fresh())
              else trailing = !trailing
            }
            await fs.writeFile('/f', lines.join('\n') + (trailing && lines.length > 0 ? '\n' : ''))
          }
          const seqs = (await fs.history('/f', { limit: 1000 })).map((h) => h.seq).reverse()
          const blame = await fs.blame('/f')
          expect(blame.lines.map((l) => l.text)).toEqual(lines)
          for (const l of blame.lines) {
            const v = Number(/^v(\d+)#/.exec(l.text)![1])
            expect(l.change?.seq, l.text).toBe(seqs[v])
          }
          expect(blame.complete).toBe(true)
        }),
        {
          numRuns: Number(process.env.AGENTFS_BLAME_RUNS ?? 40),
          ...(process.env.AGENTFS_BLAME_SEED === undefined
            ? {}
            : { seed: Number(process.env.AGENTFS_BLAME_SEED) }),
        },
      )
    })
})
