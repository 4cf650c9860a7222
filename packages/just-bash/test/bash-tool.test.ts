import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createAgentTools } from '@agentfs/agent-tools'
import { fixedClock } from '@agentfs/core'
import { HostFileSystem } from '@agentfs/overlay'
import { AgentFS } from '@agentfs/sdk'
import { Bash } from 'just-bash'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { agentFsSandbox, BashFileSystem, bashTool } from '../src/index.js'

let agent: AgentFS
beforeEach(async () => {
  agent = await AgentFS.open({ path: ':memory:', clock: fixedClock() })
})
afterEach(async () => {
  await agent.close()
})

const bashOf = (options: Parameters<typeof createAgentTools>[0]) =>
  createAgentTools({ ...options, tools: [bashTool()] }).get('bash')!

describe('the bash tool', () => {
  test('runs a script on the database; one audited call; its changes are attributed to it', async () => {
    const bash = bashOf({ fs: agent.fs, audit: agent.tools, sessionId: 's1' })
    const out = await bash.execute({
      command: 'mkdir -p /src && echo "hello" > /src/a.txt && cat /src/a.txt && wc -c < /src/a.txt',
    })
    expect(out).toMatchObject({ text: 'hello\n6\n[exit status 0]', data: { exitCode: 0 } })
    expect(out.isError).toBeUndefined()
    expect(await agent.fs.readFile('/src/a.txt', 'utf8')).toBe('hello\n')
    const calls = await agent.tools.bySession('s1')
    expect(calls.map((c) => [c.name, c.status])).toEqual([['bash', 'success']])
    const { changes } = await agent.changes.since(0)
    // The redirection creates the file, then writes what echo printed.
    expect(changes.map((c) => [c.op, c.path, c.toolCallId])).toEqual([
      ['mkdir', '/src', calls[0]!.id],
      ['create', '/src/a.txt', calls[0]!.id],
      ['write', '/src/a.txt', calls[0]!.id],
    ])
  })

  test('a failing script is an error the model reads, with stderr and the status', async () => {
    const bash = bashOf({ fs: agent.fs, audit: agent.tools })
    const out = await bash.execute({ command: 'echo partial; cat /missing' })
    expect(out.text).toBe(
      'partial\n[stderr]\ncat: /missing: No such file or directory\n[exit status 1]',
    )
    expect(out).toMatchObject({ isError: true, code: 'EXIT', data: { exitCode: 1 } })
    expect((await agent.tools.recent()).map((c) => c.status)).toEqual(['error'])
  })

  test('read-only: reading commands work, every change fails, nothing changes', async () => {
    await agent.fs.writeFile('/notes.md', 'keep\nTODO\n')
    const bash = bashOf({ fs: agent.fs, readOnly: true })
    expect((await bash.execute({ command: 'grep -n TODO /notes.md; find / -type f' })).text).toBe(
      '2:TODO\n/notes.md\n[exit status 0]',
    )
    for (const command of [
      'echo x > /notes.md',
      'echo x >> /notes.md',
      'rm /notes.md',
      'mv /notes.md /n2',
      'cp /notes.md /n2',
      'mkdir /d',
      'sed -i s/keep/gone/ /notes.md',
      'touch /new',
      'ln -s /notes.md /l',
      'chmod 777 /notes.md',
    ]) {
      const out = await bash.execute({ command })
      expect(out.isError, command).toBe(true)
      // Some commands (sed -i, chmod) report any failure with their own generic message.
      if (/^(echo|rm|mkdir|mv|cp|ln)/.test(command))
        expect(out.text, command).toMatch(/read-only|EROFS|cannot open/i)
    }
    expect(await agent.fs.readdir('/')).toEqual(['notes.md'])
    expect(await agent.fs.readFile('/notes.md', 'utf8')).toBe('keep\nTODO\n')
  })

  test('a runaway script is stopped by the execution limits', async () => {
    const bash = createAgentTools({
      fs: agent.fs,
      tools: [bashTool({ timeoutMs: 2_000 })],
    }).get('bash')!
    const out = await bash.execute({ command: 'while true; do :; done' })
    expect(out.isError).toBe(true)
    expect(out.text).toMatch(/too many|limit|timed out|longer than/i)
  })

  // The wall-clock limit holds inside loops: checked by the filesystem on every call, so a
  // loop of changes stops changing things at the limit, and the answer says it timed out.
  // Each loop is long enough that no machine ends it inside the limit (1,500 touches take
  // 0.7-0.9 s on Node 20 here and once ended under 500 ms on Node 24, failing the test).
  const LOOPS = [
    'for i in $(seq 1 50000); do touch f$i; done',
    'seq 1 100000 | while read i; do echo $i > n$i; done',
  ]
  test.each(LOOPS)('the time limit holds inside loops: %s', async (command) => {
    const bash = createAgentTools({
      fs: agent.fs,
      tools: [bashTool({ timeoutMs: 500 })],
    }).get('bash')!
    const started = Date.now()
    const out = await bash.execute({ command })
    const took = Date.now() - started
    expect(out.isError).toBe(true)
    expect(out.code).toBe('ETIMEDOUT')
    expect(out.text).toMatch(/longer than 500 ms/)
    // A hang guard, not a speed target: these ran 47 s and 260 s against their limits.
    expect(took).toBeLessThan(10_000)
    // Nothing was created after the limit: what exists now stays.
    const made = (await agent.fs.readdir('/')).length
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await agent.fs.readdir('/')).length).toBe(made)
  })

  test.each(LOOPS)('the sandbox holds the time limit too: %s', async (command) => {
    const sandbox = agentFsSandbox({ fs: agent.fs, audit: agent.tools, timeoutMs: 500 })
    const started = Date.now()
    const failure = await sandbox.executeCommand(command).then(
      () => undefined,
      (error: { code?: string; message?: string }) => error,
    )
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(failure).toMatchObject({ code: 'ETIMEDOUT' })
    // The audit row says the command failed by time.
    const [call] = await agent.tools.recent()
    expect(call).toMatchObject({ name: 'bash', status: 'error' })
  })

  test.each([
    ['no policy', {}],
    ['a root', { root: '/ws' }],
    ['allowed roots', { allowedRoots: ['/ws'] }],
    ['read-only', { readOnly: true }],
  ] as const)(
    '/dev/null works with %s, and is never a file of the database',
    async (_name, options) => {
      await agent.fs.mkdir('/ws')
      const bash = bashOf({ fs: agent.fs, ...options })
      const out = await bash.execute({
        command:
          'ls /nope 2>/dev/null; echo hidden > /dev/null; echo x | tee /dev/null > /dev/null; cat /dev/null; echo after',
      })
      expect(out.text).toBe('after\n[exit status 0]')
      expect(await agent.fs.exists('/dev/null')).toBe(false)
      expect(await agent.fs.exists('/ws/dev/null')).toBe(false)
    },
  )

  test('a second tool named bash is refused', () => {
    expect(() => createAgentTools({ fs: agent.fs, tools: [bashTool(), bashTool()] })).toThrow(
      /Two tools are named 'bash'/,
    )
  })
})

