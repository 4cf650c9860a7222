import { execFileSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fsck, isAgentFsError } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { expect, test } from 'vitest'

// A real full disk: a 4 MiB tmpfs mounted by the test (root only). Elsewhere the test is
// skipped with a printed reason; under CI=true as root it must run.

function mountTmpfs(dir: string): string | undefined {
  if (process.getuid?.() !== 0) return 'not root: cannot mount a tmpfs'
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', dir], { stdio: 'pipe' })
    return undefined
  } catch (error) {
    return `mount -t tmpfs failed: ${(error as Error).message.split('\n')[0]}`
  }
}

test('a real full disk gives a typed FULL error; committed data survives; space back, writes work', async (context) => {
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-full-'))
  const why = mountTmpfs(dir)
  if (why !== undefined) {
    await rm(dir, { recursive: true, force: true })
    if (process.env.CI === 'true' && process.getuid?.() === 0)
      throw new Error(`the full-disk test must run in CI as root: ${why}`)
    console.log(`full-disk test skipped: ${why} (run as root to enable it)`)
    context.skip()
    return
  }
  let agent: AgentFS | undefined
  try {
    // Ballast that the test deletes later: the space an operator would free.
    await writeFile(join(dir, 'ballast'), Buffer.alloc(1 << 20))
    agent = await AgentFS.open({ path: join(dir, 'full.db') })
    await agent.fs.writeFile('/kept.txt', 'committed before the disk filled')
    let error: unknown
    const chunk = Buffer.alloc(256 * 1024, 7)
    for (let i = 0; i < 64 && error === undefined; i++) {
      try {
        await agent.fs.writeFile(`/fill-${i}.bin`, chunk)
      } catch (e) {
        error = e
      }
    }
    expect(isAgentFsError(error, 'FULL'), String(error)).toBe(true)
    expect((error as Error).message.length).toBeGreaterThan(10)
    expect(await agent.fs.readFile('/kept.txt', 'utf8')).toBe('committed before the disk filled')
    expect((await fsck(agent.db)).findings).toEqual([])
    // Space is freed on the disk; then the database can shrink and take writes again.
    await rm(join(dir, 'ballast'))
    for (const name of await agent.fs.readdir('/'))
      if (name.startsWith('fill-')) await agent.fs.unlink(`/${name}`)
    await agent.fs.writeFile('/after.txt', 'space is back')
    expect(await agent.fs.readFile('/after.txt', 'utf8')).toBe('space is back')
    await agent.close()
    agent = undefined
    const reopened = await AgentFS.open({ path: join(dir, 'full.db') })
    expect((await fsck(reopened.db)).findings).toEqual([])
    expect(await reopened.fs.readFile('/kept.txt', 'utf8')).toBe('committed before the disk filled')
    await reopened.close()
  } finally {
    await agent?.close().catch(() => undefined)
    execFileSync('umount', ['-l', dir])
    await rm(dir, { recursive: true, force: true })
  }
}, 120_000)
