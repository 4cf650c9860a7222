import { fixedClock } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { pdf, png } from '@agentfs/test-kit'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { afterEach, expect, test } from 'vitest'
import { createMcpServer } from '../src/index.js'

const agents: AgentFS[] = []
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close()
})

async function connect() {
  const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  agents.push(agent)
  const server = createMcpServer({
    fs: agent.fs,
    kv: agent.kv,
    changes: agent.changes,
    audit: agent.tools,
    sessionId: 'mcp',
  })
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
  const client = new Client({ name: 'test-client', version: '1.0.0' })
  await Promise.all([client.connect(clientTransport), server.connect(serverTransport)])
  const call = async (name: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: args })
    const text = (result.content as Array<{ text: string }>)[0]!.text
    return { text, isError: result.isError === true }
  }
  return { agent, client, call }
}

test('an MCP client reads, edits, hits an ambiguous edit, recovers; calls are audited', async () => {
  const { agent, call } = await connect()
  await agent.fs.writeFile('/notes.md', '# Notes\n- TODO: write docs\n- TODO: ship\n')
  expect((await call('read_file', { path: '/notes.md' })).text).toContain(
    '     2\t- TODO: write docs',
  )
  const ambiguous = await call('edit_file', {
    path: '/notes.md',
    old_string: 'TODO',
    new_string: 'DONE',
  })
  expect(ambiguous.isError).toBe(true)
  expect(ambiguous.text).toMatch(/^Found 2 matches/)
  expect(
    (await call('edit_file', { path: '/notes.md', old_str: 'TODO: ship', new_str: 'DONE: ship' }))
      .isError,
  ).toBe(false)
  expect(await agent.fs.readFile('/notes.md', 'utf8')).toBe(
    '# Notes\n- TODO: write docs\n- DONE: ship\n',
  )
  expect((await agent.tools.bySession('mcp')).map((c) => [c.name, c.status])).toEqual([
    ['read_file', 'success'],
    ['edit_file', 'error'],
    ['edit_file', 'success'],
  ])
})

test('every advertised tool works over MCP, and files are resources', async () => {
  const { agent, client, call } = await connect()
  const { tools } = await client.listTools()
  expect(tools.map((t) => t.name).sort()).toEqual(
    [
      'append_file',
      'apply_patch',
      'copy',
      'create_file',
      'delete',
      'delete_file',
      'edit_file',
      'exists',
      'file_history',
      'glob',
      'grep',
      'hash',
      'kv_delete',
      'kv_get',
      'kv_list',
      'kv_set',
      'list_changes',
      'list_directory',
      'mkdir',
      'move',
      'multi_edit',
      'read_file',
      'restore_version',
      'rmdir',
      'search',
      'blame',
      'undelete',
      'stat',
      'write_file',
    ].sort(),
  )
  expect(tools.find((t) => t.name === 'read_file')?.inputSchema.properties).toHaveProperty('path')
  const script: Array<[string, Record<string, unknown>]> = [
    ['mkdir', { path: '/src' }],
    ['write_file', { path: '/src/a.ts', content: 'export const a = 1\n' }],
    ['read_file', { path: '/src/a.ts' }],
    ['edit_file', { path: '/src/a.ts', old_string: '1', new_string: '2' }],
    ['multi_edit', { path: '/src/a.ts', edits: [{ old_string: 'a =', new_string: 'b =' }] }],
    ['list_directory', { path: '/' }],
    ['glob', { pattern: '**/*.ts' }],
    ['grep', { pattern: 'export', output_mode: 'content' }],
    ['stat', { path: '/src/a.ts' }],
    ['hash', { path: '/src/a.ts', canonical: true }],
    ['copy', { from: '/src', to: '/copy' }],
    ['move', { from: '/copy/a.ts', to: '/copy/b.ts' }],
    ['delete', { path: '/copy', recursive: true }],
    ['create_file', { path: '/tmp/new.txt', content: 'one\n' }],
    ['exists', { path: '/tmp/new.txt' }],
    ['append_file', { path: '/tmp/new.txt', content: 'two\n' }],
    [
      'apply_patch',
      {
        patch:
          '*** Begin Patch\n*** Update File: /tmp/new.txt\n one\n-two\n+2\n*** Add File: /tmp/more.txt\n+x\n*** End Patch\n',
      },
    ],
    ['delete_file', { path: '/tmp/new.txt' }],
    ['delete_file', { path: '/tmp/more.txt' }],
    ['rmdir', { path: '/tmp' }],
    ['kv_set', { key: 'k', value: { n: 1 } }],
    ['kv_get', { key: 'k' }],
    ['kv_list', {}],
    ['kv_delete', { key: 'k' }],
    ['list_changes', { path: '/src' }],
    ['file_history', { path: '/src/a.ts' }],
  ]
  for (const [name, args] of script)
    expect((await call(name, args)).isError, `${name}: ${JSON.stringify(args)}`).toBe(false)
  const current = (await agent.fs.stat('/src/a.ts')).version
  expect((await call('restore_version', { path: '/src/a.ts', version: current })).isError).toBe(
    false,
  )
  expect(await agent.fs.readFile('/src/a.ts', 'utf8')).toBe('export const b = 2\n')
  const { resources } = await client.listResources()
  expect(resources.map((r) => r.uri)).toEqual(['agentfs:///src/a.ts'])
  const read = await client.readResource({ uri: 'agentfs:///src/a.ts' })
  expect((read.contents[0] as { text: string }).text).toBe('export const b = 2\n')
})

