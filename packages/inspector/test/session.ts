import { AgentFS } from '@agentfs/sdk'

/** What `scriptedSession` made, for the tests to look for. */
export interface Session {
  readonly path: string
  /** Every call recorded, in order. */
  readonly calls: number
  readonly errors: number
  readonly parentId: number
}

/**
 * A scripted agent session on a database file: two sessions, calls that change files (kept as
 * versions), one that fails, a parent call with two children, kv entries, two snapshots, a
 * large file, a secret, and a file whose name is HTML.
 */
export async function scriptedSession(path: string): Promise<Session> {
  const agent = await AgentFS.open({ path, sessionId: 'alpha', versions: true })
  try {
    const { tools, fs, kv } = agent
    await fs.mkdir('/src', { recursive: true })
    await fs.mkdir('/secret')
    await fs.writeFile('/secret/key.txt', 'hunter2\n')
    await fs.writeFile('/big.txt', 'x'.repeat(1024 * 1024 + 10))
    await agent.snapshot('start')
    await tools.track('write_file', { path: '/src/app.ts' }, () =>
      fs.writeFile('/src/app.ts', 'const a = 1\nconst b = 2\nexport { a, b }\n'),
    )
    await tools.track('edit_file', { path: '/src/app.ts', old: 'b = 2', new: 'b = 3' }, () =>
      fs.writeFile('/src/app.ts', 'const a = 1\nconst b = 3\nexport { a, b }\n'),
    )
    await tools
      .track('read_file', { path: '/missing.md' }, () => fs.readFile('/missing.md', 'utf8'))
      .catch(() => undefined)
    await tools.track('kv_set', { key: 'memory:task' }, () =>
      kv.set('memory:task', { task: 'count to three', done: false }),
    )
    await tools.track(
      'write_file',
      { path: '/notes.md' },
      () => fs.writeFile('/notes.md', '# Notes\n\n- b is 3\n'),
      { sessionId: 'beta' },
    )
    await tools.track('plan', { steps: 2 }, async () => {
      await new Promise((r) => setTimeout(r, 5))
      return 'planned'
    })
    const [plan] = await tools.query({ name: 'plan', limit: 1 })
    const t = plan!.startedAt
    await tools.record({
      name: 'think',
      parameters: { step: 1 },
      result: 'ok',
      startedAt: t + 1,
      completedAt: t + 2,
      parentId: plan!.id,
      sessionId: 'alpha',
    })
    await tools.record({
      name: 'think',
      parameters: { step: 2 },
      error: new Error('step 2 failed: out of ideas'),
      startedAt: t + 2,
      completedAt: t + 4,
      parentId: plan!.id,
      sessionId: 'alpha',
    })
    await tools.track('write_file', { path: '/<img src=x onerror=alert(1)>.md' }, () =>
      fs.writeFile('/<img src=x onerror=alert(1)>.md', '<script>alert(1)</script>\n'),
    )
    await agent.snapshot('end')
    return { path, calls: 9, errors: 2, parentId: plan!.id }
  } finally {
    await agent.close()
  }
}
