import { resolve } from 'node:path'
import type { Command } from 'commander'
import { positiveInteger } from './commands/shared.js'
import { fuseLimitation, mount } from './fuse.js'
import { kernelFacing, openExisting, viewOf } from './open.js'

/** Resolves on the first SIGINT or SIGTERM. */
export const untilSignal = () =>
  new Promise<NodeJS.Signals>((done) => {
    process.once('SIGINT', done)
    process.once('SIGTERM', done)
  })

/** `agentfs mount DB MOUNTPOINT`: the database as a real directory until SIGINT/SIGTERM. */
export function registerMount(program: Command): void {
  program
    .command('mount')
    .description('mount a database as a directory through FUSE (Linux); Ctrl-C unmounts')
    .argument('<db>', 'agent id or database path')
    .argument('<mountpoint>', 'an existing empty directory')
    .option('--read-only', 'refuse every change with EROFS')
    .option(
      '--sync-interval <ms>',
      'a synced database (init --sync-url): push and pull every this many ms while mounted (default 2000)',
      positiveInteger('--sync-interval'),
    )
    .addHelpText(
      'after',
      `
The database stays usable by the SDK and other agentfs commands while mounted.
Overlay databases (agentfs init --base DIR) show their copy-on-write view.

Examples:
  $ mkdir /tmp/agent && agentfs mount my-agent /tmp/agent
  $ agentfs mount --read-only session.db /mnt/review
  $ agentfs mount --sync-interval 1000 agent-a /tmp/agent   # a database made by init --sync-url`,
    )
    .action(
      async (db: string, mountpoint: string, o: { readOnly?: boolean; syncInterval?: number }) => {
        // Listening before anything is mounted: a signal that comes while mounting, or right
        // after "mounted" is printed, still unmounts (the default action would leave a dead
        // mount behind).
        const signalled = untilSignal()
        const agent = await openExisting(db)
        const target = resolve(mountpoint)
        try {
          const view = await viewOf(agent, kernelFacing())
          const mounted = await mount(view, target, o.readOnly ? { readOnly: true } : {})
          process.stdout.write(`mounted ${db} at ${target}; Ctrl-C or SIGTERM unmounts\n`)
          const limitation = fuseLimitation()
          if (limitation) process.stderr.write(`agentfs: warning: ${limitation}\n`)
          // A synced database keeps syncing while mounted: rounds run between FUSE requests'
          // statements (the driver lends its connection only between transactions).
          const sync = (agent as Partial<{ sync: import('@agentfs/sync').AgentSync }>).sync
          if (sync !== undefined) sync.start(o.syncInterval ?? 2000)
          else if (o.syncInterval !== undefined)
            process.stderr.write(`agentfs: warning: ${db} does not sync; --sync-interval ignored\n`)
          await signalled
          await sync?.stop()
          await mounted.unmount()
          process.stdout.write(`unmounted ${target}\n`)
        } finally {
          await agent.close()
        }
      },
    )
}
