import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { auditKeyId } from '@agentfs/core'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, test } from 'vitest'
import { AgentFS } from '../src/index.js'

const dirs: string[] = []
const agents: AgentFS[] = []
afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.close()
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agentfs-audit-'))
  dirs.push(dir)
  return dir
}

const KEY = new Uint8Array(32).fill(7)

/** A database with a little of everything, sealed and closed; returns its path. */
async function workload(options: Parameters<typeof AgentFS.open>[0] = {}): Promise<string> {
  const path = join(tempDir(), 'a.db')
  const agent = await AgentFS.open({ path, sessionId: 's1', ...options })
  for (let i = 0; i < 5; i++) {
    await agent.tools.track('write', { i }, async () => {
      await agent.fs.writeFile(`/f${i}.txt`, `content ${i}`)
      return { ok: i }
    })
  }
  await agent.kv.set('k', { v: 1 })
  await agent.close()
  return path
}

/** Runs plain SQL on a copy of the database, as someone holding the file could. */
let copies = 0
function tamper(path: string, ...sql: string[]): string {
  const copy = `${path}.tampered-${++copies}.db`
  copyFileSync(path, copy)
  const db = new Database(copy)
  for (const statement of sql) db.exec(statement)
  db.close()
  return copy
}

async function verify(path: string, options: Parameters<AgentFS['verify']>[0] = {}) {
  const agent = await AgentFS.open({ path, audit: { sealOnClose: false } })
  agents.push(agent)
  return agent.verify(options)
}

