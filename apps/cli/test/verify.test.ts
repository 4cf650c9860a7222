import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { AgentFS } from '@agentfs/sdk'
import Database from 'better-sqlite3'
import { expect, test } from 'vitest'
import { runCli, useCliSandbox } from './helpers.js'

let cli: string
let cwd: string
useCliSandbox('agentfs-verify-', (sandbox) => {
  ;({ cli, cwd } = sandbox)
})

const run = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  runCli(cli, args, { cwd, env: { ...process.env, ...env } })
const ok = (args: string[], env: NodeJS.ProcessEnv = {}) => {
  const r = run(args, env)
  if (r.code !== 0)
    throw new Error(`agentfs ${args.join(' ')} failed (${r.code}): ${r.err}${r.out}`)
  return r.out
}

test('verify --seal --head, --expect-head, then a changed row is named', () => {
  ok(['init', 'v'])
  ok(['fs', 'write', 'v', '/a.md', 'one'])
  ok(['fs', 'write', 'v', '/b.md', 'two'])
  expect(ok(['verify', 'v'])).toBe(
    'verified 0 tool call(s) and 0 change(s); 0 tool call(s) and 2 change(s) not sealed yet (run with --seal)\n',
  )
  const head = ok(['verify', 'v', '--seal', '--head']).trim()
  expect(head).toMatch(/^agentfs-audit-v1 change:0:2:[0-9a-f]{64}$/)
  expect(ok(['verify', 'v', '--expect-head', head])).toBe(
    'verified 0 tool call(s) and 2 change(s)\n',
  )
  const db = new Database(join(cwd, '.agentfs', 'v.db'))
  db.exec("UPDATE agentfs_change SET path = '/innocent.md' WHERE seq = 1")
  db.close()
  const r = run(['verify', 'v'])
  expect(r.code).toBe(1)
  expect(r.out).toBe(
    'altered  change 1: the row or its seal differs from what was sealed (changed or reordered)\n' +
      '1 problem(s): the audit was altered after it was sealed; the first is change 1\n',
  )
})

test('with $AGENTFS_AUDIT_KEY_FILE every command seals with the key; verify needs it', () => {
  const keyFile = join(cwd, 'audit.key')
  writeFileSync(keyFile, `${'ab'.repeat(32)}\n`)
  const env = { AGENTFS_AUDIT_KEY_FILE: keyFile }
  ok(['init', 'k'], env)
  ok(['fs', 'write', 'k', '/a.md', 'one'], env)
  expect(ok(['verify', 'k'], env)).toBe('verified 0 tool call(s) and 1 change(s)\n')
  expect(ok(['verify', 'k', '--key-file', keyFile])).toBe(
    'verified 0 tool call(s) and 1 change(s)\n',
  )
  const without = run(['verify', 'k'])
  expect(without.code).toBe(1)
  expect(without.out).toMatch(
    /^altered {2}change 1: sealed with key '[0-9a-f]{16}', which was not given; pass that key to verify it$/m,
  )
  const missing = run(['verify', 'k', '--key-file', join(cwd, 'nope.key')])
  expect(missing.code).not.toBe(0)
  expect(missing.err.trim()).toBe(
    `agentfs: the key file ${join(cwd, 'nope.key')} cannot be read; create one with: openssl rand -hex 32 > ${join(cwd, 'nope.key')}`,
  )
})

test('payloads over 64 KiB: timeline --full prints them whole, payloads shows and sets the budget, verify names one altered', async () => {
  ok(['init', 'p'])
  const path = join(cwd, '.agentfs', 'p.db')
  const content = 'z'.repeat(200_000)
  const agent = await AgentFS.open({ path })
  await agent.tools.track('write_file', { path: '/big.md', content }, () => 'ok')
  await agent.close()
  expect(ok(['payloads', 'p'])).toBe('1 payload, 0.2 MiB of a budget of 1024.0 MiB\n')
  expect(ok(['payloads', 'p', '--budget', '100KiB'])).toBe(
    '1 payload, 0.2 MiB of a budget of 0.1 MiB: full, tool calls are refused (raise it with --budget)\n',
  )
  expect(JSON.parse(ok(['payloads', 'p', '--json', '--budget', 'unlimited']))).toEqual({
    used: 200_031,
    payloads: 1,
    budget: null,
  })
  expect(run(['payloads', 'p', '--budget', '2 GB']).err).toMatch(
    /--budget expects bytes \(e\.g\. 500MiB, 2GiB, 1048576\) or unlimited, got "2 GB"/,
  )
  const plain = ok(['timeline', 'p'])
  expect(plain).not.toContain('zzzz')
  const full = ok(['timeline', 'p', '--full'])
  expect(full).toContain(`  parameters: ${JSON.stringify({ path: '/big.md', content })}\n`)
  ok(['verify', 'p', '--seal'])
  const db = new Database(path)
  db.exec('UPDATE agentfs_payload_chunk SET data = zeroblob(10) WHERE chunk_index = 0')
  db.close()
  const r = run(['verify', 'p'])
  expect(r.code).toBe(1)
  expect(r.out).toMatch(
    /^altered {2}call 1: its parameters \(payload [0-9a-f]{16}…\): its bytes no longer hash to its name \(altered\)$/m,
  )
})

test("timeline --changes lists each call's changes one line per transaction; log --call shows them", async () => {
  ok(['init', 't'])
  const path = join(cwd, '.agentfs', 't.db')
  const agent = await AgentFS.open({ path })
  await agent.tools.track('multi_edit', { files: 2 }, async () => {
    await agent.transaction(async (tx) => {
      await tx.fs.writeFile('/a.md', 'A')
      await tx.fs.writeFile('/b.md', 'BB')
    })
    await agent.fs.mkdir('/c')
  })
  await agent.tools.track('read_file', { path: '/a.md' }, () => agent.fs.readFile('/a.md', 'utf8'))
  await agent.fs.writeFile('/outside.md', 'not a call')
  await agent.close()
  const lines = ok(['timeline', 't', '--changes']).trimEnd().split('\n')
  expect(lines).toHaveLength(4)
  expect(lines[0]).toMatch(/ #2 read_file success /)
  expect(lines[1]).toMatch(/ #1 multi_edit success /)
  expect(lines.slice(2)).toEqual([
    '  tx #1: create /a.md (1 B); create /b.md (2 B)',
    '  tx #3: mkdir /c (0 B)',
  ])
  const [, multi] = JSON.parse(ok(['timeline', 't', '--changes', '--json'])) as Array<{
    changes: Array<{ seq: number; txid: number }>
  }>
  expect(multi!.changes.map((c) => [c.seq, c.txid])).toEqual([
    [1, 1],
    [2, 1],
    [3, 3],
  ])
  expect(ok(['log', 't', '--call', '1']).trimEnd().split('\n')).toHaveLength(3)
  expect(ok(['log', 't', '--call', '2'])).toBe('')
})
