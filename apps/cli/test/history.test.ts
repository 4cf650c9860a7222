import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { expect, test } from 'vitest'
import { runCli, useCliSandbox } from './helpers.js'

let cli: string
let cwd: string
useCliSandbox('agentfs-history-', (sandbox) => {
  ;({ cli, cwd } = sandbox)
})

const ok = (...args: string[]) => {
  const r = runCli(cli, args, { cwd })
  if (r.code !== 0) throw new Error(`agentfs ${args.join(' ')} failed (${r.code}): ${r.err}`)
  return r.out
}

test('log, history, snapshot, snapshots, diff --from, restore', () => {
  ok('init', 'h')
  ok('fs', 'write', 'h', '/a.md', 'one')
  ok('snapshot', 'h', 'v1', '--reason', 'first')
  ok('fs', 'write', 'h', '/a.md', 'two')
  ok('fs', 'write', 'h', '/b.md', 'bee')
  ok('kv', 'set', 'h', 'k', '1')
  // A write that creates its parents is one transaction: each of its lines names it, and --tx
  // shows it alone.
  ok('fs', 'write', 'h', '/deep/er/c.md', 'sea')
  const deep = ok('log', 'h').trim().split('\n').slice(4)
  expect(deep.map((l) => l.split(' ').slice(2, 4).join(' '))).toEqual([
    'mkdir /deep',
    'mkdir /deep/er',
    'create /deep/er/c.md',
  ])
  const txid = /\[tx #(\d+)\]/.exec(deep[0]!)?.[1]
  expect(deep.every((l) => l.includes(`[tx #${txid}]`))).toBe(true)
  expect(ok('log', 'h', '--tx', txid!).trim().split('\n')).toEqual(deep)
  ok('fs', 'rm', 'h', '-r', '/deep')
  // Changes made alone name no transaction.
  const log = ok('log', 'h').trim().split('\n').slice(0, 4)
  expect(log.some((l) => l.includes('tx #'))).toBe(false)
  expect(log.map((l) => l.split(' ').slice(2, 4).join(' '))).toEqual([
    'create /a.md',
    'write /a.md',
    'create /b.md',
    'kv-set k',
  ])
  // Content changes show the start of the file's hash after them; --json has it whole.
  const sha = (text: string) => createHash('sha256').update(text).digest('hex')
  expect(log[1]).toContain(` (3 B) sha256:${sha('two').slice(0, 16)}`)
  const json = JSON.parse(ok('log', 'h', '/a.md', '--json')) as {
    op: string
    hash: string
    prevHash: string | null
  }[]
  expect(json.map((c) => [c.op, c.hash, c.prevHash])).toEqual([
    ['create', `sha256:${sha('one')}`, null],
    ['write', `sha256:${sha('two')}`, `sha256:${sha('one')}`],
  ])
  expect(ok('log', 'h', '--limit', '1').trim().split('\n')).toHaveLength(1)
  expect(ok('history', 'h', '/a.md')).toMatch(/write \/a.md 3 B version \d+ \(readable\)/)
  expect(ok('snapshots', 'h')).toMatch(/^v1 {2}\S+ {2}manual {2}first$/m)
  const diff = ok('diff', 'h', '--from', 'v1')
  expect(diff).toMatch(/^M \/a.md$/m)
  expect(diff).toMatch(/^A \/b.md$/m)
  expect(diff).toMatch(/^-one$/m)
  expect(diff).toMatch(/^A kv:k$/m)
  const restored = ok('restore', 'h', 'v1')
  expect(ok('fs', 'cat', 'h', '/a.md')).toBe('one')
  expect(runCli(cli, ['fs', 'cat', 'h', '/b.md'], { cwd }).code).not.toBe(0)
  // The printed undo works.
  const undo = /agentfs restore h (\S+)/.exec(restored)![1]!
  ok('restore', 'h', undo)
  expect(ok('fs', 'cat', 'h', '/b.md')).toBe('bee')
  ok('snapshots', 'h', '--delete', 'v1')
  expect(ok('snapshots', 'h')).not.toMatch(/^v1 /m)
  const missing = runCli(cli, ['restore', 'h', 'v1'], { cwd })
  expect(missing.code).not.toBe(0)
  expect(missing.err).toMatch(/no snapshot named 'v1'/)
})

test('undo after an overlay commit restores the host files and brings the session changes back', () => {
  writeFileSync(join(cwd, 'base.txt'), 'base\n')
  writeFileSync(join(cwd, 'gone.txt'), 'kept by undo\n')
  ok('init', 's.db', '--base', '.')
  expect(runCli(cli, ['undo', 's.db'], { cwd }).err).toMatch(/nothing to undo/)
  ok('fs', 'write', 's.db', '/new.txt', 'from the session')
  ok('fs', 'write', 's.db', '/base.txt', 'edited by the session')
  ok('fs', 'write', 's.db', '/dir/deep.txt', 'deep')
  ok('fs', 'rm', 's.db', '/gone.txt')
  ok('commit', 's.db')
  expect(readFileSync(join(cwd, 'new.txt'), 'utf8')).toBe('from the session')
  expect(readFileSync(join(cwd, 'base.txt'), 'utf8')).toBe('edited by the session')
  expect(existsSync(join(cwd, 'gone.txt'))).toBe(false)
  expect(ok('diff', 's.db')).toMatch(/no changes/)
  expect(ok('undo', 's.db')).toMatch(/undid before commit: 5 host path\(s\) are as before it/)
  // The host is as it was before the commit...
  expect(existsSync(join(cwd, 'new.txt'))).toBe(false)
  expect(existsSync(join(cwd, 'dir'))).toBe(false)
  expect(readFileSync(join(cwd, 'base.txt'), 'utf8')).toBe('base\n')
  expect(readFileSync(join(cwd, 'gone.txt'), 'utf8')).toBe('kept by undo\n')
  // ...and the session holds the changes again, ready to be committed again.
  expect(ok('fs', 'cat', 's.db', '/new.txt')).toBe('from the session')
  const diff = ok('diff', 's.db')
  expect(diff).toMatch(/^M \/base.txt$/m)
  expect(diff).toMatch(/^D \/gone.txt$/m)
  expect(runCli(cli, ['undo', 's.db'], { cwd }).err).toMatch(/nothing to undo/)
  expect(ok('commit', 's.db')).toMatch(/applied 5 change\(s\)/)
  expect(readFileSync(join(cwd, 'base.txt'), 'utf8')).toBe('edited by the session')

  // The host changes after the commit: undo refuses, names the paths and changes nothing.
  writeFileSync(join(cwd, 'base.txt'), 'edited by hand after the commit')
  writeFileSync(join(cwd, 'dir', 'mine.txt'), 'mine')
  const refused = runCli(cli, ['undo', 's.db'], { cwd })
  expect(refused.code).not.toBe(0)
  expect(refused.err).toMatch(/\/base.txt: changed since the commit/)
  expect(refused.err).toMatch(/\/dir\/mine.txt: created since the commit/)
  expect(refused.err.trim().split('\n')).toHaveLength(1)
  expect(readFileSync(join(cwd, 'base.txt'), 'utf8')).toBe('edited by hand after the commit')
  expect(readFileSync(join(cwd, 'new.txt'), 'utf8')).toBe('from the session')
  expect(ok('diff', 's.db')).toMatch(/no changes/)
})

test('branch: a database over a snapshot; diff, commit onto the live database, undo; conflicts refuse', () => {
  ok('init', 'live')
  ok('fs', 'write', 'live', '/doc.md', 'v1')
  ok('fs', 'write', 'live', '/other.md', 'other')
  ok('snapshot', 'live', 'base')
  ok('branch', 'live', 'base', 'br.db')
  expect(runCli(cli, ['branch', 'live', 'base', 'br.db'], { cwd }).err).toMatch(/exists/)
  expect(runCli(cli, ['branch', 'live', 'nope', 'x.db'], { cwd }).err).toMatch(
    /no snapshot named 'nope'/,
  )
  ok('fs', 'write', 'br.db', '/doc.md', 'v2')
  ok('fs', 'write', 'br.db', '/new.md', 'new')
  expect(ok('fs', 'cat', 'live', '/doc.md')).toBe('v1')
  const diff = ok('diff', 'br.db')
  expect(diff).toMatch(/^M \/doc.md$/m)
  expect(diff).toMatch(/^A \/new.md$/m)
  expect(ok('commit', 'br.db')).toMatch(/applied 2 change\(s\)/)
  expect(ok('fs', 'cat', 'live', '/doc.md')).toBe('v2')
  expect(ok('fs', 'cat', 'live', '/new.md')).toBe('new')
  expect(ok('log', 'live', '--limit', '1')).toMatch(/commit \/ -> base/)
  ok('undo', 'live')
  expect(ok('fs', 'cat', 'live', '/doc.md')).toBe('v1')

  // The live file changes after the snapshot: the branch's commit refuses and applies nothing.
  ok('branch', 'live', 'base', 'br2.db')
  ok('fs', 'write', 'br2.db', '/other.md', 'from the branch')
  ok('fs', 'write', 'live', '/other.md', 'changed live')
  const refused = runCli(cli, ['commit', 'br2.db'], { cwd })
  expect(refused.code).not.toBe(0)
  expect(refused.err).toMatch(/other.md: changed in the base/)
  expect(ok('fs', 'cat', 'live', '/other.md')).toBe('changed live')
  expect(ok('fs', 'cat', 'br2.db', '/other.md')).toBe('from the branch')

  // --merge: edits of different lines both land; the same lines changed are listed, nothing applied.
  ok('fs', 'write', 'live', '/m.txt', 'one\ntwo\nthree\n')
  ok('snapshot', 'live', 'm')
  ok('branch', 'live', 'm', 'br3.db')
  ok('fs', 'write', 'br3.db', '/m.txt', 'ONE\ntwo\nthree\n')
  ok('fs', 'write', 'live', '/m.txt', 'one\ntwo\nTHREE\n')
  expect(ok('commit', '--merge', 'br3.db')).toMatch(
    /applied 1 change\(s\) to .* \(merged: \/m.txt\)/,
  )
  expect(ok('fs', 'cat', 'live', '/m.txt')).toBe('ONE\ntwo\nTHREE\n')
  expect(ok('log', 'live', '--limit', '1')).toMatch(
    /commit \/ -> m .*"merge of a branch of m onto change #\d+: \/m.txt"/,
  )
  ok('branch', 'live', 'm', 'br4.db')
  ok('fs', 'write', 'br4.db', '/m.txt', 'one\nTWO (branch)\nthree\n')
  ok('fs', 'write', 'live', '/m.txt', 'one\nTWO (live)\nthree\n')
  const conflict = runCli(cli, ['commit', '--merge', 'br4.db'], { cwd })
  expect(conflict.code).not.toBe(0)
  expect(conflict.out).toBe(
    'conflict /m.txt: branch line 2, snapshot line 2, live line 2\nto resolve: write the merged text into br4.db (agentfs fs write br4.db /m.txt …), run "agentfs resolve br4.db /m.txt", then commit again\n',
  )
  expect(conflict.err).toMatch(
    /^agentfs: 1 file\(s\) could not be merged \(\/m.txt: 1 conflicting region\(s\)\); nothing was committed/,
  )
  expect(ok('fs', 'cat', 'live', '/m.txt')).toBe('one\nTWO (live)\nthree\n')
  // Resolved as the hint says: against the live version, then applied.
  ok('fs', 'write', 'br4.db', '/m.txt', 'one\nTWO (both)\nthree\n')
  ok('resolve', 'br4.db', '/m.txt')
  ok('commit', '--merge', 'br4.db')
  expect(ok('fs', 'cat', 'live', '/m.txt')).toBe('one\nTWO (both)\nthree\n')
})

test('an overlay of a host directory: commit --merge, undo, commit again; a conflict is resolved and applied', () => {
  writeFileSync(join(cwd, 'plan.md'), 'one\ntwo\nthree\n')
  ok('init', 'm.db', '--base', '.')
  ok('fs', 'write', 'm.db', '/plan.md', 'ONE (session)\ntwo\nthree\n')
  writeFileSync(join(cwd, 'plan.md'), 'one\ntwo\nTHREE (host)\n')
  expect(runCli(cli, ['commit', 'm.db'], { cwd }).err).toMatch(/plan.md: changed in the base/)
  expect(ok('commit', '--merge', 'm.db')).toMatch(/applied 1 change\(s\) \(merged: \/plan.md\)/)
  expect(readFileSync(join(cwd, 'plan.md'), 'utf8')).toBe('ONE (session)\ntwo\nTHREE (host)\n')
  // Undo: the host's own version is back, the session has its edit and its ancestor again.
  ok('undo', 'm.db')
  expect(readFileSync(join(cwd, 'plan.md'), 'utf8')).toBe('one\ntwo\nTHREE (host)\n')
  // The host's change is still seen as one: a plain commit refuses, a merge merges again.
  expect(runCli(cli, ['commit', 'm.db'], { cwd }).err).toMatch(/plan.md: changed in the base/)
  expect(ok('commit', '--merge', 'm.db')).toMatch(/\(merged: \/plan.md\)/)
  expect(readFileSync(join(cwd, 'plan.md'), 'utf8')).toBe('ONE (session)\ntwo\nTHREE (host)\n')

  // The same line on both sides: listed, nothing applied; resolved, then applied.
  ok('fs', 'write', 'm.db', '/plan.md', 'ONE (session)\nTWO (session)\nTHREE (host)\n')
  writeFileSync(join(cwd, 'plan.md'), 'ONE (session)\nTWO (host)\nTHREE (host)\n')
  const conflict = runCli(cli, ['commit', '--merge', 'm.db'], { cwd })
  expect(conflict.code).not.toBe(0)
  expect(conflict.out).toMatch(
    /^conflict \/plan.md: overlay line 2, ancestor line 2, host line 2$/m,
  )
  expect(conflict.out).toMatch(/run "agentfs resolve m.db \/plan.md", then commit again/)
  expect(readFileSync(join(cwd, 'plan.md'), 'utf8')).toBe(
    'ONE (session)\nTWO (host)\nTHREE (host)\n',
  )
  ok('fs', 'write', 'm.db', '/plan.md', 'ONE (session)\nTWO (both)\nTHREE (host)\n')
  expect(ok('resolve', 'm.db', '/plan.md')).toMatch(/resolved \/plan.md/)
  ok('commit', '--merge', 'm.db')
  expect(readFileSync(join(cwd, 'plan.md'), 'utf8')).toBe(
    'ONE (session)\nTWO (both)\nTHREE (host)\n',
  )
})

test("versions: the setting lives in the database, so the CLI's own writes keep versions and blame names them", () => {
  ok('init', 'v.db')
  expect(ok('versions', 'v.db')).toMatch(/^versions: not set/)
  ok('fs', 'write', 'v.db', '/a.txt', 'zero\n')
  ok('fs', 'write', 'v.db', '/a.txt', 'zero\none\n')
  // Versions off: what the file held before its last write is not known to blame.
  const before = runCli(cli, ['blame', 'v.db', '/a.txt'], { cwd })
  expect(before.err).toMatch(/2 of 2 lines have no known change .*"agentfs versions .*v.db on"/)
  expect(ok('versions', 'v.db', 'on', '--max-count', '50')).toBe(
    'versions: on (50 per file, 30 days, 256 MiB in all, files up to 8 MiB)\n',
  )
  ok('fs', 'write', 'v.db', '/a.txt', 'zero\none\ntwo\n', '-m', 'second line')
  ok('fs', 'write', 'v.db', '/a.txt', 'zero\none\ntwo\nthree\n', '-m', 'third line')
  ok('fs', 'write', 'v.db', '/a.txt', 'zero\none\ntwo\nthree\nfour\n', '-m', 'fourth line')
  const blame = JSON.parse(ok('blame', 'v.db', '/a.txt', '--json')) as {
    lines: { text: string; change: { message?: string } | null }[]
  }
  expect(blame.lines.map((l) => [l.text, l.change?.message ?? null])).toEqual([
    ['zero', null],
    ['one', null],
    // Kept from its write on, but what the file held before that write was not.
    ['two', null],
    ['three', 'third line'],
    ['four', 'fourth line'],
  ])
  expect(ok('versions', 'v.db', 'off')).toBe('versions: off\n')
  expect(runCli(cli, ['versions', 'v.db', 'maybe'], { cwd }).err).toMatch(/on or off, not "maybe"/)
  expect(runCli(cli, ['versions', 'v.db', '--max-count', '3'], { cwd }).err).toMatch(/go with "on"/)
})

test('a process killed mid-call leaves it pending: timeline shows it, reconcile records it failed, its change stays attributed to it', async () => {
  const db = join(cwd, 'crash.db')
  ok('init', db)
  // The child sits in this package, so it resolves @agentfs/sdk as the CLI does (built).
  const cache = join(import.meta.dirname, '..', 'node_modules', '.cache')
  mkdirSync(cache, { recursive: true })
  const script = join(mkdtempSync(join(cache, 'crash-child-')), 'child.mjs')
  writeFileSync(
    script,
    `import { AgentFS } from '@agentfs/sdk'
const agent = await AgentFS.open({ path: ${JSON.stringify(db)}, sessionId: 'deployer' })
await agent.tools.track('deploy', { target: 'prod' }, async () => {
  await agent.fs.writeFile('/deployed.txt', 'v1')
  process.kill(process.pid, 'SIGKILL')
})
`,
  )
  const child = spawnSync(process.execPath, [script], { cwd: join(import.meta.dirname, '..') })
  rmSync(dirname(script), { recursive: true, force: true })
  expect(child.signal).toBe('SIGKILL')
  const before = ok('timeline', db)
  expect(before).toMatch(
    / deploy pending for [\d.]+s, started by [^ ]+:\d+ \(abandoned if that process is gone: agentfs reconcile\)/,
  )
  expect(JSON.parse(ok('timeline', db, '--json'))).toMatchObject([
    { name: 'deploy', status: 'pending', parameters: { target: 'prod' }, sessionId: 'deployer' },
  ])
  // Too recent to call abandoned; then taken as abandoned.
  expect(ok('reconcile', db, '--older-than', '3600000')).toBe('no abandoned tool calls\n')
  expect(ok('reconcile', db, '--older-than', '0')).toMatch(
    /^recorded 1 abandoned tool call as failed: #\d+\n$/,
  )
  const [call] = JSON.parse(ok('timeline', db, '--json')) as Array<{
    id: number
    status: string
    error: string
    parameters: unknown
  }>
  expect(call).toMatchObject({ status: 'error', parameters: { target: 'prod' } })
  expect(call!.error).toMatch(/^abandoned: started by /)
  // The write the call made before it died names the call.
  const changes = JSON.parse(ok('log', db, '/deployed.txt', '--json')) as Array<{
    toolCallId: number | null
  }>
  expect(changes.map((c) => c.toolCallId)).toEqual([call!.id])
  expect(runCli(cli, ['reconcile', db, '--older-than', '-1'], { cwd }).err).toMatch(
    /--older-than expects a number ≥ 0/,
  )
})