describe('audit chain', () => {
  test('close seals every tool call and change; an untouched database verifies clean', async () => {
    const path = await workload()
    const report = await verify(path)
    expect(report.ok).toBe(true)
    expect(report.verified).toEqual({ call: 5, change: 6 })
    expect(report.unsealed).toEqual({ call: 0, change: 0 })
    expect(report.head).toMatch(/^agentfs-audit-v1 call:0:5:[0-9a-f]{64},change:0:6:[0-9a-f]{64}$/)
  })

  test('a changed row, a removed row, an inserted row and a reordered pair are each named', async () => {
    const path = await workload()
    const changed = await verify(
      tamper(path, 'UPDATE tool_calls SET result = \'{"ok":99}\' WHERE id = 3'),
    )
    expect(changed.issues.map((i) => [i.stream, i.seq, i.kind])).toEqual([['call', 3, 'changed']])
    expect(changed.ok).toBe(false)

    const meta = await verify(
      tamper(path, "UPDATE agentfs_tool_call_meta SET session_id = 'someone-else' WHERE id = 2"),
    )
    expect(meta.issues.map((i) => [i.stream, i.seq, i.kind])).toEqual([['call', 2, 'changed']])

    const removed = await verify(tamper(path, 'DELETE FROM agentfs_change WHERE seq = 4'))
    expect(removed.issues.map((i) => [i.stream, i.seq, i.kind])).toEqual([['change', 4, 'removed']])

    // A row slipped in between sealed ones: the gap left by a removed row refilled.
    const inserted = await verify(
      tamper(
        path,
        'DELETE FROM agentfs_change WHERE seq = 2',
        "DELETE FROM agentfs_audit_chain WHERE stream = 'change' AND seq = 2",
        "INSERT INTO agentfs_change (seq, at_us, op, path) VALUES (2, 1, 'unlink', '/evidence')",
      ),
    )
    // The next row's link ran through the seal taken away: it cannot be proved either.
    expect(inserted.issues.map((i) => [i.stream, i.seq, i.kind])).toEqual([
      ['change', 2, 'inserted'],
      ['change', 3, 'changed'],
    ])

    const reordered = await verify(
      tamper(
        path,
        'UPDATE agentfs_change SET seq = -1 WHERE seq = 2',
        'UPDATE agentfs_change SET seq = 2 WHERE seq = 3',
        'UPDATE agentfs_change SET seq = 3 WHERE seq = -1',
      ),
    )
    expect(reordered.issues.map((i) => [i.stream, i.seq, i.kind])).toEqual([
      ['change', 2, 'changed'],
      ['change', 3, 'changed'],
    ])
    expect(reordered.issues[0]!.message).toBe(
      'change 2: the row or its seal differs from what was sealed (changed or reordered)',
    )
  })

  test("the feed's content hashes are sealed: one changed, dropped or added is named", async () => {
    const path = await workload()
    const rows = await verify(path)
    expect(rows.ok).toBe(true)
    const changed = await verify(
      tamper(path, 'UPDATE agentfs_change SET hash = zeroblob(32) WHERE seq = 2'),
    )
    expect(changed.issues.map((i) => [i.stream, i.seq, i.kind])).toEqual([['change', 2, 'changed']])
    const dropped = await verify(
      tamper(path, 'UPDATE agentfs_change SET hash = NULL WHERE seq = 3'),
    )
    expect(dropped.issues.map((i) => [i.stream, i.seq, i.kind])).toEqual([['change', 3, 'changed']])
    // The kv change (row 6) has no hash; giving it one is a change too.
    const added = await verify(
      tamper(path, 'UPDATE agentfs_change SET prev_hash = zeroblob(32) WHERE seq = 6'),
    )
    expect(added.issues.map((i) => [i.stream, i.seq, i.kind])).toEqual([['change', 6, 'changed']])
  })

  test("the feed's messages are sealed: one changed, dropped or added is named", async () => {
    const path = await workload()
    expect((await verify(path)).ok).toBe(true)
    const given = tamper(path, "UPDATE agentfs_change SET message = 'innocent' WHERE seq = 2")
    expect((await verify(given)).issues.map((i) => [i.stream, i.seq, i.kind])).toEqual([
      ['change', 2, 'changed'],
    ])
    // A message set before sealing, then changed or dropped: named too.
    const agent = await AgentFS.open({ path: join(dirname(path), 'm.db') })
    await agent.fs.writeFile('/m.txt', 'x', { message: 'why' })
    await agent.close()
    const sealed = join(dirname(path), 'm.db')
    expect((await verify(sealed)).ok).toBe(true)
    for (const sql of [
      "UPDATE agentfs_change SET message = 'other'",
      'UPDATE agentfs_change SET message = NULL',
    ])
      expect(
        (await verify(tamper(sealed, sql))).issues.map((i) => [i.stream, i.seq, i.kind]),
      ).toEqual([['change', 1, 'changed']])
  })

  test('an unkeyed chain rebuilt after a change, or cut off at the end, fails against the head kept', async () => {
    const path = await workload()
    const head = (await verify(path)).head
    // Rebuild: change a row, drop its seal and every later one, and seal again.
    const rebuilt = tamper(
      path,
      "UPDATE tool_calls SET name = 'harmless' WHERE id = 4",
      "DELETE FROM agentfs_audit_chain WHERE stream = 'call' AND seq >= 4",
    )
    const agent = await AgentFS.open({ path: rebuilt })
    await agent.seal()
    expect((await agent.verify()).ok).toBe(true)
    const against = await agent.verify({ expectHead: head })
    await agent.close()
    expect(against.issues.map((i) => [i.stream, i.seq, i.kind])).toEqual([['call', 5, 'rebuilt']])

    const cut = await verify(
      tamper(
        path,
        'DELETE FROM tool_calls WHERE id = 5',
        'DELETE FROM agentfs_tool_call_meta WHERE id = 5',
        "DELETE FROM agentfs_audit_chain WHERE stream = 'call' AND seq = 5",
      ),
      { expectHead: head },
    )
    expect(cut.issues.map((i) => [i.stream, i.seq, i.kind])).toEqual([['call', 5, 'cut']])
  })

  test('a keyed chain cannot be rebuilt without the key; rotation keeps old rows verifiable', async () => {
    const path = await workload({ audit: { key: { key: KEY } } })
    expect((await verify(path, { keys: [{ key: KEY }] })).ok).toBe(true)
    // Without the key, nothing keyed can be checked.
    const nokey = await verify(path)
    expect(nokey.issues[0]!.kind).toBe('unknown-key')
    expect(nokey.issues[0]!.message).toContain(`sealed with key '${auditKeyId(KEY)}'`)
    // Rebuilt with plain SHA-256 after a change: refused as unkeyed.
    const rebuilt = tamper(
      path,
      "UPDATE agentfs_change SET path = '/other' WHERE seq = 5",
      "DELETE FROM agentfs_audit_chain WHERE stream = 'change' AND seq >= 5",
    )
    const forger = await AgentFS.open({ path: rebuilt })
    await forger.seal()
    await forger.close()
    const report = await verify(rebuilt, { keys: [{ key: KEY }] })
    expect(report.issues.map((i) => [i.stream, i.seq, i.kind])).toEqual([
      ['change', 5, 'unkeyed'],
      ['change', 6, 'unkeyed'],
    ])
    // Rebuilt with another key: named as a key not given.
    const again = tamper(
      path,
      "UPDATE agentfs_change SET path = '/other' WHERE seq = 5",
      "DELETE FROM agentfs_audit_chain WHERE stream = 'change' AND seq >= 5",
    )
    const other = await AgentFS.open({ path: again, audit: { key: { key: KEY.map(() => 1) } } })
    await other.seal()
    await other.close()
    const foreign = await verify(again, { keys: [{ key: KEY }] })
    expect(foreign.issues.map((i) => [i.seq, i.kind])).toEqual([
      [5, 'unknown-key'],
      [6, 'unknown-key'],
    ])

    // Rotation: new rows under a second key; both keys verify the whole chain.
    const second = new Uint8Array(32).fill(9)
    const rotated = await AgentFS.open({ path, audit: { key: { key: second } } })
    await rotated.fs.writeFile('/later.txt', 'x')
    await rotated.close()
    expect((await verify(path, { keys: [{ key: KEY }, { key: second }] })).ok).toBe(true)
    expect((await verify(path, { keys: [{ key: second }] })).issues[0]!.kind).toBe('unknown-key')
  })

  test('a trim keeps an anchor: what stays verifies, a row put back below it is named', async () => {
    const path = await workload()
    const agent = await AgentFS.open({ path })
    await agent.fs.writeFile('/g.txt', 'unsealed before the trim')
    expect(await agent.changes.trim({ keep: 2 })).toBe(5)
    const report = await agent.verify()
    expect(report.ok).toBe(true)
    expect(report.trimmedTo).toEqual([{ stream: 'change', slot: 0, seq: 5 }])
    expect(report.verified.change).toBe(1)
    expect(report.unsealed.change).toBe(1)
    await agent.close()
    const back = await verify(
      tamper(
        path,
        "INSERT INTO agentfs_change (seq, at_us, op, path) VALUES (3, 1, 'write', '/x')",
      ),
    )
    expect(back.issues.map((i) => [i.stream, i.seq, i.kind])).toEqual([['change', 3, 'inserted']])
  })

  test('rows written after the last seal are counted unsealed, then sealed', async () => {
    const path = await workload()
    const agent = await AgentFS.open({ path })
    agents.push(agent)
    await agent.fs.mkdir('/d')
    await agent.tools.track('ping', {}, () => 'pong')
    const before = await agent.verify()
    expect(before.unsealed).toEqual({ call: 1, change: 1 })
    expect(before.ok).toBe(true)
    expect((await agent.seal()).sealed).toEqual({ call: 1, change: 1 })
    expect((await agent.verify()).unsealed).toEqual({ call: 0, change: 0 })
  })

  test('close seals only when the agent changed the database: a reader leaves it to writers', async () => {
    const path = join(tempDir(), 'a.db')
    const writer = await AgentFS.open({ path, audit: { sealOnClose: false } })
    await writer.fs.writeFile('/a.txt', 'a')
    await writer.tools.track('ping', {}, () => 'pong')
    await writer.close()
    // A reader's close would hold the write lock to seal the writer's rows: it does not seal.
    const reader = await AgentFS.open({ path })
    expect(await reader.fs.readFile('/a.txt', 'utf8')).toBe('a')
    await reader.fs.readdir('/')
    await reader.close()
    expect((await verify(path)).unsealed).toEqual({ call: 1, change: 1 })
    // An agent that changes anything seals everything new when it closes.
    const next = await AgentFS.open({ path })
    await next.kv.set('k', 1)
    await next.close()
    expect((await verify(path)).unsealed).toEqual({ call: 0, change: 0 })
  })

  test('a head that is not one is refused in one line; a short key is refused', async () => {
    const path = await workload()
    await expect(verify(path, { expectHead: 'nonsense' })).rejects.toThrow(
      '\'nonsense\' is not an audit head; pass the line "agentfs verify --head" printed',
    )
    await expect(
      AgentFS.open({ path, audit: { key: { key: new Uint8Array(4) } } }).then((a) => a.seal()),
    ).rejects.toThrow('an audit key must be at least 16 bytes')
  })
})

