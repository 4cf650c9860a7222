import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startSyncServer } from '@agentfs/turso-sync-server'
import { expect, test } from 'vitest'
import { twoAgents } from '../src/two-agents.js'

test('two agents converge through a real sync server; the lost rewrite is a visible conflict copy', async () => {
  const server = await startSyncServer({ maxSeconds: 120 })
  const dir = mkdtempSync(join(tmpdir(), 'agentfs-demo-sync-'))
  try {
    const lines: string[] = []
    const result = await twoAgents(server.url, dir, (line) => lines.push(line))
    expect(result.converged).toBe(true)
    expect(result.treeA).toBe(result.treeB)
    expect(result.conflicts.map((c) => c.kind)).toContain('write')
    expect(result.treeA).toMatch(/plan\.md \(conflict \d+-\d+\)/)
    expect(result.treeA).toContain('intro.md')
    expect(lines.some((line) => line.includes('⚠ conflict resolved by writer (write)'))).toBe(true)
  } finally {
    rmSync(dir, { recursive: true, force: true })
    await server.stop()
  }
})
