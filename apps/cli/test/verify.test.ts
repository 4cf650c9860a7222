import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
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
