import type { AgentFS } from '@agentfs/sdk'
import { expect, test } from 'vitest'
import { type AgentToolsOptions, createAgentTools } from '../src/index.js'
import { openTools } from './open-tools.js'

const setup = () => openTools()

test('create_file creates (parents by default), refuses an existing path, and parents: false is honoured', async () => {
  const { agent, run } = await setup()
  const made = await run('create_file', { path: '/a/b/c.txt', content: 'hi\n' })
  expect(made.isError, made.text).toBeFalsy()
  expect(made.text).toMatch(/^Created \/a\/b\/c\.txt \(3 bytes\)\. \[version: \d+\] \[sha256:/)
  expect(await agent.fs.readFile('/a/b/c.txt', 'utf8')).toBe('hi\n')
  const again = await run('create_file', { path: '/a/b/c.txt', content: 'other' })
  expect(again).toMatchObject({ isError: true, code: 'EEXIST' })
  expect(await agent.fs.readFile('/a/b/c.txt', 'utf8')).toBe('hi\n')
  expect(await run('create_file', { path: '/a/b' })).toMatchObject({ code: 'EEXIST' })
  const orphan = await run('create_file', { path: '/x/y.txt', parents: false })
  expect(orphan).toMatchObject({ isError: true, code: 'ENOENT' })
  expect(await agent.fs.exists('/x')).toBe(false)
  await run('create_file', { path: '/empty.txt' })
  expect(await agent.fs.readFile('/empty.txt', 'utf8')).toBe('')
})

test('create_file stores a media type that stat shows; stat derives one otherwise; a bad one is refused first', async () => {
  const { agent, run } = await setup()
  await run('create_file', { path: '/p/plan', content: 'x', mime_type: 'text/markdown' })
  const typed = await run('stat', { path: '/p/plan' })
  expect(typed.text).toContain('mime_type: text/markdown\n')
  expect(typed.data).toMatchObject({ mime_type: 'text/markdown', content_type: 'text' })
  await agent.fs.writeFile('/data.json', '{}')
  expect((await run('stat', { path: '/data.json' })).data).toMatchObject({
    mime_type: 'application/json (derived)',
  })
  const bad = await run('create_file', { path: '/q/r.txt', mime_type: 'not a type' })
  expect(bad).toMatchObject({ isError: true, code: 'INVALID_ARGUMENT' })
  expect(await agent.fs.exists('/q')).toBe(false)
})

test('exists answers with the type and never fails for a missing path', async () => {
  const { agent, run } = await setup()
  await agent.fs.mkdir('/d')
  await agent.fs.writeFile('/d/f', 'x')
  await agent.fs.symlink('/d/f', '/l')
  expect((await run('exists', { path: '/d' })).text).toBe('true (directory)')
  expect((await run('exists', { path: '/d/f' })).text).toBe('true (file)')
  expect((await run('exists', { path: '/l' })).text).toBe('true (symlink)')
  const missing = await run('exists', { path: '/d/f/under-a-file' })
  expect(missing).toMatchObject({ text: 'false', data: { exists: false } })
  expect(missing.isError).toBeFalsy()
})

test('append_file appends, creates a missing file, and refuses a directory', async () => {
  const { agent, run } = await setup()
  await run('append_file', { path: '/log/a.txt', content: 'one\n' })
  const second = await run('append_file', { path: '/log/a.txt', content: 'two\n' })
  expect(second.text).toMatch(/^Appended 4 bytes to \/log\/a\.txt \(now 8 bytes\)/)
  expect(await agent.fs.readFile('/log/a.txt', 'utf8')).toBe('one\ntwo\n')
  expect(await run('append_file', { path: '/log', content: 'x' })).toMatchObject({
    isError: true,
    code: 'EISDIR',
  })
})

test('rmdir removes only an empty directory; delete_file only files and links', async () => {
  const { agent, run } = await setup()
  await agent.fs.mkdir('/full/sub', { recursive: true })
  await agent.fs.writeFile('/full/f.txt', 'x')
  const full = await run('rmdir', { path: '/full' })
  expect(full).toMatchObject({ isError: true, code: 'ENOTEMPTY' })
  expect(full.text).toContain('2 entries')
  expect(await run('rmdir', { path: '/full/f.txt' })).toMatchObject({ code: 'ENOTDIR' })
  expect(await run('rmdir', { path: '/' })).toMatchObject({ code: 'EPERM' })
  expect((await run('rmdir', { path: '/full/sub' })).text).toBe('Removed the directory /full/sub.')
  expect(await agent.fs.exists('/full/sub')).toBe(false)
  expect(await run('delete_file', { path: '/full' })).toMatchObject({ code: 'EISDIR' })
  await agent.fs.symlink('/full/f.txt', '/link')
  await run('delete_file', { path: '/link' })
  expect(await agent.fs.exists('/full/f.txt')).toBe(true)
  await run('delete_file', { path: '/full/f.txt' })
  expect(await agent.fs.exists('/full/f.txt')).toBe(false)
  expect(await run('delete_file', { path: '/full/f.txt' })).toMatchObject({ code: 'ENOENT' })
})

test('the new mutating tools are refused in read-only mode', async () => {
  const { tools } = await openTools({ readOnly: true })
  for (const name of ['create_file', 'append_file', 'rmdir', 'delete_file', 'apply_patch'])
    expect(tools.has(name)).toBe(false)
  expect(tools.has('exists')).toBe(true)
})

test('a write the policy refuses makes nothing, not even the parent directories it would need', async () => {
  const { agent } = await setup()
  const { run } = openToolsOn(agent.fs.restrict({ maxFileSize: 4 }), agent.tools)
  for (const [tool, input] of [
    ['write_file', { path: '/w/deep/f.txt', content: 'too long for the policy' }],
    ['create_file', { path: '/c/deep/f.txt', content: 'too long for the policy' }],
    ['append_file', { path: '/a/deep/f.txt', content: 'too long for the policy' }],
  ] as const) {
    const refused = await run(tool, input)
    expect(refused, tool).toMatchObject({ isError: true, code: 'EFBIG' })
    expect(await agent.fs.exists(`/${input.path.split('/')[1]}`), tool).toBe(false)
  }
  // Allowed writes still make their parents.
  expect((await run('write_file', { path: '/ok/deep/f', content: 'ok' })).isError).toBeFalsy()
  expect(await agent.fs.readFile('/ok/deep/f', 'utf8')).toBe('ok')
  expect((await run('append_file', { path: '/ap/deep/f', content: 'ok' })).isError).toBeFalsy()
  expect((await run('create_file', { path: '/cr/deep/f', content: 'ok' })).isError).toBeFalsy()
})

/** The tools over `fs` (a restricted view of the agent's), audited in the agent's log. */
function openToolsOn(fs: AgentToolsOptions['fs'], audit: AgentFS['tools']) {
  const tools = createAgentTools({ fs, audit })
  return { run: (name: string, input: unknown) => tools.get(name)!.execute(input) }
}
