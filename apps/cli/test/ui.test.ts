import { spawn } from 'node:child_process'
import { expect, test } from 'vitest'
import { runCli, useCliSandbox } from './helpers.js'

let cli = ''
let cwd = ''
useCliSandbox('agentfs-ui-', (sandbox) => {
  cli = sandbox.cli
  cwd = sandbox.cwd
})

test('agentfs ui: prints a URL with a token, serves the inspector read-only, stops on Ctrl-C', async () => {
  expect(runCli(cli, ['init', 'ui.db'], { cwd }).code).toBe(0)
  expect(runCli(cli, ['fs', 'write', 'ui.db', '/a.md', 'hello'], { cwd }).code).toBe(0)
  const child = spawn(process.execPath, [cli, 'ui', 'ui.db'], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  let out = ''
  let err = ''
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString()
  })
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString()
      const m = out.match(/http:\/\/127\.0\.0\.1:\d+\/\?token=\S+/)
      if (m) resolve(m[0])
    })
    void exited.then((code) => reject(new Error(`agentfs ui exited ${code}: ${err}`)))
  })
  try {
    expect(out).toMatch(/^AgentFS inspector for .*ui\.db \(read-only\): http/)
    const origin = new URL(url).origin
    const token = new URL(url).searchParams.get('token')!
    expect((await fetch(`${origin}/api/info`)).status).toBe(401)
    const opened = await fetch(url, { redirect: 'manual' })
    expect(opened.status).toBe(302)
    const cookie = opened.headers.get('set-cookie')!.split(';')[0]!
    expect((await fetch(`${origin}/`, { headers: { cookie } })).status).toBe(200)
    const file = await fetch(`${origin}/api/file?path=/a.md`, { headers: { cookie } })
    expect(((await file.json()) as { text: string }).text).toBe('hello')
    const write = await fetch(`${origin}/api/snapshots`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    })
    expect(write.status).toBe(403)
  } finally {
    child.kill('SIGINT')
  }
  expect(await exited).toBe(0)
})

test("agentfs ui on a branch shows what the branch changed against its database's snapshot", async () => {
  for (const args of [
    ['init', 'live.db'],
    ['fs', 'write', 'live.db', '/plan.md', 'one'],
    ['snapshot', 'live.db', 'base'],
    ['branch', 'live.db', 'base', 'try.db'],
    ['fs', 'write', 'try.db', '/plan.md', 'two'],
  ])
    expect(runCli(cli, args, { cwd }).code, args.join(' ')).toBe(0)
  const child = spawn(
    process.execPath,
    [cli, 'ui', 'try.db', '--token', 'a-token-of-sixteen-chars'],
    {
      cwd,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  try {
    const origin = await new Promise<string>((resolve) => {
      let out = ''
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString()
        const m = out.match(/http:\/\/127\.0\.0\.1:\d+/)
        if (m) resolve(m[0])
      })
    })
    const res = await fetch(`${origin}/api/branch`, {
      headers: { authorization: 'Bearer a-token-of-sixteen-chars' },
    })
    const branch = (await res.json()) as {
      base: { kind: string; snapshot: string }
      changes: { path: string; kind: string; diff?: string }[]
    }
    expect(branch.base).toMatchObject({ kind: 'snapshot', snapshot: 'base' })
    expect(branch.changes.map((c) => [c.kind, c.path])).toEqual([['modified', '/plan.md']])
    expect(branch.changes[0]!.diff).toContain('+two')
  } finally {
    child.kill('SIGINT')
  }
  expect(await exited).toBe(0)
})

test('agentfs ui refuses another address without a token, and a short token', () => {
  expect(runCli(cli, ['init', 'refuse.db'], { cwd }).code).toBe(0)
  const host = runCli(cli, ['ui', 'refuse.db', '--host', '0.0.0.0'], { cwd })
  expect(host.code).toBe(1)
  expect(host.err).toMatch(/--host 0\.0\.0\.0 needs --token/)
  const short = runCli(cli, ['ui', 'refuse.db', '--token', 'short'], { cwd })
  expect(short.code).toBe(1)
  expect(short.err).toMatch(/at least 16 characters/)
})
