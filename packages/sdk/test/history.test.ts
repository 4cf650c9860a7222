import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Driver, Executor } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { MergeConflictError } from '@agentfs/overlay'
import { afterEach, describe, expect, test } from 'vitest'
import { AgentFS, storedVersions, storeVersions } from '../src/index.js'

const agents: AgentFS[] = []
const dirs: string[] = []
afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.close()
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

async function open(options: Parameters<typeof AgentFS.open>[0] = {}) {
  const agent = await AgentFS.open({ path: ':memory:', ...options })
  agents.push(agent)
  return agent
}

describe('change feed', () => {
  test('one row per change with op, paths, inode, version and size; reads add none', async () => {
    const agent = await open({ sessionId: 'sess-1' })
    await agent.fs.mkdir('/a/b', { recursive: true })
    await agent.fs.writeFile('/a/b/f.txt', 'hello')
    await agent.fs.readFile('/a/b/f.txt')
    await agent.fs.appendFile('/a/b/f.txt', '!')
    await agent.fs.rename('/a/b/f.txt', '/a/g.txt')
    await agent.fs.chmod('/a/g.txt', 0o600)
    await agent.fs.unlink('/a/g.txt')
    await agent.kv.set('key', 1)
    await agent.kv.delete('key')
    const { changes } = await agent.changes.since(0)
    expect(changes.map((c) => [c.op, c.path, c.path2])).toEqual([
      ['mkdir', '/a', null],
      ['mkdir', '/a/b', null],
      ['create', '/a/b/f.txt', null],
      ['write', '/a/b/f.txt', null],
      ['rename', '/a/b/f.txt', '/a/g.txt'],
      ['chmod', '/a/g.txt', null],
      ['unlink', '/a/g.txt', null],
      ['kv-set', 'key', null],
      ['kv-delete', 'key', null],
    ])
    const write = changes[3]!
    expect(write.size).toBe(6)
    expect(changes.every((c) => c.sessionId === 'sess-1')).toBe(true)
    expect(changes.map((c) => c.seq)).toEqual([...changes.map((c) => c.seq)].sort((x, y) => x - y))
    // Version tokens are the stat() tokens of the moment.
    await agent.fs.writeFile('/v', 'x')
    const last = (await agent.changes.since(write.seq, { path: '/v' })).changes[0]!
    expect(last.version).toBe((await agent.fs.stat('/v')).version)
  })

  test('a failed operation leaves no row; a transaction rolls its rows back', async () => {
    const agent = await open()
    await expect(agent.fs.unlink('/missing')).rejects.toThrow(/ENOENT/)
    await expect(
      agent.transaction(async (tx) => {
        await tx.fs.writeFile('/x', 'x')
        throw new Error('stop')
      }),
    ).rejects.toThrow('stop')
    expect((await agent.changes.since(0)).changes).toEqual([])
  })

  test('changes inside a tracked tool call carry the call id', async () => {
    const agent = await open()
    await agent.tools.track('write_file', { path: '/n' }, () => agent.fs.writeFile('/n', 'x'))
    await agent.fs.writeFile('/m', 'y')
    const { changes } = await agent.changes.since(0)
    const [call] = await agent.tools.recent(1)
    expect(changes[0]!.toolCallId).toBe(call!.id)
    expect(changes[1]!.toolCallId).toBeNull()
  })

  test('path filters, recursion, paging and the kv/fs split', async () => {
    const agent = await open()
    await agent.fs.mkdir('/p')
    await agent.fs.writeFile('/p/1', '1')
    await agent.fs.writeFile('/p_/2', '2').catch(() => undefined)
    await agent.fs.writeFile('/q', 'q')
    await agent.kv.set('/p/1', 'kv')
    const below = await agent.changes.since(0, { path: '/p', recursive: true, store: 'fs' })
    expect(below.changes.map((c) => c.path)).toEqual(['/p', '/p/1'])
    const page = await agent.changes.since(0, { limit: 2 })
    expect(page.more).toBe(true)
    const next = await agent.changes.since(page.cursor, { limit: 10 })
    expect(next.changes[0]!.seq).toBe(page.cursor + 1)
    expect((await agent.changes.since(0, { store: 'kv' })).changes.map((c) => c.op)).toEqual([
      'kv-set',
    ])
  })

  test("a follower leaves out its own session's changes, keeps everyone else's", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfs-feed-'))
    dirs.push(dir)
    const path = join(dir, 'shared.db')
    const mine = await open({ path, sessionId: 'mine' })
    const theirs = await open({ path, sessionId: 'theirs' })
    const anonymous = await open({ path })
    await mine.fs.writeFile('/a', 'a')
    await theirs.fs.writeFile('/b', 'b')
    await anonymous.fs.writeFile('/c', 'c')
    await mine.fs.unlink('/a')
    const others = await mine.changes.since(0, { exceptSession: 'mine' })
    expect(others.changes.map((c) => [c.path, c.sessionId])).toEqual([
      ['/b', 'theirs'],
      ['/c', null],
    ])
    expect((await mine.changes.since(0)).changes).toHaveLength(4)
  })

  test('feed off: no rows', async () => {
    const agent = await open({ feed: false })
    await agent.fs.writeFile('/x', 'x')
    await agent.kv.set('k', 1)
    expect(await agent.changes.last()).toBe(0)
  })

  test('trim deletes old rows; the next snapshot compares everything', async () => {
    const agent = await open()
    for (let i = 0; i < 5; i++) await agent.fs.writeFile(`/f${i}`, `${i}`)
    await agent.snapshot('one')
    await agent.fs.writeFile('/f0', 'changed')
    expect(await agent.changes.trim({ keep: 2 })).toBe(4)
    await agent.snapshot('two')
    expect(await agent.history.readFile('/f0', { snapshot: 'two', encoding: 'utf8' })).toBe(
      'changed',
    )
  })
})

