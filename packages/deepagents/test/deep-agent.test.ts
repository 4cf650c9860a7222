import { fixedClock } from '@agentfs/core'
import { agentFsSandbox } from '@agentfs/just-bash'
import { AgentFS } from '@agentfs/sdk'
import { createDeepAgent } from 'deepagents'
import { FakeToolCallingModel } from 'langchain'
import { afterEach, beforeEach, expect, test } from 'vitest'
import { AgentFSBackend } from '../src/index.js'

let agentfs: AgentFS
beforeEach(async () => {
  agentfs = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  await agentfs.fs.writeFile('/secret.txt', 'the host key\n')
  await agentfs.fs.mkdir('/project')
  await agentfs.fs.writeFile('/project/notes.md', '# Notes\n- TODO: ship\n')
  await agentfs.fs.symlink('/secret.txt', '/project/leak')
})
afterEach(async () => {
  await agentfs.close()
})

type Call = { name: string; args: Record<string, unknown> }

/** A real createDeepAgent loop on a scripted chat model; returns what each tool answered. */
async function runAgent(backend: AgentFSBackend, calls: Call[]): Promise<string[]> {
  const model = new FakeToolCallingModel({
    toolCalls: [...calls.map((c, i) => [{ ...c, id: `call-${i}` }]), []],
  })
  const agent = createDeepAgent({ model, backend })
  const result = await agent.invoke({ messages: [{ role: 'user', content: 'Ship it.' }] })
  return result.messages
    .filter((m) => m.getType() === 'tool')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
}

test('a deep agent lists, reads, edits, writes, globs and greps in the database', async () => {
  const backend = new AgentFSBackend({
    fs: agentfs.fs,
    root: '/project',
    audit: agentfs.tools,
    sessionId: 'deep',
  })
  const answers = await runAgent(backend, [
    { name: 'ls', args: { path: '/' } },
    { name: 'read_file', args: { file_path: '/notes.md' } },
    {
      name: 'edit_file',
      args: { file_path: '/notes.md', old_string: 'TODO', new_string: 'DONE' },
    },
    { name: 'write_file', args: { file_path: '/src/app.ts', content: 'export const ok = 1\n' } },
    { name: 'glob', args: { pattern: '**/*.ts' } },
    { name: 'grep', args: { pattern: 'DONE', output_mode: 'content' } },
  ])
  // The link to /secret.txt leads outside the root: not listed.
  expect(answers[0]).toBe('/notes.md (21 bytes)')
  expect(answers[1]).toContain('@@ lines 1-2 of 2 @@\\n# Notes\\n- TODO: ship')
  expect(answers[2]).toBe("Successfully replaced 1 occurrence(s) in '/notes.md'")
  expect(answers[3]).toBe("Successfully wrote to '/src/app.ts'")
  expect(answers[4]).toBe('/src/app.ts')
  expect(answers[5]).toBe('/notes.md:\n  2: - DONE: ship')
  expect(await agentfs.fs.readFile('/project/notes.md', 'utf8')).toBe('# Notes\n- DONE: ship\n')
  expect(await agentfs.fs.readFile('/project/src/app.ts', 'utf8')).toBe('export const ok = 1\n')
  const calls = await agentfs.tools.bySession('deep')
  expect(calls.map((c) => [c.name, c.status])).toEqual([
    ['ls', 'success'],
    ['read', 'success'],
    ['edit', 'success'],
    ['write', 'success'],
    ['glob', 'success'],
    ['grep', 'success'],
  ])
  // The edit and the write are attributed to their calls in the change feed.
  const { changes } = await agentfs.changes.since(0, { path: '/project', recursive: true })
  const edit = calls.find((c) => c.name === 'edit')!
  expect(changes.find((c) => c.op === 'write' && c.path === '/project/notes.md')?.toolCallId).toBe(
    edit.id,
  )
}, 60_000)

test('a deep agent cannot leave its root: links, .. and absolute paths are refused', async () => {
  const backend = new AgentFSBackend({ fs: agentfs.fs, root: '/project' })
  const answers = await runAgent(backend, [
    { name: 'read_file', args: { file_path: '/leak' } },
    { name: 'read_file', args: { file_path: '/../secret.txt' } },
    { name: 'write_file', args: { file_path: '/leak', content: 'pwned' } },
    { name: 'edit_file', args: { file_path: '/leak', old_string: 'key', new_string: 'pwned' } },
    { name: 'grep', args: { pattern: 'host key', output_mode: 'content' } },
    { name: 'glob', args: { pattern: '**/*' } },
    { name: 'ls', args: { path: '/' } },
  ])
  for (const answer of answers) expect(answer).not.toContain('the host key')
  expect(answers[0]).toMatch(/outside the allowed|not found/)
  expect(answers[2]).toMatch(/outside the allowed/)
  expect(answers[3]).toMatch(/outside the allowed/)
  expect(answers[5]).not.toContain('leak')
  expect(answers[6]).not.toContain('leak')
  expect(await agentfs.fs.readFile('/secret.txt', 'utf8')).toBe('the host key\n')
  expect(await agentfs.fs.readdir('/project')).toEqual(['leak', 'notes.md'])
}, 60_000)

test('read-only: the agent reads, and every change comes back refused', async () => {
  const backend = new AgentFSBackend({ fs: agentfs.fs, root: '/project', readOnly: true })
  const answers = await runAgent(backend, [
    { name: 'read_file', args: { file_path: '/notes.md' } },
    { name: 'write_file', args: { file_path: '/new.md', content: 'x' } },
    { name: 'edit_file', args: { file_path: '/notes.md', old_string: 'TODO', new_string: 'X' } },
  ])
  expect(answers[0]).toContain('TODO: ship')
  expect(answers[1]).toMatch(/read-only/)
  expect(answers[2]).toMatch(/read-only/)
  expect(await agentfs.fs.readdir('/project')).toEqual(['leak', 'notes.md'])
  expect(await agentfs.fs.readFile('/project/notes.md', 'utf8')).toBe('# Notes\n- TODO: ship\n')
}, 60_000)

test('with a just-bash shell the backend is a sandbox: the agent runs commands on the database', async () => {
  const sandbox = agentFsSandbox({ fs: agentfs.fs, root: '/project' })
  const backend = new AgentFSBackend({
    fs: agentfs.fs,
    root: '/project',
    execute: (command) => sandbox.executeCommand(command),
  })
  const answers = await runAgent(backend, [
    { name: 'execute', args: { command: 'grep -c TODO notes.md; cat /leak; cat ../secret.txt' } },
  ])
  expect(answers[0]).toContain('1\n')
  expect(answers[0]).not.toContain('the host key')
}, 60_000)