describe('audit chain under a long random workload', () => {
  test('seals and trims at random points verify clean; any one row changed afterwards is named', async () => {
    let seed = 0x2f6b_1d3
    const random = (n: number) => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0
      return seed % n
    }
    const path = join(tempDir(), 'random.db')
    const agent = await AgentFS.open({ path, audit: { key: { key: KEY } } })
    for (let step = 0; step < 600; step++) {
      const file = `/f${random(20)}.txt`
      switch (random(8)) {
        case 0:
        case 1:
          await agent.tools.track('write', { file, step }, () =>
            agent.fs.writeFile(file, `step ${step}`),
          )
          break
        case 2:
          await agent.fs.appendFile(file, `+${step}`)
          break
        case 3:
          await agent.fs.rm(file, { force: true })
          break
        case 4:
          await agent.kv.set(`k${random(10)}`, { step })
          break
        case 5:
          await agent.tools
            .track('fails', { step }, () => {
              throw new Error(`failure ${step}`)
            })
            .catch(() => undefined)
          break
        case 6:
          if (random(4) === 0) await agent.seal()
          break
        default:
          if (random(10) === 0) await agent.changes.trim({ keep: 50 + random(100) })
      }
    }
    const clean = await agent.verify()
    expect(clean.issues).toEqual([])
    await agent.seal()
    const sealed = await agent.verify()
    expect(sealed.ok).toBe(true)
    expect(sealed.unsealed).toEqual({ call: 0, change: 0 })
    const { rows } = await agent.db.execute<{ seq: number }>({
      sql: 'SELECT seq FROM agentfs_change ORDER BY seq',
    })
    expect(sealed.verified.change).toBe(rows.length)
    await agent.close()
    // Each of a few rows, changed alone in a copy, is the one verify names.
    for (const victim of [rows[0]!.seq, rows[Math.floor(rows.length / 2)]!.seq, rows.at(-1)!.seq]) {
      const report = await verify(
        tamper(
          path,
          `UPDATE agentfs_change SET size = coalesce(size, 0) + 1 WHERE seq = ${victim}`,
        ),
        { keys: [{ key: KEY }] },
      )
      expect(report.issues.map((i) => [i.stream, i.seq, i.kind])).toEqual([
        ['change', victim, 'changed'],
      ])
    }
  })
})