describe('file versions', () => {
  test('history lists who changed a file; kept versions read back; retention drops the oldest', async () => {
    const agent = await open({ versions: { maxCount: 2 }, sessionId: 's' })
    await agent.fs.writeFile('/f', 'v1')
    const v1 = (await agent.fs.stat('/f')).version
    await agent.tools.track('edit', {}, () => agent.fs.writeFile('/f', 'v2'))
    const v2 = (await agent.fs.stat('/f')).version
    await agent.fs.rename('/f', '/g')
    await agent.fs.appendFile('/g', '+')
    const list = await agent.fs.history('/g')
    expect(list.map((v) => v.op)).toEqual(['write', 'rename', 'write', 'create'])
    expect(list[2]!.toolCallId).not.toBeNull()
    expect(list[2]!.version).toBe(v2)
    expect(await agent.fs.readFile('/g', { version: v2, encoding: 'utf8' })).toBe('v2')
    expect(await agent.fs.readFile('/g', { version: list[0]!.version!, encoding: 'utf8' })).toBe(
      'v2+',
    )
    // maxCount 2: the first version was dropped when the third was kept.
    expect(list[3]!.readable).toBe(false)
    await expect(agent.fs.readFile('/g', { version: v1 })).rejects.toThrow(/not kept/)
  })

  test('versions off: history still lists changes; old contents are not readable', async () => {
    const agent = await open()
    await agent.fs.writeFile('/f', 'a')
    const old = (await agent.fs.stat('/f')).version
    await agent.fs.writeFile('/f', 'b')
    const list = await agent.fs.history('/f')
    expect(list.map((v) => [v.op, v.readable])).toEqual([
      ['write', true],
      ['create', false],
    ])
    await expect(agent.fs.readFile('/f', { version: old })).rejects.toThrow(/ENOENT/)
    await expect(agent.fs.history('/nothing')).rejects.toThrow(/ENOENT/)
  })
})

