import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AgentFS as ReferenceAgentFS } from 'agentfs-sdk'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { AgentFS } from '../src/index.js'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-sdk-zstd-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const NOTE = (i: number) =>
  `# note ${i}\n\n${'The agent kept this line about the build. '.repeat(40)}\n`

describe('AgentFS.open({ compression: "zstd" })', () => {
  test('the file is smaller, reads back as written, and stays compressed when reopened', async () => {
    const sizes: Record<string, number> = {}
    const content: Record<string, number> = {}
    for (const compression of [undefined, 'zstd'] as const) {
      const path = join(dir, `${compression ?? 'plain'}.db`)
      const agent = await AgentFS.open({ path, ...(compression ? { compression } : {}) })
      await agent.fs.mkdir('/notes')
      for (let i = 0; i < 200; i++) await agent.fs.writeFile(`/notes/${i}.md`, NOTE(i))
      const { rows } = await agent.db.execute<{ n: number }>({
        sql: 'SELECT SUM(length(data)) AS n FROM fs_data',
      })
      content[compression ?? 'plain'] = Number(rows[0]!.n)
      await agent.close()
      sizes[compression ?? 'plain'] = (await stat(path)).size
      const again = await AgentFS.open({ path })
      expect(again.db.chunks.codec?.name).toBe(compression)
      expect(await again.fs.readFile('/notes/7.md', 'utf8')).toBe(NOTE(7))
      await again.fs.writeFile('/notes/new.md', NOTE(1000))
      expect(await again.fs.readFile('/notes/new.md', 'utf8')).toBe(NOTE(1000))
      await again.close()
    }
    // The content stored is a tenth; the file (inodes, entries, feed, index) about half.
    expect(content.zstd!).toBeLessThan(content.plain! / 10)
    expect(sizes.zstd!).toBeLessThan(sizes.plain! * 0.6)
  })

  test('agentfs-sdk 0.6.4, which does not know compression, refuses the database at open', async () => {
    const path = join(dir, 'agent.db')
    const agent = await AgentFS.open({ path, compression: 'zstd' })
    await agent.fs.writeFile('/a.md', NOTE(1))
    await agent.close()
    // Its engine stops at the guard trigger (an engine that runs triggers stops at the
    // trigger's own message instead: @agentfs/fs's compression test).
    await expect(ReferenceAgentFS.open({ path })).rejects.toThrow(/triggers/)
    // Refused before any change: ours still opens it and reads the file.
    const again = await AgentFS.open({ path })
    expect(await again.fs.readFile('/a.md', 'utf8')).toBe(NOTE(1))
    await again.close()
  })
})
