import { isAgentFsError } from '@agentfs/core'
import { expect, test } from 'vitest'
import type { SyncedAgentFS } from '../src/index.js'
import { converge, files, world } from './helpers.js'

/**
 * N agents, each a synced client of the real sync server: they join (one of them late), each
 * writes its own file, all edit one shared file at once from the same version, one deletes
 * another's file; after syncing, every loser of the shared edit is told (a conflict and a
 * conflict copy of its bytes, and a stale-write refusal if it writes again from its old version),
 * the delete reached everyone, and every client holds the same rows, fsck-clean.
 */
test.each([2, 3, 5, 10])(
  '%i synced agents: late joiner, delete propagation, conflicting edits never silently lost, equal and fsck-clean',
  async (agents) => {
    const { client, conflicts } = await world()
    const first = await client('agent-0')
    await first.fs.mkdir('/shared')
    await first.fs.writeFile('/shared/plan.md', 'v0\n', { mimeType: 'text/x-plan' })
    await first.sync.push()
    // With three or more, the last one joins late; two both work from the start.
    const earlyCount = agents >= 3 ? agents - 1 : agents
    const early: SyncedAgentFS[] = [first]
    for (let i = 1; i < earlyCount; i++) early.push(await client(`agent-${i}`))
    // Every early agent reads the plan at the same version, then edits it offline.
    const read = await Promise.all(early.map((a) => a.fs.stat('/shared/plan.md')))
    for (const [i, a] of early.entries()) {
      await a.fs.writeFile(`/shared/agent-${i}.md`, `agent ${i}\n`)
      await a.fs.writeFile('/shared/plan.md', `plan by agent ${i}\n`, {
        ifMatch: read[i]!.version,
      })
    }
    for (const a of early) await a.sync.push()
    for (const a of early) await a.sync.pull()
    // A late joiner arrives after all that, adds its file.
    const all = [...early]
    if (earlyCount < agents) {
      const late = await client(`agent-${agents - 1}`)
      await late.fs.writeFile(`/shared/agent-${agents - 1}.md`, `agent ${agents - 1}\n`)
      await late.sync.push()
      all.push(late)
    }
    const last = all.at(-1)!
    // One agent deletes another's file; everyone must see it gone.
    await converge(...all)
    await first.fs.unlink('/shared/agent-1.md')
    await first.sync.push()
    const dump = await converge(...all)
    expect(dump).toBeDefined()
    const tree = await files(last)
    const plans = Object.entries(tree).filter(([, text]) => text.startsWith('plan by agent'))
    // Every edit of the plan is still somewhere: the winner in plan.md, each loser in a copy.
    expect(plans.map(([, text]) => text).sort()).toEqual(
      early.map((_, i) => `plan by agent ${i}\n`).sort(),
    )
    expect(tree['/shared/plan.md']).toMatch(/^plan by agent \d+\n$/)
    // Its stored media type went with every rewrite (each a new inode on a synced database).
    for (const a of all)
      expect(await a.fs.mimeType('/shared/plan.md')).toMatchObject({
        mimeType: 'text/x-plan',
        stored: true,
      })
    const writeConflicts = conflicts.filter((c) => c.kind === 'write')
    expect(writeConflicts).toHaveLength(early.length - 1)
    // A loser that writes again from the version it read is refused, not merged over the winner.
    const winner = Number(/agent (\d+)/.exec(tree['/shared/plan.md']!)![1])
    for (const [i, a] of early.entries()) {
      if (i === winner) continue
      const stale = await a.fs
        .writeFile('/shared/plan.md', 'retry\n', { ifMatch: read[i]!.version })
        .then(
          () => undefined,
          (e: unknown) => e,
        )
      expect(isAgentFsError(stale, 'CONFLICT'), String(stale)).toBe(true)
    }
    const expected = Array.from({ length: agents }, (_, i) => `/shared/agent-${i}.md`).filter(
      (p) => p !== '/shared/agent-1.md',
    )
    for (const a of all) {
      const mine = Object.keys(await files(a)).filter((p) => /\/agent-\d+\.md$/.test(p))
      expect(mine.sort()).toEqual(expected.sort())
    }
  },
  300_000,
)
