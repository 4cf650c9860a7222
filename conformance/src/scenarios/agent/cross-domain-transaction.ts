import { createFileSystem } from '@agentfs/fs'
import { createKvStore } from '@agentfs/kv'
import { createToolCalls } from '@agentfs/tool-calls'
import type { Scenario } from '../../harness.js'

export const crossDomainTransaction: Scenario = {
  id: 'agent/cross-domain-transaction',
  description: 'file, key and tool-call writes commit together; a failed transaction leaves none',
  async run({ db }) {
    const fs = createFileSystem(db)
    const kv = createKvStore(db)
    const tools = createToolCalls(db)
    const step = (fail: boolean) =>
      db.transaction(async (q) => {
        await fs.bind(q).writeFile(fail ? '/failed.md' : '/report.md', 'report')
        await kv.bind(q).set(fail ? 'failed' : 'status', 'done')
        await tools
          .bind(q)
          .record({ name: 'report', result: fail ? 'no' : 'ok', startedAt: 0, completedAt: 5 })
        if (fail) throw new Error('abort')
      })
    await step(false)
    const failed = await step(true).then(
      () => 'committed',
      (error: Error) => error.message,
    )
    return {
      failed,
      files: await fs.readdir('/'),
      keys: await kv.keys(),
      calls: (await tools.query()).length,
    }
  },
}
