import type { Command } from 'commander'
import { databasePath, isSyncedFile } from '../open.js'
import { print, withAgent } from './shared.js'

type Synced = { sync: import('@agentfs/sync').AgentSync }

function synced(target: string): void {
  const path = databasePath(target)
  if (!isSyncedFile(path))
    throw new Error(
      `${path} does not sync; create a synced copy with "agentfs init --sync-url URL ${target}"`,
    )
}

const describe = (conflicts: ReadonlyArray<{ kind: string; path: string; detail: string }>) => {
  for (const c of conflicts) print(`conflict (${c.kind}) ${c.path}: ${c.detail}`)
}

/** `sync push|pull|status|conflicts`: a synced database's exchanges with its server. */
export function registerSync(program: Command): void {
  const sync = program
    .command('sync')
    .description('exchange changes with the sync server of a database made by init --sync-url')
    .addHelpText(
      'after',
      `
The auth token comes from $AGENTFS_SYNC_TOKEN (it is never stored).`,
    )
  sync
    .command('push')
    .description("send this copy's changes to the server")
    .argument('[db]', 'agent id or database path', 'default')
    .action(async (db: string) => {
      synced(db)
      await withAgent(db, async (agent) => {
        await (agent as unknown as Synced).sync.push()
        print('pushed')
      })
    })
  sync
    .command('pull')
    .description("push, then bring other copies' changes and resolve conflicts")
    .argument('[db]', 'agent id or database path', 'default')
    .action(async (db: string) => {
      synced(db)
      await withAgent(db, async (agent) => {
        const report = await (agent as unknown as Synced).sync.pull()
        describe(report.conflicts)
        print(report.changed ? 'pulled changes' : 'up to date')
      })
    })
  sync
    .command('status')
    .description('the server, this copy’s slot, last push and pull, bytes exchanged')
    .argument('[db]', 'agent id or database path', 'default')
    .option('--json', 'print JSON')
    .action(async (db: string, o: { json?: boolean }) => {
      synced(db)
      await withAgent(db, async (agent) => {
        const status = await (agent as unknown as Synced).sync.status()
        if (o.json) return print(JSON.stringify(status, null, 2))
        const when = (ms: number | undefined) =>
          ms === undefined ? 'never' : new Date(ms).toISOString()
        print(`server     ${status.url}`)
        print(`slot       ${status.slot} (client ${status.clientId})`)
        print(`last push  ${when(status.lastPushMs)}`)
        print(`last pull  ${when(status.lastPullMs)}`)
        print(
          `sent       ${status.networkSentBytes} bytes, received ${status.networkReceivedBytes} bytes`,
        )
      })
    })
  sync
    .command('conflicts')
    .description('every conflict any copy resolved, oldest first')
    .argument('[db]', 'agent id or database path', 'default')
    .action(async (db: string) => {
      synced(db)
      await withAgent(db, async (agent) => {
        describe(await (agent as unknown as Synced).sync.conflicts())
      })
    })
}
