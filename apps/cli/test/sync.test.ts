import { type SyncServer, startSyncServer } from '@agentfs/turso-sync-server'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { runCli, useCliSandbox } from './helpers.js'

let cli: string
let cwd: string
useCliSandbox('agentfs-cli-sync-', (sandbox) => {
  ;({ cli, cwd } = sandbox)
})
let server: SyncServer
beforeAll(async () => {
  server = await startSyncServer({ maxSeconds: 300 })
})
afterAll(() => server.stop())

const agentfs = (...args: string[]) => runCli(cli, args, { cwd })

test('init --sync-url, then fs commands, sync push/pull/status/conflicts across two copies', () => {
  const a = agentfs('init', '--sync-url', server.url, 'a')
  expect(a.err).toBe('')
  expect(a.out).toMatch(/^created .*a\.db, synced with http:\/\/127\.0\.0\.1:\d+ \(slot \d+\)\n$/)
  expect(agentfs('fs', 'write', 'a', '/notes.md', 'from a').code).toBe(0)
  expect(agentfs('sync', 'push', 'a').out).toBe('pushed\n')
  expect(agentfs('init', '--sync-url', server.url, 'b').code).toBe(0)
  expect(agentfs('fs', 'cat', 'b', '/notes.md').out).toBe('from a')
  // Both write the same new name offline: b's becomes a conflict copy, and says so.
  agentfs('fs', 'write', 'a', '/same.md', 'a')
  agentfs('fs', 'write', 'b', '/same.md', 'b')
  agentfs('sync', 'push', 'a')
  const pulled = agentfs('sync', 'pull', 'b')
  expect(pulled.code).toBe(0)
  expect(pulled.out).toMatch(/^conflict \(name\) \/same\.md \(conflict \d+-\d+\): /)
  agentfs('sync', 'pull', 'a')
  expect(agentfs('fs', 'ls', 'a', '/').out.split('\n').filter(Boolean).sort()).toEqual(
    agentfs('fs', 'ls', 'b', '/').out.split('\n').filter(Boolean).sort(),
  )
  const status = JSON.parse(agentfs('sync', 'status', '--json', 'b').out)
  expect(status).toMatchObject({ url: server.url, background: false })
  expect(status.lastPullMs).toBeGreaterThan(0)
  expect(agentfs('sync', 'conflicts', 'a').out).toContain('conflict (name) /same.md (conflict ')
})

test('sync commands on a database that does not sync say how to make one', () => {
  agentfs('init', 'plain.db')
  const result = agentfs('sync', 'push', 'plain.db')
  expect(result.code).not.toBe(0)
  expect(result.err).toContain(
    'does not sync; create a synced copy with "agentfs init --sync-url URL',
  )
})

test('a token no HTTP header can carry (the docs placeholder, a stray newline) is refused by name', () => {
  const placeholder = runCli(cli, ['init', '--sync-url', server.url, 'p'], {
    cwd,
    env: { ...process.env, AGENTFS_SYNC_TOKEN: '…' },
  })
  expect(placeholder.code).toBe(1)
  expect(placeholder.err).toBe(
    'agentfs: $AGENTFS_SYNC_TOKEN is not a usable token: it has "…" at 0, and a token is printable ASCII without spaces; set it to the token your sync server issued\n',
  )
  const flag = agentfs('init', '--sync-url', server.url, '--token', 'abc\n', 'q')
  expect(flag.err).toMatch(/^agentfs: --token is not a usable token: it has "\\n" at 3,/)
})
