import { createFileSystem } from '@agentfs/fs'
import { History } from '@agentfs/history'
import { createKvStore } from '@agentfs/kv'
import { createToolCalls } from '@agentfs/tool-calls'
import type { Scenario } from '../../harness.js'

export const historySnapshots: Scenario = {
  id: 'history/snapshots',
  description:
    'the change feed with sessions and tool calls, file versions, snapshots, diff, restore (and its undo), delete',
  async run({ db }) {
    const fs = createFileSystem(db, { feed: { sessionId: 'session-1', versions: true } })
    const kv = createKvStore(db, { feed: { sessionId: 'session-1' } })
    const tools = createToolCalls(db)
    const history = new History(db, {
      clock: db.clock,
      chunks: db.chunks,
      sessionId: 'session-1',
    })
    await fs.mkdir('/docs')
    await fs.writeFile('/docs/a.md', 'first\n')
    await tools.track('edit', { path: '/docs/a.md' }, () => fs.appendFile('/docs/a.md', 'second\n'))
    await fs.symlink('a.md', '/docs/link')
    await kv.set('plan', { step: 1 })
    const one = await history.snapshot('one', { reason: 'before the big change' })
    await fs.writeFile('/docs/a.md', 'rewritten\n')
    await fs.rename('/docs/link', '/link')
    await fs.writeFile('/docs/b.bin', new Uint8Array([0, 1, 2, 3]))
    await kv.set('plan', { step: 2 })
    const diff = await history.diff('one')
    const versions = await fs.history('/docs/a.md')
    const second = versions.find((v) => v.op === 'write' && v.size === 13)!
    const old = await fs.readFile('/docs/a.md', { version: second.version!, encoding: 'utf8' })
    const { before } = await history.restore('one')
    const restored = await fs.readFile('/docs/a.md', 'utf8')
    const back = await history.diff('one')
    await history.restore(before.name)
    const redone = await fs.readFile('/docs/a.md', 'utf8')
    await history.deleteSnapshot('one')
    return {
      one: one.name,
      diff: diff.map((c) => [c.kind, c.path, c.type, c.diff ?? null]),
      versions: versions.map((v) => [v.op, v.size, v.readable, v.sessionId, v.toolCallId]),
      old,
      restored,
      afterRestore: back.length,
      redone,
      snapshots: (await history.listSnapshots()).map((s) => [s.name, s.kind, s.reason]),
      feed: (await db.execute<{ n: number }>({ sql: 'SELECT count(*) AS n FROM agentfs_change' }))
        .rows[0]!.n,
    }
  },
}
