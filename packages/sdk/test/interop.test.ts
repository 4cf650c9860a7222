import { copyFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { REFERENCE_CONTENT, referenceSdkScript } from '@agentfs/conformance'
import { guardDriver } from '@agentfs/core'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { AgentFS as ReferenceAgentFS } from 'agentfs-sdk'
import { expect, test } from 'vitest'
import { AgentFS } from '../src/index.js'

test('a database written live by agentfs-sdk 0.6.4 opens with its files, keys and tool calls intact', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-interop-'))
  const path = join(dir, 'reference.db')
  try {
    const big = Buffer.from(Array.from({ length: 20_000 }, (_, i) => (i * 7) & 255))
    const reference = await ReferenceAgentFS.open({ path })
    await reference.fs.writeFile('/docs/readme.md', 'written by the reference SDK\n')
    await reference.fs.writeFile('/docs/big.bin', big)
    await reference.fs.mkdir('/empty')
    await reference.fs.symlink('/docs/readme.md', '/latest')
    await reference.kv.set('user:prefs', { theme: 'dark' })
    await reference.tools.record(
      'search',
      1_700_000_000,
      1_700_000_002,
      { q: 'agentfs' },
      { hits: 3 },
    )
    await reference.tools.start('still_running', { step: 1 })
    await reference.close()

    const agent = await AgentFS.open({ path })
    expect(await agent.fs.readFile('/docs/readme.md', 'utf8')).toBe(
      'written by the reference SDK\n',
    )
    expect(Buffer.compare(await agent.fs.readFile('/docs/big.bin'), big)).toBe(0)
    expect(await agent.fs.readdir('/')).toEqual(['docs', 'empty', 'latest'])
    expect(await agent.fs.readlink('/latest')).toBe('/docs/readme.md')
    expect(await agent.fs.readFile('/latest', 'utf8')).toBe('written by the reference SDK\n')
    expect(await agent.kv.get('user:prefs')).toEqual({ theme: 'dark' })
    const calls = await agent.tools.query({ order: 'oldest' })
    expect(calls.map((c) => [c.name, c.status])).toEqual([
      ['search', 'success'],
      ['still_running', 'pending'],
    ])
    expect(calls[0]).toMatchObject({
      parameters: { q: 'agentfs' },
      result: { hits: 3 },
      durationMs: 2000,
    })
    // Keep working in it: our writes land next to the reference's rows.
    await agent.fs.writeFile('/docs/readme.md', 'edited by AgentFS\n')
    await agent.kv.set('user:prefs', { theme: 'light' })
    await agent.tools.record({ name: 'edit', result: 'ok', startedAt: 0, completedAt: 1 })
    await agent.close()

    // And the reference SDK still reads the filesystem and keys we wrote. (Through a copy: its
    // engine caches a path it has opened in this process and would serve the old pages.)
    const copy = join(dir, 'copy.db')
    await copyFile(path, copy)
    const again = await ReferenceAgentFS.open({ path: copy })
    expect(await again.fs.readFile('/docs/readme.md', 'utf8')).toBe('edited by AgentFS\n')
    expect(await again.kv.get('user:prefs')).toEqual({ theme: 'light' })
    await again.close()
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}, 60_000)

test('agentfs-sdk 0.6.4 opens a database with history: feed, versions, snapshots, a restore', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-interop-history-'))
  const path = join(dir, 'history.db')
  try {
    const agent = await AgentFS.open({ path, versions: true })
    await agent.fs.writeFile('/notes.md', 'kept\n')
    await agent.kv.set('k', 1)
    await agent.snapshot('good')
    await agent.fs.writeFile('/notes.md', 'broken\n')
    await agent.fs.writeFile('/extra.md', 'extra\n')
    await agent.restore('good')
    await agent.fs.writeFile('/after.md', 'after\n')
    await agent.close()
    const reference = await ReferenceAgentFS.open({ path })
    expect(await reference.fs.readFile('/notes.md', 'utf8')).toBe('kept\n')
    expect(await reference.fs.readFile('/after.md', 'utf8')).toBe('after\n')
    expect((await reference.fs.readdir('/')).sort()).toEqual(['after.md', 'notes.md'])
    expect(await reference.kv.get('k')).toBe(1)
    await reference.fs.writeFile('/by-reference.md', 'ref\n')
    await reference.close()
    // Back in AgentFS: the reference's write is there, and a full snapshot sees it.
    const again = await AgentFS.open({ path })
    expect(await again.fs.readFile('/by-reference.md', 'utf8')).toBe('ref\n')
    await again.snapshot('after-reference', { full: true })
    expect((await again.history.diff('good', 'after-reference')).map((c) => c.path)).toEqual([
      '/after.md',
      '/by-reference.md',
    ])
    await again.close()
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}, 60_000)

test('the committed reference fixture opens through the libSQL driver too', async () => {
  const driver = guardDriver(libsqlDriver({ url: ':memory:' }))
  await driver.executeScript(referenceSdkScript())
  const agent = await AgentFS.open({ driver })
  for (const [file, bytes] of Object.entries(REFERENCE_CONTENT.files)) {
    expect(Buffer.compare(await agent.fs.readFile(file), Buffer.from(bytes))).toBe(0)
  }
  expect((await agent.fs.stat(REFERENCE_CONTENT.bigFile.path)).size).toBe(
    REFERENCE_CONTENT.bigFile.length,
  )
  expect(await agent.kv.get('session:state')).toEqual([1, 2, 3])
  expect((await agent.tools.query()).filter((c) => c.status === 'pending')).toHaveLength(1)
  await agent.close()
})
