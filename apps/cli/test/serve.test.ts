import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { expect, test } from 'vitest'
import { runCli, useCliSandbox } from './helpers.js'

let cli = ''
let cwd = ''
useCliSandbox('agentfs-serve-', (sandbox) => {
  cli = sandbox.cli
  cwd = sandbox.cwd
})

/** A real MCP client talking to `agentfs serve mcp …` over stdio. */
async function connect(args: string[]): Promise<Client> {
  const client = new Client({ name: 'cli-test', version: '1.0.0' })
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [cli, 'serve', 'mcp', ...args],
      cwd,
      stderr: 'pipe',
    }),
  )
  return client
}

const text = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text

test('serve mcp --bash: a bash tool on the same files, audited; read-only keeps it read-only', async () => {
  expect(runCli(cli, ['init', 'bash.db'], { cwd }).code).toBe(0)
  const client = await connect(['--bash', 'bash.db'])
  try {
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('bash')
    const out = await client.callTool({
      name: 'bash',
      arguments: { command: 'mkdir -p /src && printf "b\\na\\n" > /src/l && sort /src/l' },
    })
    expect(text(out)).toBe('a\nb\n[exit status 0]')
  } finally {
    await client.close()
  }
  expect(runCli(cli, ['fs', 'cat', 'bash.db', '/src/l'], { cwd }).out).toBe('b\na\n')
  expect(runCli(cli, ['timeline', 'bash.db'], { cwd }).out).toMatch(/ bash success/)
  const readOnly = await connect(['--bash', '--read-only', 'bash.db'])
  try {
    const refused = await readOnly.callTool({ name: 'bash', arguments: { command: 'rm /src/l' } })
    expect(refused.isError).toBe(true)
    expect(text(refused)).toMatch(/read-only/i)
    const listed = await readOnly.callTool({ name: 'bash', arguments: { command: 'ls /src' } })
    expect(text(listed)).toBe('l\n[exit status 0]')
  } finally {
    await readOnly.close()
  }
  expect(runCli(cli, ['fs', 'cat', 'bash.db', '/src/l'], { cwd }).out).toBe('b\na\n')
  const plain = await connect(['bash.db'])
  try {
    expect((await plain.listTools()).tools.map((t) => t.name)).not.toContain('bash')
  } finally {
    await plain.close()
  }
}, 60_000)
