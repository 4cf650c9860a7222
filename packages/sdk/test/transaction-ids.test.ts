import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { withSlotIds } from '@agentfs/test-kit'
import { afterEach, describe, expect, test } from 'vitest'
import { AgentFS, type AgentFSOptions } from '../src/index.js'

const agents: AgentFS[] = []
afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.close()
})

const VARIANTS: Record<string, () => AgentFSOptions> = {
  rowids: () => ({ path: ':memory:' }),
  'slot ids': () => ({ driver: withSlotIds(betterSqlite3Driver({ path: ':memory:' })) }),
  'group commits': () => ({ path: ':memory:', groupCommits: { maxDelayMs: 50 } }),
}

/** Each change as `op path` with its transaction id, oldest first. */
async function units(agent: AgentFS): Promise<Array<[string, number]>> {
  await agent.flush()
  const { changes } = await agent.changes.since(0, { limit: 1000 })
  return changes.map((c) => [`${c.op} ${c.path}`, c.txid])
}

for (const [name, options] of Object.entries(VARIANTS)) {
  describe(`transaction ids in the change feed (${name})`, () => {
    test('every change of one transaction has one txid; separate calls have their own', async () => {
      const agent = await AgentFS.open(options())
      agents.push(agent)
      await agent.fs.writeFile('/a', 'a')
      await agent.transaction(async (tx) => {
        await tx.fs.writeFile('/b', 'b')
        await tx.fs.rename('/a', '/c')
        await tx.kv.set('k', 1)
        // A savepoint rolled back takes its changes out of the unit, not the unit's others.
        await tx.fs
          .transaction(async (inner) => {
            await inner.writeFile('/gone', 'x')
            throw new Error('undo')
          })
          .catch(() => undefined)
        await tx.fs.appendFile('/b', '!')
      })
      // A transaction whose first change was in a savepoint rolled back.
      await agent.transaction(async (tx) => {
        await tx.fs
          .transaction(async (inner) => {
            await inner.writeFile('/gone', 'x')
            throw new Error('undo')
          })
          .catch(() => undefined)
        await tx.fs.writeFile('/d', 'd')
        await tx.fs.writeFile('/e', 'e')
      })
      // Calls at the same moment (one group commit, when grouping) stay apart.
      await Promise.all([agent.fs.writeFile('/f', 'f'), agent.kv.set('g', 2)])
      const rows = await units(agent)
      const { changes } = await agent.changes.since(0, { limit: 1000 })
      const seq = (op: string) => changes[rows.findIndex(([o]) => o === op)]!.seq
      expect(rows).toEqual([
        ['create /a', seq('create /a')],
        ['create /b', seq('create /b')],
        ['rename /a', seq('create /b')],
        ['kv-set k', seq('create /b')],
        ['write /b', seq('create /b')],
        ['create /d', seq('create /d')],
        ['create /e', seq('create /d')],
        // In either order: each its own transaction.
        ...rows.slice(7),
      ])
      expect(rows.slice(7).sort()).toEqual([
        ['create /f', seq('create /f')],
        ['kv-set g', seq('kv-set g')],
      ])
      const unit = await agent.changes.since(0, { txid: seq('create /b') })
      expect(unit.changes.map((c) => c.op)).toEqual(['create', 'rename', 'kv-set', 'write'])
      await expect(agent.changes.since(0, { txid: 0 })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      })
      // The audit chain covers the transaction id: moving a change to another one is named.
      await agent.seal()
      expect((await agent.verify()).ok).toBe(true)
      await agent.db.execute({
        sql: 'UPDATE agentfs_change SET txid = ? WHERE seq = ?',
        params: [seq('create /a'), seq('write /b')],
      })
      const report = await agent.verify()
      expect(report.ok).toBe(false)
      expect(JSON.stringify(report.issues)).toContain(String(seq('write /b')))
    })
  })
}

test("a call's changes by its id, or by its token while it runs; others are left out", async () => {
  const agent = await AgentFS.open({ path: ':memory:' })
  agents.push(agent)
  await agent.fs.writeFile('/before', '0')
  let during: string[] = []
  await agent.tools.track('deploy', {}, async () => {
    await agent.fs.writeFile('/a', 'a')
    const [call] = await agent.tools.pending()
    during = (await agent.changes.since(0, { callToken: call!.token })).changes.map((c) => c.path!)
    await agent.kv.set('k', 1)
  })
  await agent.tools.track('other', {}, () => agent.fs.writeFile('/b', 'b'))
  const [other, deploy] = await agent.tools.query()
  const paths = async (toolCallId: number) =>
    (await agent.changes.since(0, { toolCallId })).changes.map((c) => c.path)
  expect(during).toEqual(['/a'])
  expect(await paths(deploy!.id)).toEqual(['/a', 'k'])
  expect(await paths(other!.id)).toEqual(['/b'])
  expect(await paths(999)).toEqual([])
  await expect(agent.changes.since(0, { callToken: '' })).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
  })
})
