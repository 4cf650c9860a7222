import { canonicalDump } from '@agentfs/conformance'
import { AgentFsError, fixedClock, fsck } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'

/**
 * The bad-input corpus: every entry must fail with a typed error (an AgentFsError, with a POSIX
 * code in the filesystem) and leave the database exactly as it was, fsck-clean.
 */
let agent: AgentFS
let before: string

beforeAll(async () => {
  agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  await agent.fs.mkdir('/dir')
  await agent.fs.writeFile('/dir/file.txt', 'content')
  await agent.fs.symlink('/loop-b', '/loop-a')
  await agent.fs.symlink('/loop-a', '/loop-b')
  await agent.fs.symlink('/loop-self', '/loop-self')
  await agent.kv.set('key', 'value')
  before = await canonicalDump(agent.db, { maxValueLength: 100_000 })
})

afterAll(async () => {
  await agent.close()
})

const long = (n: number) => 'n'.repeat(n)
const deep = (depth: number) => {
  let value: unknown = 1
  for (let i = 0; i < depth; i++) value = { a: value }
  return value
}
const circular = () => {
  const value: Record<string, unknown> = {}
  value.self = value
  return value
}

const CORPUS: [name: string, code: string | RegExp, run: () => Promise<unknown>][] = [
  ['NUL byte in a path', 'EINVAL', () => agent.fs.writeFile('/dir/a\0b', 'x')],
  ['NUL byte in a directory name', 'EINVAL', () => agent.fs.mkdir('/d\0ir')],
  ['NUL byte in a rename target', 'EINVAL', () => agent.fs.rename('/dir/file.txt', '/x\0')],
  ['256-byte name', 'ENAMETOOLONG', () => agent.fs.writeFile(`/dir/${long(256)}`, 'x')],
  ['256-byte directory name', 'ENAMETOOLONG', () => agent.fs.mkdir(`/${long(256)}`)],
  [
    '4097-byte path',
    'ENAMETOOLONG',
    () => agent.fs.writeFile(`/${Array.from({ length: 41 }, () => long(99)).join('/')}`, 'x'),
  ],
  [
    'lone surrogate (invalid UTF-8) in a name',
    'EINVAL',
    () => agent.fs.writeFile('/bad\uD800', 'x'),
  ],
  ['empty path', 'ENOENT', () => agent.fs.writeFile('', 'x')],
  [
    '.. above the root stays inside: no such file',
    'ENOENT',
    () => agent.fs.readFile('/../../etc/passwd'),
  ],
  ['symlink loop', 'ELOOP', () => agent.fs.readFile('/loop-a')],
  ['symlink to itself', 'ELOOP', () => agent.fs.writeFile('/loop-self', 'x')],
  ['symlink loop in a middle component', 'ELOOP', () => agent.fs.mkdir('/loop-a/sub')],
  ['mkdir over a file', 'EEXIST', () => agent.fs.mkdir('/dir/file.txt')],
  ['file as a directory', 'ENOTDIR', () => agent.fs.writeFile('/dir/file.txt/x', 'x')],
  ['rename a directory into itself', 'EINVAL', () => agent.fs.rename('/dir', '/dir/sub')],
  ['rmdir of a non-empty directory', 'ENOTEMPTY', () => agent.fs.rmdir('/dir')],
  ['unlink the root', 'EISDIR', () => agent.fs.unlink('/')],
  ['negative truncate', 'EINVAL', () => agent.fs.truncate('/dir/file.txt', -1)],
  ['unsafe-integer truncate', 'EINVAL', () => agent.fs.truncate('/dir/file.txt', 2 ** 60)],
  ['truncate past 16 TiB', 'EFBIG', () => agent.fs.truncate('/dir/file.txt', 2 ** 50)],
  ['fractional truncate', 'EINVAL', () => agent.fs.truncate('/dir/file.txt', 1.5)],
  ['bad mode', 'EINVAL', () => agent.fs.chmod('/dir/file.txt', -5)],
  ['bad open flag', 'EINVAL', () => agent.fs.open('/dir/file.txt', 'rw?')],
  ['writeFile with a number', 'EINVAL', () => agent.fs.writeFile('/dir/n', 42 as never)],
  [
    'negative read position',
    'EINVAL',
    async () => {
      const h = await agent.fs.open('/dir/file.txt', 'r')
      try {
        return await h.read(Buffer.alloc(4), 0, 4, -1)
      } finally {
        await h.close()
      }
    },
  ],
  [
    'read length beyond the buffer',
    'EINVAL',
    async () => {
      const h = await agent.fs.open('/dir/file.txt', 'r')
      try {
        return await h.read(Buffer.alloc(4), 2, 10, 0)
      } finally {
        await h.close()
      }
    },
  ],
  [
    'write at a position beyond 2^53',
    'EINVAL',
    async () => {
      const h = await agent.fs.open('/dir/file.txt', 'r+')
      try {
        return await h.write(Buffer.from('x'), 0, 1, 2 ** 60)
      } finally {
        await h.close()
      }
    },
  ],
  [
    'write to a closed handle',
    'EBADF',
    async () => {
      const h = await agent.fs.open('/dir/file.txt', 'r+')
      await h.close()
      return h.write('late')
    },
  ],
  [
    'write to a read-only handle',
    'EBADF',
    async () => {
      const h = await agent.fs.open('/dir/file.txt', 'r')
      try {
        return await h.write('nope')
      } finally {
        await h.close()
      }
    },
  ],
  ['kv: circular value', /.+/, () => agent.kv.set('key', circular())],
  ['kv: BigInt value', /.+/, () => agent.kv.set('key', 10n as never)],
  ['kv: 100,000-deep value', /.+/, () => agent.kv.set('key', deep(100_000))],
  ['kv: empty key', /.+/, () => agent.kv.set('', 1)],
  ['kv: NUL in a key', /.+/, () => agent.kv.set('a\0b', 1)],
  ['kv: lone surrogate in a key', /.+/, () => agent.kv.set('k\uDC00', 1)],
  [
    'tool call: circular parameters',
    /.+/,
    () => agent.tools.record({ name: 'x', parameters: circular(), startedAt: 1, completedAt: 2 }),
  ],
  [
    'tool call: 100,000-deep parameters',
    /.+/,
    () =>
      agent.tools.record({
        name: 'x',
        parameters: deep(100_000) as Record<string, unknown>,
        startedAt: 1,
        completedAt: 2,
      }),
  ],
  [
    'tool call: completed before started',
    /.+/,
    () => agent.tools.record({ name: 'x', parameters: {}, startedAt: 10, completedAt: 5 }),
  ],
  [
    'tool call: empty name',
    /.+/,
    () => agent.tools.record({ name: '', parameters: {}, startedAt: 1, completedAt: 2 }),
  ],
]

describe('bad input: a typed error, and the database unchanged and fsck-clean', () => {
  test.each(CORPUS)('%s', async (_name, code, run) => {
    const error = await run().then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(AgentFsError)
    const actual = (error as AgentFsError).code
    if (typeof code === 'string') expect(actual).toBe(code)
    else expect(actual).toMatch(code)
    expect((error as Error).message.length).toBeGreaterThan(10)
    expect(await canonicalDump(agent.db, { maxValueLength: 100_000 })).toBe(before)
    expect((await fsck(agent.db)).findings).toEqual([])
  })

  test('an enormous JSON value (64 MiB) round-trips exactly', async () => {
    const big = { text: 'x'.repeat(64 * 1024 * 1024) }
    await agent.kv.set('big', big)
    expect(((await agent.kv.get('big')) as { text: string }).text).toBe(big.text)
    await agent.kv.delete('big')
    expect((await fsck(agent.db)).findings).toEqual([])
  }, 60_000)
})
