// Two agents on two machines (two databases), one Turso sync server: they edit offline, sync,
// and converge; the edit that lost a race survives as a conflict copy, and the log says so.
import { join } from 'node:path'
import type { AgentFS } from '@agentfs/sdk'
import { openSynced, type SyncConflict, type SyncedAgentFS } from '@agentfs/sync'
import { drawTree } from './session.js'

export interface TwoAgentsResult {
  readonly conflicts: SyncConflict[]
  readonly converged: boolean
  readonly treeA: string
  readonly treeB: string
}

/** Everything a copy holds that must agree across copies (files, kv, tool calls). */
async function snapshot(agent: AgentFS): Promise<string> {
  const rows = async (sql: string) => JSON.stringify((await agent.db.execute({ sql })).rows)
  return [
    await rows('SELECT id, name, parent_ino, ino FROM fs_dentry ORDER BY id'),
    await rows('SELECT ino, chunk_index, hex(data) FROM fs_data ORDER BY ino, chunk_index'),
    await rows('SELECT key, value FROM kv_store ORDER BY key'),
    await rows('SELECT id, name FROM tool_calls ORDER BY id'),
  ].join('\n')
}

/**
 * Runs the two-agent story against the sync server at `url`, with databases in `dir`, and
 * reports each step through `log`.
 */
export async function twoAgents(
  url: string,
  dir: string,
  log: (line: string) => void,
  authToken?: string,
): Promise<TwoAgentsResult> {
  const conflicts: SyncConflict[] = []
  const open = (name: string) =>
    openSynced({
      path: join(dir, `${name}.db`),
      sync: {
        url,
        clientName: name,
        ...(authToken === undefined ? {} : { authToken }),
        onConflict: (c) => {
          conflicts.push(c)
          log(`  ⚠ conflict resolved by ${name} (${c.kind}): ${c.detail}`)
        },
      },
    })
  const a: SyncedAgentFS = await open('planner')
  const b: SyncedAgentFS = await open('writer')
  try {
    log('planner: writes /plan.md and a task, pushes')
    await a.fs.writeFile('/plan.md', '# Plan\n1. draft the intro\n')
    await a.kv.set('task', { owner: 'planner', step: 1 })
    await a.sync.push()
    log('writer: pulls, and sees the plan')
    await b.sync.pull()
    log(`  writer reads /plan.md: ${JSON.stringify(await b.fs.readFile('/plan.md', 'utf8'))}`)

    log('both work offline: each rewrites /plan.md; the writer also adds /draft/intro.md')
    await a.tools.track('edit_plan', { step: 2 }, () =>
      a.fs.writeFile('/plan.md', '# Plan\n1. draft the intro\n2. review (planner)\n'),
    )
    await b.tools.track('edit_plan', { step: 2 }, () =>
      b.fs.writeFile('/plan.md', '# Plan\n1. draft the intro\n2. add examples (writer)\n'),
    )
    await b.fs.mkdir('/draft')
    await b.fs.writeFile('/draft/intro.md', 'Agents share one filesystem.\n')
    await b.kv.set('task', { owner: 'writer', step: 2 })

    log('planner syncs first, then the writer, then the planner again')
    await a.sync.pull()
    await b.sync.pull()
    await a.sync.pull()

    const converged = (await snapshot(a)) === (await snapshot(b))
    const treeA = await drawTree(a)
    const treeB = await drawTree(b)
    return { conflicts, converged, treeA, treeB }
  } finally {
    await a.close()
    await b.close()
  }
}
