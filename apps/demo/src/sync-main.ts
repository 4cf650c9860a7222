// `pnpm demo:sync`: two agents on two databases converge through a Turso sync server. Without
// --url it starts a local `tursodb --sync-server` on 127.0.0.1 (from the turso npm package) and
// stops it at the end; with --url (and AGENTFS_SYNC_TOKEN) it uses that server, e.g. Turso Cloud.
//
// Usage: node dist/sync-main.js [--url URL]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { startSyncServer } from '@agentfs/turso-sync-server'
import { twoAgents } from './two-agents.js'

const { values } = parseArgs({ options: { url: { type: 'string' } } })
const server = values.url === undefined ? await startSyncServer({ maxSeconds: 120 }) : undefined
const url = values.url ?? server!.url
const dir = mkdtempSync(join(tmpdir(), 'agentfs-sync-demo-'))
try {
  console.log(
    `AgentFS sync demo — server ${url}${server ? ' (local tursodb, started for this demo)' : ''}\n`,
  )
  const result = await twoAgents(
    url,
    dir,
    (line) => console.log(line),
    process.env.AGENTFS_SYNC_TOKEN,
  )
  console.log('\nplanner sees:')
  console.log(result.treeA.replace(/^/gm, '  '))
  console.log('writer sees:')
  console.log(result.treeB.replace(/^/gm, '  '))
  console.log(
    `\n${result.conflicts.length} conflict(s) resolved, nothing lost; converged: ${result.converged ? 'yes' : 'NO'}`,
  )
  if (!result.converged || result.conflicts.length === 0) process.exitCode = 1
} finally {
  rmSync(dir, { recursive: true, force: true })
  await server?.stop()
}
