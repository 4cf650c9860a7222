import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fsck } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { expect, test } from 'vitest'
import { bundleChild, runNode } from './helpers.js'

/**
 * N processes × M read-modify-write edits of 3 shared files with version tokens: no update is
 * lost (every acknowledged edit is in the final text exactly once), refusals happen and are
 * retried, and no SQLITE_BUSY reaches a caller. Long: AGENTFS_LONG=1 (8 × 300).
 */
const LONG = process.env.AGENTFS_LONG === '1'
const CHILDREN = LONG ? 8 : 4
const EDITS = LONG ? 300 : 60
const FILES = 3

test(`${CHILDREN} processes × ${EDITS} edits with ifMatch: no lost update, no BUSY`, async () => {
  const { script, dispose } = await bundleChild('editor-child')
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-edits-'))
  const path = join(dir, 'shared.db')
  try {
    const setup = await AgentFS.open({ path })
    await setup.fs.mkdir('/shared')
    for (let f = 0; f < FILES; f++) await setup.fs.writeFile(`/shared/f${f}.txt`, '')
    await setup.close()

    const startAt = String(Date.now() + 1500)
    const results = await Promise.all(
      Array.from({ length: CHILDREN }, (_, i) =>
        runNode(script, [path, String(i), String(EDITS), String(FILES), startAt]),
      ),
    )
    let conflicts = 0
    for (const r of results) {
      expect(r, r.out).toMatchObject({ code: 0 })
      conflicts += (JSON.parse(r.out) as { conflicts: number }).conflicts
    }

    const agent = await AgentFS.open({ path })
    const lines: string[] = []
    for (let f = 0; f < FILES; f++)
      lines.push(
        ...(await agent.fs.readFile(`/shared/f${f}.txt`, 'utf8')).split('\n').filter(Boolean),
      )
    const expected = Array.from({ length: CHILDREN }, (_, c) =>
      Array.from({ length: EDITS }, (_, k) => `child-${c} edit-${k}`),
    ).flat()
    expect(lines.sort()).toEqual(expected.sort())
    expect((await fsck(agent.db)).findings).toEqual([])
    await agent.close()
    console.log(
      `concurrent edits: ${CHILDREN * EDITS} edits landed, ${conflicts} stale writes refused and retried`,
    )
    // The processes really contended: some writes were refused as stale.
    expect(conflicts).toBeGreaterThan(0)
  } finally {
    await dispose()
    await rm(dir, { recursive: true, force: true })
  }
}, 600_000)