describe('branches', () => {
  test('commit with merge: edits of one file in different places both land, in one transaction naming both parents; restore undoes it', async () => {
    const agent = await open({ versions: true })
    await agent.fs.writeFile('/doc.md', '# Title\n\nintro\n\nbody\n\nend\n')
    await agent.snapshot('base')
    const branch = await agent.branch('base')
    await branch.fs.writeFile('/doc.md', '# Better title\n\nintro\n\nbody\n\nend\n')
    await agent.fs.writeFile('/doc.md', '# Title\n\nintro\n\nbody\n\nthe end\n')
    // Without merge, still refused.
    await expect(branch.commit()).rejects.toThrow(/changed in the base/)
    const parent = await agent.changes.last()
    const { before, merged } = await branch.commit({ merge: true })
    await branch.close()
    expect(merged).toEqual(['/doc.md'])
    expect(await agent.fs.readFile('/doc.md', 'utf8')).toBe(
      '# Better title\n\nintro\n\nbody\n\nthe end\n',
    )
    const rows = (await agent.changes.since(parent)).changes
    expect(new Set(rows.map((c) => c.txid)).size).toBe(1)
    const commit = rows.find((c) => c.op === 'commit')!
    expect(commit.path2).toBe('base')
    expect(commit.message).toBe(`merge of a branch of base onto change #${parent}: /doc.md`)
    await agent.restore(before.name)
    expect(await agent.fs.readFile('/doc.md', 'utf8')).toBe('# Title\n\nintro\n\nbody\n\nthe end\n')
  })

  test('a branch conflict resolved with resolve(path) commits; a later live edit merges against the resolved version', async () => {
    const agent = await open()
    await agent.fs.writeFile('/a.txt', 'one\ntwo\nthree\nfour\n')
    await agent.snapshot('base')
    const branch = await agent.branch('base')
    await branch.fs.writeFile('/a.txt', 'one\nTWO (branch)\nthree\nfour\n')
    await agent.fs.writeFile('/a.txt', 'one\nTWO (live)\nthree\nfour\n')
    await expect(branch.commit({ merge: true })).rejects.toBeInstanceOf(MergeConflictError)
    await branch.fs.writeFile('/a.txt', 'one\nTWO (both)\nthree\nfour\n')
    // Written alone, the resolution conflicts again with the snapshot as ancestor.
    await expect(branch.commit({ merge: true })).rejects.toBeInstanceOf(MergeConflictError)
    await branch.resolve('/a.txt')
    // The live tree moves on after the resolution: merged against the version resolved.
    await agent.fs.writeFile('/a.txt', 'one\nTWO (live)\nthree\nFOUR (live)\n')
    await branch.commit({ merge: true })
    expect(await agent.fs.readFile('/a.txt', 'utf8')).toBe('one\nTWO (both)\nthree\nFOUR (live)\n')
    await branch.close()
  })

  test('commit with merge: the same lines changed on both sides are a structured conflict, nothing applied', async () => {
    const agent = await open()
    await agent.fs.writeFile('/a.txt', 'one\ntwo\nthree\n')
    await agent.fs.writeFile('/b.bin', Buffer.from([1, 0, 2]))
    await agent.snapshot('base')
    const branch = await agent.branch('base')
    await branch.fs.writeFile('/a.txt', 'one\nTWO (branch)\nthree\n')
    await branch.fs.writeFile('/new.txt', 'added on the branch\n')
    await agent.fs.writeFile('/a.txt', 'one\nTWO (live)\nthree\n')
    const error = await branch.commit({ merge: true }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(MergeConflictError)
    const merges = (error as MergeConflictError).merges
    expect(merges).toEqual([
      {
        path: '/a.txt',
        hunks: [
          {
            ours: 'TWO (branch)\n',
            base: 'two\n',
            theirs: 'TWO (live)\n',
            oursLine: 2,
            baseLine: 2,
            theirsLine: 2,
          },
        ],
        text: 'one\n<<<<<<< overlay\nTWO (branch)\n||||||| ancestor\ntwo\n=======\nTWO (live)\n>>>>>>> target\nthree\n',
      },
    ])
    expect(await agent.fs.readFile('/a.txt', 'utf8')).toBe('one\nTWO (live)\nthree\n')
    expect(await agent.fs.exists('/new.txt')).toBe(false)
    // The branch keeps its changes: resolve there, then commit again.
    await branch.fs.writeFile('/a.txt', 'one\nTWO (live)\nthree\n')
    await agent.fs.writeFile('/b.bin', Buffer.from([9]))
    await branch.fs.writeFile('/b.bin', Buffer.from([1, 0, 3]))
    const binary = await branch.commit({ merge: true }).catch((e: unknown) => e)
    expect((binary as MergeConflictError).merges).toEqual([
      {
        path: '/b.bin',
        hunks: [],
        reason: 'changed on both sides, and it is not text: pick one side',
      },
    ])
    await branch.fs.rm('/b.bin')
    await branch.fs.writeFile('/b.bin', Buffer.from([9]))
    await branch.close()
  })

  test('a branch of a snapshot: edit, diff, commit onto the live tree, undo with restore', async () => {
    const agent = await open()
    await agent.fs.writeFile('/doc.md', 'v1\n')
    await agent.fs.writeFile('/keep.md', 'keep\n')
    await agent.snapshot('base')
    const branch = await agent.branch('base')
    expect(await branch.fs.readFile('/doc.md', 'utf8')).toBe('v1\n')
    await branch.fs.writeFile('/doc.md', 'v2\n')
    await branch.fs.writeFile('/added.md', 'new\n')
    expect((await branch.diff()).map((c) => `${c.kind} ${c.path}`)).toEqual([
      'added /added.md',
      'modified /doc.md',
    ])
    expect(await agent.fs.readFile('/doc.md', 'utf8')).toBe('v1\n')
    const { before } = await branch.commit()
    await branch.close()
    expect(await agent.fs.readFile('/doc.md', 'utf8')).toBe('v2\n')
    expect(await agent.fs.readFile('/added.md', 'utf8')).toBe('new\n')
    await agent.restore(before.name)
    expect(await agent.fs.readFile('/doc.md', 'utf8')).toBe('v1\n')
    expect(await agent.fs.exists('/added.md')).toBe(false)
  })

  test('a branch of a snapshot just restored commits: the live files are what the snapshot holds', async () => {
    const agent = await open()
    await agent.fs.writeFile('/plan.md', '1\n')
    await agent.snapshot('s')
    await agent.fs.rm('/plan.md')
    await agent.restore('s')
    const branch = await agent.branch('s')
    await branch.fs.writeFile('/plan.md', '1\n2\n')
    await branch.commit()
    await branch.close()
    expect(await agent.fs.readFile('/plan.md', 'utf8')).toBe('1\n2\n')
  })

  test('commit refuses when the live tree changed the same path since the snapshot', async () => {
    const agent = await open()
    await agent.fs.writeFile('/doc.md', 'v1\n')
    await agent.snapshot('base')
    const branch = await agent.branch('base')
    await branch.fs.writeFile('/doc.md', 'branch\n')
    await agent.fs.writeFile('/doc.md', 'live\n')
    await expect(branch.commit()).rejects.toThrow(/changed in the base/)
    await branch.close()
    expect(await agent.fs.readFile('/doc.md', 'utf8')).toBe('live\n')
    expect((await agent.history.listSnapshots()).map((s) => s.name)).toEqual(['base'])
  })
})

describe('follow and watch', () => {
  test('follow sees changes from another process writing the same file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfs-follow-'))
    dirs.push(dir)
    const path = join(dir, 'agent.db')
    const reader = await open({ path })
    const writer = await open({ path })
    const controller = new AbortController()
    const seen: string[] = []
    const following = (async () => {
      for await (const change of reader.changes.follow({
        signal: controller.signal,
        intervalMs: 5,
      })) {
        seen.push(`${change.op} ${change.path}`)
        if (seen.length === 2) controller.abort()
      }
    })()
    await new Promise((r) => setTimeout(r, 30))
    await writer.fs.writeFile('/one', '1')
    await writer.kv.set('two', 2)
    await following
    expect(seen).toEqual(['create /one', 'kv-set two'])
  })

  test('fs.watch: rename and change events, filenames relative, recursive, abort ends it', async () => {
    const agent = await open()
    await agent.fs.mkdir('/w/sub', { recursive: true })
    const controller = new AbortController()
    const events: string[] = []
    const watching = (async () => {
      for await (const event of agent.fs.watch('/w', {
        recursive: true,
        signal: controller.signal,
        intervalMs: 5,
      })) {
        events.push(`${event.eventType} ${String(event.filename)}`)
        if (events.length === 5) controller.abort()
      }
    })().catch((error: Error) => {
      if (error.name !== 'AbortError') throw error
    })
    await new Promise((r) => setTimeout(r, 20))
    await agent.fs.writeFile('/outside', 'x')
    await agent.fs.writeFile('/w/a', '1')
    await agent.fs.writeFile('/w/a', '2')
    await agent.fs.writeFile('/w/sub/b', '3')
    await agent.fs.rename('/w/a', '/w/c')
    await watching
    expect(events).toEqual(['rename a', 'change a', 'rename sub/b', 'rename a', 'rename c'])
    await expect(
      (async () => {
        for await (const _ of agent.fs.watch('/missing')) break
      })(),
    ).rejects.toThrow(/ENOENT/)
  })
})

