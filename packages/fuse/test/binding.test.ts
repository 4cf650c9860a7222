import { execFile } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterEach, describe, expect, test } from 'vitest'
import { type Attributes, mount, type Operations, type Session, unavailable } from '../src/index.js'

const problem = unavailable()
if (problem !== undefined && process.env.CI === 'true' && process.getuid?.() === 0)
  throw new Error(`the libfuse 3 binding is required under CI=true as root: ${problem}`)
const usable = problem === undefined && process.getuid?.() === 0
if (!usable) console.log(`@agentfs/fuse tests skipped: ${problem ?? 'they mount as root'}`)

/** Runs a command without blocking this process, which answers the mount's requests. */
const run = (command: string, ...args: string[]) =>
  promisify(execFile)(command, args, { timeout: 10_000 }).then(
    () => ({ status: 0, stderr: '' }),
    (error: { code?: number; stderr?: string }) => ({
      status: error.code ?? 1,
      stderr: error.stderr ?? '',
    }),
  )

const now = BigInt(Date.now()) * 1_000_000n
const dir: Attributes = {
  ino: 1,
  mode: 0o40755,
  nlink: 2,
  uid: 0,
  gid: 0,
  rdev: 0,
  size: 0,
  blocks: 0,
  blksize: 4096,
  atimeNs: now,
  mtimeNs: now,
  ctimeNs: 1_234_567_890_123_456_789n,
}
const file = (ino: number, size: number): Attributes => ({
  ...dir,
  ino,
  mode: 0o100644,
  nlink: 1,
  size,
})
const enoent = () => Object.assign(new Error('no such name'), { code: 'ENOENT' })
/** `old` with `chunk` written at `offset` (grown as needed). */
const overwrite = (old: Buffer, offset: number, chunk: Buffer) => {
  const next = Buffer.alloc(Math.max(old.length, offset + chunk.length))
  old.copy(next)
  chunk.copy(next, offset)
  return next
}
const fail = (message: string): never => {
  throw new Error(message)
}

let session: Session | undefined
let where: string | undefined
afterEach(async () => {
  await session?.unmount()
  session = undefined
  if (where) await rm(where, { recursive: true, force: true })
})

async function mounted(ops: Operations): Promise<string> {
  where = await mkdtemp(join(tmpdir(), 'agentfs-fuse-binding-'))
  session = mount(where, ops, { options: ['fsname=binding-test', 'subtype=agentfs-test'] })
  return where
}

