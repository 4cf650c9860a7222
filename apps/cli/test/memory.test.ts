import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { AgentFS } from '@agentfs/sdk'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import Database from 'better-sqlite3'
import { describe, expect, test } from 'vitest'
import { fuseTests, runCli, useCliSandbox } from './helpers.js'

const fuse = fuseTests('FUSE --memory tests')

let cli = ''
let cwd = ''
useCliSandbox('agentfs-memory-', (sandbox) => {
  cli = sandbox.cli
  cwd = sandbox.cwd
})

const PROFILE = `---
id: p1
user_id: u1
---
# Inner critic

## Concerns
<!-- @anchor: concerns v1 -->
Worries about deadlines.

## Change Log
<!-- @anchor: change-log v1 -->
`
const PROFILE_PATH = '/users/u1/parts/p1/profile.md'

/** A database with u1's profile, and a key file for the events. */
async function garden(name: string): Promise<{ db: string; env: NodeJS.ProcessEnv }> {
  const db = join(cwd, name)
  // Sealed with the key the commands get (the file below holds it in hex).
  const agent = await AgentFS.open({ path: db, audit: { key: { key: Buffer.alloc(32, 0xab) } } })
  await agent.fs.mkdir('/users/u1/parts/p1', { recursive: true })
  await agent.fs.writeFile(PROFILE_PATH, PROFILE)
  await agent.close()
  const key = join(cwd, `${name}.key`)
  writeFileSync(key, 'ab'.repeat(32))
  return { db, env: { ...process.env, AGENTFS_AUDIT_KEY_FILE: key } as NodeJS.ProcessEnv }
}

const cat = (db: string, path: string) => runCli(cli, ['fs', 'cat', db, path], { cwd }).out
const text = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text

describe('agentfs serve mcp --memory', () => {
  test('a real MCP client: the memory tools update a section; generic tools are held to the hard blocks', async () => {
    const { db, env } = await garden('mcp.db')
    const client = new Client({ name: 'memory-test', version: '1.0.0' })
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [cli, 'serve', 'mcp', '--memory', '--user', 'u1', '--bash', db],
        cwd,
        env: env as Record<string, string>,
        stderr: 'pipe',
      }),
    )
    try {
      const names = (await client.listTools()).tools.map((t) => t.name)
      expect(names).toEqual(expect.arrayContaining(['md_patch_section', 'write_file', 'bash']))
      const patched = await client.callTool({
        name: 'md_patch_section',
        arguments: {
          path: PROFILE_PATH,
          section_anchor: 'concerns v1',
          replace: 'Fears missing out.',
          rationale: 'said so',
        },
      })
      expect(patched.isError).toBeFalsy()
      const refused = await client.callTool({
        name: 'write_file',
        arguments: { path: PROFILE_PATH, content: 'no anchors at all' },
      })
      expect(refused.isError).toBe(true)
      expect(text(refused)).toMatch(/anchor/)
      const shell = await client.callTool({
        name: 'bash',
        arguments: { command: `rm ${PROFILE_PATH}` },
      })
      expect(shell.isError).toBe(true)
      const events = await client.callTool({ name: 'events_query', arguments: {} })
      expect(text(events)).toMatch(/committed profile_update\/replace_section/)
    } finally {
      await client.close()
    }
    expect(cat(db, PROFILE_PATH)).toContain('Fears missing out.')
    expect(cat(db, PROFILE_PATH)).toContain('<!-- @anchor: concerns v1 -->')
    // agentfs verify checks the events' HMACs with the key; a changed event is named.
    const verified = runCli(cli, ['verify', db], { cwd, env })
    expect(verified.code, `${verified.out}${verified.err}`).toBe(0)
    expect(verified.out).toMatch(/verified 1 memory event\(s\)/)
    const raw = new Database(db)
    raw.prepare("UPDATE agentfs_memory_event SET rationale = 'rewritten'").run()
    raw.close()
    const altered = runCli(cli, ['verify', db], { cwd, env })
    expect(altered.code).toBe(1)
    expect(altered.out).toMatch(/altered {2}event .* was changed after it was written/)
    // Without the key the events are not proved, and it says so.
    const unkeyed = runCli(cli, ['verify', db], {
      cwd,
      env: { ...process.env, AGENTFS_AUDIT_KEY_FILE: '' },
    })
    expect(unkeyed.out).toMatch(/1 memory event\(s\) not verified: their HMACs need the key/)
  })

  test('--memory needs --user and a key', async () => {
    const { db } = await garden('bad.db')
    const noUser = runCli(cli, ['serve', 'mcp', '--memory', db], { cwd })
    expect(noUser.code).not.toBe(0)
    expect(noUser.err).toMatch(/--memory needs --user/)
    const noKey = runCli(cli, ['serve', 'mcp', '--memory', '--user', 'u1', db], {
      cwd,
      env: { ...process.env, AGENTFS_AUDIT_KEY_FILE: '' },
    })
    expect(noKey.code).not.toBe(0)
    expect(noKey.err).toMatch(/AGENTFS_AUDIT_KEY_FILE/)
  })
})

describe.skipIf(!fuse)('agentfs exec --memory (FUSE)', () => {
  test('real shell tools on the mount: overwrites, sed -i, rm and mv of a garden file fail and change nothing; appends to notes work', async () => {
    const { db } = await garden('fuse.db')
    const attempt = (script: string) =>
      runCli(cli, ['exec', '--memory', db, '--', 'sh', '-c', script], { cwd })
    for (const script of [
      'echo gone > users/u1/parts/p1/profile.md',
      "sed -i 's/<!-- @anchor: concerns v1 -->//' users/u1/parts/p1/profile.md",
      "sed -i 's/user_id: u1/user_id: u2/' users/u1/parts/p1/profile.md",
      'rm users/u1/parts/p1/profile.md',
      'mv users/u1/parts/p1/profile.md users/u1/moved.md',
      'echo x > users/u1/elsewhere.md',
    ]) {
      const out = attempt(script)
      expect(out.code, `${script}: ${out.err}`).not.toBe(0)
      expect(cat(db, PROFILE_PATH), script).toBe(PROFILE)
    }
    expect(attempt('echo "- a theme" >> users/u1/notes.md').code).toBe(0)
    expect(cat(db, '/users/u1/notes.md')).toBe('- a theme\n')
    // Without --memory the same overwrite goes through.
    expect(
      runCli(cli, ['exec', db, '--', 'sh', '-c', 'echo gone > users/u1/parts/p1/profile.md'], {
        cwd,
      }).code,
    ).toBe(0)
    expect(cat(db, PROFILE_PATH)).toBe('gone\n')
  })
})
