import { fixedClock } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { mockToolCall as call, mockText as stop } from '@agentfs/test-kit'
import { Agent } from '@mastra/core/agent'
import { WORKSPACE_TOOLS, Workspace } from '@mastra/core/workspace'
import { MockLanguageModelV3 } from 'ai/test'
import { expect, test } from 'vitest'
import { AgentFSFilesystem } from '../src/index.js'

const { FILESYSTEM: T } = WORKSPACE_TOOLS

test('a Mastra agent works in a Workspace on AgentFS: it edits inside its root and cannot leave it', async () => {
  const agentfs = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  await agentfs.fs.writeFile('/secret.txt', 'the host key\n')
  await agentfs.fs.mkdir('/project')
  await agentfs.fs.writeFile('/project/notes.md', '# Notes\n- TODO: ship\n')
  await agentfs.fs.symlink('/secret.txt', '/project/leak')
  const model = new MockLanguageModelV3({
    doGenerate: [
      call('1', T.LIST_FILES, { path: '/' }),
      call('2', T.READ_FILE, { path: '/notes.md' }),
      call('3', T.EDIT_FILE, { path: '/notes.md', old_string: 'TODO', new_string: 'DONE' }),
      call('4', T.READ_FILE, { path: '/leak' }),
      call('5', T.WRITE_FILE, { path: '/../../secret.txt', content: 'overwritten' }),
      call('6', T.GREP, { pattern: 'host key', path: '/' }),
      stop('Shipping is done.'),
    ],
  })
  const workspace = new Workspace({
    filesystem: new AgentFSFilesystem({ fs: agentfs.fs, root: '/project' }),
  })
  await workspace.init()
  const agent = new Agent({
    id: 'editor',
    name: 'editor',
    instructions: 'Edit files carefully.',
    model,
    workspace,
  })
  const result = await agent.generate('Mark shipping as done', { maxSteps: 10 })
  expect(result.text).toBe('Shipping is done.')
  const prompts = model.doGenerateCalls.map((c) => JSON.stringify(c.prompt))
  expect(prompts[1]).toContain('notes.md')
  expect(prompts[2]).toContain('TODO: ship')
  expect(prompts[4]).toMatch(/Permission denied|outside the workspace/)
  // The edit landed in the database, in the agent's root; nothing outside it changed.
  expect(await agentfs.fs.readFile('/project/notes.md', 'utf8')).toBe('# Notes\n- DONE: ship\n')
  expect(await agentfs.fs.readFile('/secret.txt', 'utf8')).toBe('the host key\n')
  // The write that climbed above the root was refused as a traversal: nothing written anywhere.
  expect(prompts[5]).toMatch(/path traversal/)
  expect(await agentfs.fs.exists('/project/secret.txt')).toBe(false)
  expect(prompts[6]).not.toContain('the host key')
  // Every change is in the feed, attributed to its path.
  const { changes } = await agentfs.changes.since(0, { path: '/project', recursive: true })
  expect(changes.map((c) => [c.op, c.path])).toEqual([
    ['mkdir', '/project'],
    ['create', '/project/notes.md'],
    ['symlink', '/project/leak'],
    ['write', '/project/notes.md'],
  ])
  await agentfs.close()
}, 60_000)