describe('undelete and blame with snapshots and restores', () => {
  test('without versions, the newest snapshot before the deletion brings a tree back (empty directories, links, modes)', async () => {
    const agent = await open()
    await agent.fs.mkdir('/t/empty', { recursive: true })
    await agent.fs.writeFile('/t/x.txt', 'x', { mode: 0o640 })
    await agent.fs.symlink('x.txt', '/t/link')
    await agent.snapshot('before')
    await agent.fs.writeFile('/t/x.txt', 'changed after the snapshot, not kept')
    await agent.fs.rm('/t', { recursive: true })
    const [listed] = await agent.fs.deleted()
    expect(listed).toMatchObject({ path: '/t', op: 'rm', recoverable: 'snapshot' })
    const back = await agent.fs.undelete('/t')
    expect(back).toMatchObject({ kind: 'directory', from: ['snapshot'], snapshot: 'before' })
    expect(await agent.fs.readFile('/t/x.txt', 'utf8')).toBe('x')
    expect((await agent.fs.stat('/t/x.txt')).mode & 0o777).toBe(0o640)
    expect(await agent.fs.readlink('/t/link')).toBe('x.txt')
    expect((await agent.fs.stat('/t/empty')).isDirectory()).toBe(true)
  })

  test('with versions, a file changed after the snapshot comes back as last written', async () => {
    const agent = await open({ versions: true })
    await agent.fs.writeFile('/f.md', 'in the snapshot')
    await agent.snapshot('s')
    await agent.fs.writeFile('/f.md', 'written after it')
    await agent.fs.unlink('/f.md')
    expect(await agent.fs.undelete('/f.md')).toMatchObject({ from: ['version'] })
    expect(await agent.fs.readFile('/f.md', 'utf8')).toBe('written after it')
  })

  test('after a restore, each line keeps the change that wrote it', async () => {
    const agent = await open({ versions: true })
    await agent.fs.writeFile('/a.txt', 'one\ntwo\n')
    await agent.fs.writeFile('/a.txt', 'one\nTWO\n')
    const [second, first] = await agent.fs.history('/a.txt')
    await agent.snapshot('good')
    await agent.fs.writeFile('/a.txt', 'broken\n')
    await agent.restore('good')
    const blame = await agent.fs.blame('/a.txt')
    expect(blame.lines.map((l) => [l.text, l.change?.seq])).toEqual([
      ['one', first!.seq],
      ['TWO', second!.seq],
    ])
    expect(blame.complete).toBe(true)
  })
})