test('resources obey root and allowedRoots like the tools: nothing outside is listed or read', async () => {
  const agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
  agents.push(agent)
  await agent.fs.mkdir('/workspace', { recursive: true })
  await agent.fs.mkdir('/secret')
  await agent.fs.writeFile('/secret/key', 'sk-123')
  await agent.fs.writeFile('/workspace/ok.md', 'fine')
  await agent.fs.symlink('/secret/key', '/workspace/key-link')
  for (const options of [{ allowedRoots: ['/workspace'] }, { root: '/workspace' }]) {
    const server = createMcpServer({ fs: agent.fs, readOnly: true, ...options })
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
    const client = new Client({ name: 'test-client', version: '1.0.0' })
    await Promise.all([client.connect(clientTransport), server.connect(serverTransport)])
    const listed = (await client.listResources()).resources.map((r) => r.uri)
    expect(listed.join(' ')).not.toContain('secret')
    expect(listed.some((uri) => uri.endsWith('/ok.md'))).toBe(true)
    for (const uri of [
      'agentfs:///secret/key',
      'agentfs:///workspace/key-link',
      'agentfs:///key-link',
    ])
      await expect(client.readResource({ uri })).rejects.toThrow()
    const ok = options.root ? 'agentfs:///ok.md' : 'agentfs:///workspace/ok.md'
    expect(JSON.stringify((await client.readResource({ uri: ok })).contents)).toContain('fine')
    await client.close()
  }
})

test('a call the MCP SDK refuses for invalid input is recorded too', async () => {
  const { agent, client } = await connect()
  const result = await client.callTool({ name: 'read_file', arguments: { path: 42 } })
  expect(result.isError).toBe(true)
  const calls = await agent.tools.byName('read_file')
  expect(calls).toHaveLength(1)
  expect(calls[0]!.error).toMatch(/Input validation error/)
  expect(calls[0]!.parameters).toEqual({ path: 42 })
})

test('an MCP client retrying a keyed call gets the first answer; the key is in the tool schema', async () => {
  const { agent, client, call } = await connect()
  const { tools } = await client.listTools()
  const schema = (name: string) => tools.find((t) => t.name === name)?.inputSchema.properties
  expect(schema('edit_file')).toHaveProperty('idempotency_key')
  expect(schema('read_file')).not.toHaveProperty('idempotency_key')
  await agent.fs.writeFile('/n.md', 'count: 1\n')
  const edit = { path: '/n.md', old_string: 'count: 1', new_string: 'count: 1+1' }
  const first = await call('edit_file', { ...edit, idempotency_key: 'e-1' })
  // The answer was lost; the client retries the same request.
  const retry = await call('edit_file', { ...edit, idempotency_key: 'e-1' })
  expect(retry).toEqual(first)
  expect(await agent.fs.readFile('/n.md', 'utf8')).toBe('count: 1+1\n')
  const other = await call('edit_file', { ...edit, new_string: 'x', idempotency_key: 'e-1' })
  expect(other.isError).toBe(true)
  expect(other.text).toMatch(/new_string differ/)
})

test('read_file of an image answers with an image content part; of a PDF, with its text', async () => {
  const { agent, client } = await connect()
  const image = png(2, 3)
  await agent.fs.writeFile('/shot.png', image)
  await agent.fs.writeFile('/doc.pdf', pdf(['Invoice total']))
  const shot = await client.callTool({ name: 'read_file', arguments: { path: '/shot.png' } })
  expect(shot.content).toEqual([
    { type: 'text', text: expect.stringContaining('is an image (image/png') },
    { type: 'image', data: image.toString('base64'), mimeType: 'image/png' },
  ])
  const doc = await client.callTool({ name: 'read_file', arguments: { path: '/doc.pdf' } })
  expect((doc.content as Array<{ text: string }>)[0]!.text).toContain('Invoice total')
})
