import { createAgentTools } from '@agentfs/agent-tools'
import { createFileSystem } from '@agentfs/fs'
import { AgentFS } from '@agentfs/sdk'
import { expect, test } from 'vitest'

test('a policy on AgentFS binds every agent tool: no tool reads, writes or deletes past it', async () => {
  const agent = await AgentFS.open({
    path: ':memory:',
    policy: {
      read: ['/', '/workspace/**'],
      write: ['/workspace/**'],
      protected: ['/workspace/MEMORY.md'],
      maxFileSize: 100,
    },
  })
  // The administrator's view: the same database without a policy.
  const admin = createFileSystem(agent.db)
  await admin.mkdir('/workspace', { recursive: true })
  await admin.mkdir('/secrets')
  await admin.writeFile('/secrets/token', 'sk-live')
  await admin.writeFile('/workspace/MEMORY.md', '# Memory\n')
  await admin.symlink('/secrets/token', '/workspace/token')

  const tools = createAgentTools({ fs: agent.fs, kv: agent.kv, audit: agent.tools })
  const call = async (name: string, input: unknown) => tools.get(name)!.execute(input)

  const read = await call('read_file', { path: '/secrets/token' })
  expect(read.isError).toBe(true)
  expect(read.text).toMatch(/EACCES|permission denied/i)
  expect((await call('read_file', { path: '/workspace/token' })).text).not.toContain('sk-live')
  expect((await call('grep', { pattern: 'sk-', path: '/' })).text).not.toContain('sk-live')
  expect((await call('write_file', { path: '/secrets/x', content: 'x' })).isError).toBe(true)
  expect((await call('delete', { path: '/workspace/MEMORY.md' })).isError).toBe(true)
  expect(
    (await call('move', { from: '/workspace/MEMORY.md', to: '/workspace/M.md' })).isError,
  ).toBe(true)
  expect(
    (await call('write_file', { path: '/workspace/big.txt', content: 'x'.repeat(101) })).isError,
  ).toBe(true)
  const ok = await call('write_file', { path: '/workspace/notes.md', content: 'fine' })
  expect(ok.isError ?? false).toBe(false)
  expect(await admin.readFile('/secrets/token', 'utf8')).toBe('sk-live')
  expect(await admin.readFile('/workspace/MEMORY.md', 'utf8')).toBe('# Memory\n')
  await agent.close()
})