describe('a root confines scripts: nothing outside it is read or changed', () => {
  const ESCAPES = [
    'cat /../secret.txt',
    'cat ../../secret.txt',
    'cd / && cd .. && cat secret.txt',
    'ln -s /secret.txt s; cat s',
    'ln -s / r; cat r/secret.txt',
    'ln -s / r; echo pwned > r/secret.txt',
    'ln -s / r; cp r/secret.txt mine; cat mine',
    'ln -s / r; grep -r key r/ .',
    'ln -s / r; find -L r -name secret.txt -exec cat {} \\;',
    'ln -s / r; tar -chf t.tar r; tar -xf t.tar -O',
    'ln -s ../secret.txt rel; cat rel',
    'ln -s /nowhere/new.txt dangling; echo pwned > dangling',
    'ln -s / r; mv inside.txt r/moved.txt',
    'ln -s / r; rm -rf r/',
    'ln -s / r; sed -i s/key/pwned/ r/secret.txt',
    // The root itself is never removed, however asked (its contents may be).
    'rm -rf /',
    'rm -rf --no-preserve-root /',
    'rmdir /',
    'cd / && rm -rf .',
    'cd / && rm -rf /.',
  ]

  const check = async (
    fs: { readFile(p: string, e: 'utf8'): Promise<string> },
    outside: string[],
  ) => {
    expect(await fs.readFile('/secret.txt', 'utf8')).toBe('the host key\n')
    expect(outside.sort()).toEqual(['secret.txt', 'ws'])
  }

  test.each(ESCAPES)('database: %s', async (command) => {
    await agent.fs.writeFile('/secret.txt', 'the host key\n')
    await agent.fs.mkdir('/ws')
    await agent.fs.writeFile('/ws/inside.txt', 'in\n')
    const bash = bashOf({ fs: agent.fs, root: '/ws' })
    const out = await bash.execute({ command })
    expect(out.text).not.toContain('the host key')
    await check(agent.fs, await agent.fs.readdir('/'))
  })

  test.each(ESCAPES)('host directory: %s', async (command) => {
    const dir = mkdtempSync(join(tmpdir(), 'agentfs-bash-escape-'))
    try {
      const host = new HostFileSystem({ root: dir, writable: true })
      await host.writeFile('/secret.txt', 'the host key\n')
      await host.mkdir('/ws')
      await host.writeFile('/ws/inside.txt', 'in\n')
      const shell = new Bash({ fs: new BashFileSystem({ fs: host, root: '/ws' }), cwd: '/' })
      // A refusal in a redirection's final write escapes just-bash as an exception: also a refusal.
      const out = await shell
        .exec(command)
        .catch((error: Error) => ({ stdout: '', stderr: error.message }))
      expect(out.stdout + out.stderr).not.toContain('the host key')
      await check(host, await host.readdir('/'))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
