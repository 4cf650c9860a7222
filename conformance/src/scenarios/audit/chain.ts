import { micros, sealAudit, verifyAudit } from '@agentfs/core'
import { createFileSystem } from '@agentfs/fs'
import { ChangeLog } from '@agentfs/history'
import { createKvStore } from '@agentfs/kv'
import { createToolCalls } from '@agentfs/tool-calls'
import type { Scenario } from '../../harness.js'

const KEY = { key: new Uint8Array(32).fill(5) }

export const auditChain: Scenario = {
  id: 'audit/chain',
  description:
    'the audit chain: keyed seals of tool calls and changes, verify, a tampered row named, a trim anchor',
  async run({ db }) {
    const fs = createFileSystem(db, { feed: { sessionId: 'session-1' } })
    const kv = createKvStore(db, { feed: { sessionId: 'session-1' } })
    const tools = createToolCalls(db)
    const nowUs = () => micros(db.clock.now())
    await tools.track('write', { path: '/a.md' }, () => fs.writeFile('/a.md', 'alpha\n'))
    await fs.mkdir('/dir')
    await kv.set('k', { n: 1 })
    await tools.record({
      name: 'big',
      parameters: { text: 'é'.repeat(3), n: -(2 ** 40), x: 1.5 },
      result: null,
      startedAt: 1,
      completedAt: 2,
    })
    // A result over 64 KiB: kept whole in the payload store, named by the sealed row.
    const large = await tools.record({
      name: 'large',
      parameters: { q: 'x' },
      result: { text: 'p'.repeat(70_000) },
      startedAt: 3,
      completedAt: 4,
    })
    const sealed = await sealAudit(db, { key: KEY, nowUs: nowUs() })
    const clean = await verifyAudit(db, { keys: [KEY] })
    await db.execute({ sql: "UPDATE agentfs_change SET path = '/b.md' WHERE path = '/a.md'" })
    const tampered = await verifyAudit(db, { keys: [KEY] })
    await db.execute({ sql: "UPDATE agentfs_change SET path = '/a.md' WHERE path = '/b.md'" })
    const chunk = await db.execute<{ data: Uint8Array }>({
      sql: 'SELECT data FROM agentfs_payload_chunk WHERE chunk_index = 1',
    })
    await db.execute({
      sql: 'UPDATE agentfs_payload_chunk SET data = zeroblob(4) WHERE chunk_index = 1',
    })
    const payloadTampered = await verifyAudit(db, { keys: [KEY] })
    await db.execute({
      sql: 'UPDATE agentfs_payload_chunk SET data = ? WHERE chunk_index = 1',
      params: [chunk.rows[0]!.data],
    })
    const largeCall = await tools.get(large)
    await fs.writeFile('/c.md', 'gamma\n')
    await sealAudit(db, { key: KEY, nowUs: nowUs() })
    const trimmed = await new ChangeLog(db, { auditKey: KEY, clock: db.clock }).trim({ keep: 1 })
    const after = await verifyAudit(db, { keys: [KEY], expectHead: sealed.head })
    const summary = (r: typeof clean) => ({
      ok: r.ok,
      issues: r.issues.map((i) => [i.stream, i.seq, i.kind]),
      verified: r.verified,
      unsealed: r.unsealed,
      trimmedTo: r.trimmedTo,
    })
    return {
      sealed: sealed.sealed,
      head: sealed.head,
      clean: summary(clean),
      tampered: summary(tampered),
      payloadTampered: summary(payloadTampered),
      payloadMessage: payloadTampered.issues[0]?.message,
      large: {
        payloads: largeCall?.payloads,
        resultBytes: JSON.stringify(largeCall?.result).length,
        usage: await tools.usage(),
      },
      trimmed,
      after: summary(after),
      headAfter: after.head,
    }
  },
}
