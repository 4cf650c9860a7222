import { createToolCalls } from '@agentfs/tool-calls'
import type { Scenario } from '../../harness.js'

export const toolCallLog: Scenario = {
  id: 'tool-calls/log',
  description: 'recorded, tracked and wrapped calls with sessions, nesting, errors and statistics',
  async run({ db }) {
    const tools = createToolCalls(db, { sessionId: 'session-1' })
    const parent = await tools.record({
      name: 'plan',
      parameters: { goal: 'summarise' },
      result: { steps: 2 },
      startedAt: { sec: 1_700_000_000, nsec: 100 },
      completedAt: { sec: 1_700_000_002, nsec: 500_000_100 },
      metadata: { tokens: 321 },
    })
    await tools.track('read_file', { path: '/a.md' }, async () => '# A', { parentId: parent })
    await tools
      .track(
        'read_file',
        { path: '/missing' },
        async () => {
          throw new Error('ENOENT: no such file or directory')
        },
        { parentId: parent },
      )
      .catch(() => undefined)
    const search = tools
      .withSession('session-2')
      .wrap('search', async (q: string) => [`${q} result`])
    await search('agentfs')
    return {
      timeline: (await tools.bySession('session-1')).map((c) => [
        c.name,
        c.status,
        c.parentId,
        c.durationMs,
      ]),
      stats: await tools.stats(),
      errors: (await tools.query({ errorsOnly: true })).map((c) => c.error),
    }
  },
}