/** A better-sqlite3 driver that counts the statements it runs (in transactions too). */
function countingDriver() {
  const driver = betterSqlite3Driver({ path: ':memory:' })
  const counter = { n: 0 }
  const count = <T extends Executor>(executor: T): T =>
    new Proxy(executor, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver)
        if ((key === 'execute' || key === 'defer') && typeof value === 'function')
          return (...args: unknown[]) => {
            counter.n++
            return (value as (...a: unknown[]) => unknown).apply(target, args)
          }
        if (key === 'transaction')
          return (fn: (tx: Executor) => Promise<unknown>) =>
            (value as Driver['transaction']).call(target, (tx) => fn(count(tx)))
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
  return { driver: count(driver), counter }
}

describe('fs.deleted at scale', () => {
  test('fs.deleted checks where each path would come from without walking its tree', async () => {
    const { driver, counter } = countingDriver()
    const agent = await AgentFS.open({ driver, versions: true })
    const { fs, history } = agent
    try {
      // Ten trees of 200 directories (one file each), held by a snapshot, then deleted.
      for (let t = 0; t < 10; t++)
        await fs.transaction(async (tx) => {
          for (let d = 0; d < 200; d++) {
            await tx.mkdir(`/t${t}/d${d}`, { recursive: true })
            await tx.writeFile(`/t${t}/d${d}/f.txt`, `${t}/${d}`)
          }
        })
      await history.snapshot('before')
      for (let t = 0; t < 10; t++) await fs.rm(`/t${t}`, { recursive: true })
      counter.n = 0
      const listed = await fs.deleted('/')
      expect(listed.map((d) => [d.path, d.recoverable])).toEqual(
        Array.from({ length: 10 }, (_, t) => [`/t${9 - t}`, 'snapshot']),
      )
      // A handful of statements per listed path, not one per entry of its tree (2,000 here).
      expect(counter.n).toBeLessThan(10 * 12)
    } finally {
      await agent.close()
    }
  })
})