describe.skipIf(!usable)('@agentfs/fuse', () => {
  test('requests reach the handlers and answers reach the kernel: entries, reads, writes, listings', async () => {
    const content = new Map<number, Buffer>([[2, Buffer.from('hello\n')]])
    const names = new Map<string, number>([['hello', 2]])
    const mp = await mounted({
      lookup: async (r) => {
        const ino = names.get(r.name as string)
        if (r.ino !== 1 || ino === undefined) throw enoent()
        return { nodeid: ino, attr: file(ino, content.get(ino)?.length ?? 0) }
      },
      getattr: async (r) => (r.ino === 1 ? dir : file(r.ino, content.get(r.ino)?.length ?? 0)),
      opendir: async () => ({ fh: 1 }),
      readdir: async () => ({
        names: ['.', '..', ...names.keys()],
        modes: new Float64Array([0o40000, 0o40000, ...[...names.keys()].map(() => 0o100000)]),
      }),
      open: async (r) => ({ fh: r.ino }),
      create: async (r) => {
        const ino = 10 + names.size
        names.set(r.name as string, ino)
        content.set(ino, Buffer.alloc(0))
        return { nodeid: ino, attr: file(ino, 0), fh: ino }
      },
      read: async (r) =>
        (content.get(r.fh) ?? Buffer.alloc(0)).subarray(r.offset, r.offset + r.size),
      write: async (r) => {
        content.set(
          r.fh,
          overwrite(content.get(r.fh) ?? Buffer.alloc(0), r.offset, r.data as Buffer),
        )
        return (r.data as Buffer).length
      },
      setattr: async (r) => file(r.ino, content.get(r.ino)?.length ?? 0),
      release: async () => {},
      flush: async () => {},
    })
    expect(await readFile(join(mp, 'hello'), 'utf8')).toBe('hello\n')
    const s = await stat(join(mp, 'hello'), { bigint: true })
    expect(s.ino).toBe(2n)
    expect(s.ctimeNs).toBe(1_234_567_890_123_456_789n)
    await writeFile(join(mp, 'new'), 'written through FUSE')
    expect(content.get(11)?.toString()).toBe('written through FUSE')
    expect((await readdir(mp)).sort()).toEqual(['hello', 'new'])
    await expect(stat(join(mp, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' })
  })

  test('a missing handler is ENOSYS, a coded error its errno, any other error EIO and reported', async () => {
    const reported: string[] = []
    where = await mkdtemp(join(tmpdir(), 'agentfs-fuse-binding-'))
    session = mount(
      where,
      {
        getattr: async () => dir,
        lookup: async (r) => {
          if (r.name === 'denied') throw Object.assign(new Error('no'), { errno: -13 })
          if (r.name === 'x') throw enoent()
          throw new Error('a bug')
        },
      },
      { onError: (error, op) => reported.push(`${op}: ${(error as Error).message}`) },
    )
    await expect(stat(join(where, 'denied'))).rejects.toMatchObject({ code: 'EACCES' })
    await expect(stat(join(where, 'other'))).rejects.toMatchObject({ code: 'EIO' })
    expect(reported).toEqual(['lookup: a bug'])
    // No mkdir handler.
    const made = await run('mkdir', join(where, 'x'))
    expect(made.stderr).toMatch(/Function not implemented/)
  })

  test('slow requests do not hold up others; unmounting from outside ends the session', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const mp = await mounted({
      getattr: async (r) => (r.ino === 1 ? dir : file(r.ino, 4)),
      lookup: async (r) => {
        if (r.name === 'slow') return { nodeid: 5, attr: file(5, 4) }
        if (r.name === 'fast') return { nodeid: 6, attr: file(6, 4) }
        throw enoent()
      },
      open: async (r) => ({ fh: r.ino }),
      read: async (r) => {
        if (r.fh === 5) await gate
        return Buffer.from(r.fh === 5 ? 'slow' : 'fast').subarray(r.offset)
      },
      release: async () => {},
      flush: async () => {},
    })
    const slow = readFile(join(mp, 'slow'), 'utf8')
    await new Promise((resolve) => setTimeout(resolve, 50))
    const fast = await Promise.race([
      readFile(join(mp, 'fast'), 'utf8'),
      new Promise<undefined>((resolve) => setTimeout(resolve, 5000, undefined)),
    ])
    release()
    expect(fast).toBe('fast')
    expect(await slow).toBe('slow')
    expect((await run('umount', mp)).status).toBe(0)
    await session?.ended
    expect(session?.mounted).toBe(false)
  })

  test('the kernel remembers a name is not there for the entry timeout (negative entries)', async () => {
    let lookups = 0
    const mp = await mounted({
      getattr: async () => dir,
      lookup: async () => {
        lookups++
        throw enoent()
      },
    })
    for (let i = 0; i < 3; i++)
      await expect(stat(join(mp, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' })
    expect(lookups).toBe(1)
  })

  test('readdirplus gives a listing with its entries: ls -l looks nothing up, and sent entries count as lookups', async () => {
    const sizes = new Map([
      ['a', 3],
      ['b', 30],
    ])
    let lookups = 0
    const sent: [number, number][] = []
    const mp = await mounted({
      lookup: async (r) => {
        lookups++
        if (r.name !== 'c') throw enoent()
        return { nodeid: 22, attr: file(22, 300) }
      },
      getattr: async (r) => (r.ino === 1 ? dir : file(r.ino, 0)),
      opendir: async () => ({ fh: 1 }),
      readdir: async () => fail('readdir should not be asked when readdirplus is answered'),
      readdirplus: async () => ({
        names: ['.', '..', 'a', 'b', 'x'.repeat(300), 'c'],
        modes: new Float64Array([0o40000, 0o40000, 0o100000, 0o100000, 0o100000, 0o100000]),
        entries: [
          undefined,
          undefined,
          { nodeid: 20, attr: file(20, sizes.get('a') ?? 0) },
          { nodeid: 21, attr: file(21, sizes.get('b') ?? 0) },
          undefined,
          undefined,
        ],
        sent: (start, end) => {
          sent.push([start, end])
        },
      }),
      releasedir: async () => {},
    })
    const listed = await promisify(execFile)('ls', ['-l', mp])
    expect(listed.stdout).toMatch(/ 3 .* a\n/)
    expect(listed.stdout).toMatch(/ 30 .* b\n/)
    // `c` has no entry: the kernel looks it up; the overlong name is left out of the listing.
    expect(listed.stdout).toMatch(/ 300 .* c\n/)
    expect(listed.stdout).not.toMatch(/xxx/)
    expect(lookups).toBe(1)
    expect(sent[0]).toEqual([0, 6])
    expect((await stat(join(mp, 'b'))).size).toBe(30)
    expect(lookups).toBe(1)
  })

  test('without open, the kernel opens files itself: I/O by node, O_TRUNC as a truncate, data cached across opens', async () => {
    let data = Buffer.from('first version\n')
    const calls: string[] = []
    const mp = await mounted({
      lookup: async (r) => {
        if (r.name !== 'f') throw enoent()
        return { nodeid: 7, attr: file(7, data.length) }
      },
      getattr: async (r) => (r.ino === 1 ? dir : file(7, data.length)),
      setattr: async (r) => {
        calls.push(`setattr size=${r.size}`)
        if ((r.toSet ?? 0) & 8) data = data.subarray(0, r.size)
        return file(7, data.length)
      },
      read: async (r) => {
        calls.push(`read fh=${r.fh}`)
        return data.subarray(r.offset, r.offset + r.size)
      },
      write: async (r) => {
        calls.push(`write fh=${r.fh}`)
        data = overwrite(data, r.offset, r.data as Buffer)
        return (r.data as Buffer).length
      },
    })
    expect(await readFile(join(mp, 'f'), 'utf8')).toBe('first version\n')
    expect(await readFile(join(mp, 'f'), 'utf8')).toBe('first version\n')
    expect(calls.filter((c) => c.startsWith('read'))).toEqual(['read fh=0'])
    expect((await run('sh', '-c', `printf 'v2\\n' > ${join(mp, 'f')}`)).status).toBe(0)
    expect(calls).toContain('setattr size=0')
    expect(calls).toContain('write fh=0')
    expect(data.toString()).toBe('v2\n')
    expect(await readFile(join(mp, 'f'), 'utf8')).toBe('v2\n')
  })

  test('with the writeback cache, data written reaches the filesystem by the time the file is closed', async () => {
    let data = Buffer.alloc(0)
    where = await mkdtemp(join(tmpdir(), 'agentfs-fuse-binding-'))
    session = mount(
      where,
      {
        lookup: async (r) => {
          if (r.name !== 'w') throw enoent()
          return { nodeid: 8, attr: file(8, data.length) }
        },
        getattr: async (r) => (r.ino === 1 ? dir : file(8, data.length)),
        setattr: async (r) => {
          if ((r.toSet ?? 0) & 8) data = data.subarray(0, r.size)
          return file(8, data.length)
        },
        read: async (r) => data.subarray(r.offset, r.offset + r.size),
        write: async (r) => {
          data = overwrite(data, r.offset, r.data as Buffer)
          return (r.data as Buffer).length
        },
      },
      { writebackCache: true },
    )
    expect((await run('sh', '-c', `seq 1 20000 > ${join(where, 'w')}`)).status).toBe(0)
    expect(data.toString().split('\n')[19999]).toBe('20000')
    expect(data.length).toBe((await promisify(execFile)('seq', ['1', '20000'])).stdout.length)
  })

  test('invalidations wait for the kernel on a thread of their own, at most 65,536 of them', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    let asked!: () => void
    const mkdirAsked = new Promise<void>((resolve) => {
      asked = resolve
    })
    const mp = await mounted({
      getattr: async (r) => (r.ino === 1 ? dir : { ...dir, ino: r.ino }),
      lookup: async () => {
        throw enoent()
      },
      mkdir: async () => {
        asked()
        await gate
        return { nodeid: 9, attr: { ...dir, ino: 9 } }
      },
    })
    // mkdir holds the root directory's lock until answered: a notice about a name in it waits.
    const made = run('mkdir', join(mp, 'x'))
    await mkdirAsked
    expect(session?.invalidateEntry(1, 'x')).toBe(true)
    await new Promise((resolve) => setTimeout(resolve, 200))
    // The JavaScript thread is free meanwhile (this test runs on it); the queue is bounded.
    let queued = 0
    while (queued < 70_000 && session?.invalidate(1)) queued++
    expect(queued).toBe(65_536)
    release()
    expect((await made).status).toBe(0)
  })
})
