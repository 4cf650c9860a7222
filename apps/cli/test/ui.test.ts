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

test('agentfs ui refuses another address without a token, and a short token', () => {
  expect(runCli(cli, ['init', 'refuse.db'], { cwd }).code).toBe(0)
  const host = runCli(cli, ['ui', 'refuse.db', '--host', '0.0.0.0'], { cwd })
  expect(host.code).toBe(1)
  expect(host.err).toMatch(/--host 0\.0\.0\.0 needs --token/)
  const short = runCli(cli, ['ui', 'refuse.db', '--token', 'short'], { cwd })
  expect(short.code).toBe(1)
  expect(short.err).toMatch(/at least 16 characters/)
})