describe('the version setting stored in the database', () => {
  test('an open without the option keeps versions as stored; the option wins; a bad row warns and opens', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfs-versions-'))
    dirs.push(dir)
    const path = join(dir, 'a.db')
    const first = await AgentFS.open({ path })
    await first.db.transaction((tx) => storeVersions(tx, { maxCount: 2 }))
    await first.close()
    const kept = async (agent: AgentFS) =>
      (
        await agent.db.execute<{ n: number }>({
          sql: 'SELECT count(*) AS n FROM agentfs_file_version',
        })
      ).rows[0]!.n
    const write = async (options: Parameters<typeof AgentFS.open>[0]) => {
      const agent = await AgentFS.open({ path, ...options })
      await agent.fs.writeFile('/f.txt', `${Math.random()}`)
      const n = await kept(agent)
      const stored = await storedVersions(agent.db)
      await agent.close()
      return { n, stored }
    }
    // Stored: on, 2 per file.
    expect(await write({})).toEqual({ n: 1, stored: expect.objectContaining({ maxCount: 2 }) })
    expect((await write({})).n).toBe(2)
    expect((await write({})).n).toBe(2)
    // The option given at open wins over the stored setting.
    const off = await AgentFS.open({ path, versions: false })
    await off.fs.writeFile('/f.txt', 'not kept')
    await off.fs.writeFile('/g.txt', 'not kept either')
    expect(await kept(off)).toBe(2)
    // A value this library never writes: the database still opens, versions off, a warning.
    await off.db.execute({
      sql: "UPDATE agentfs_meta SET value = '[1,2]' WHERE key = 'history.versions'",
    })
    await off.close()
    const warnings: string[] = []
    const bad = await AgentFS.open({ path, onWarning: (w) => warnings.push(w) })
    expect(warnings).toEqual([
      expect.stringMatching(/history.versions is not a setting this library writes/),
    ])
    await bad.close()
  })
})
