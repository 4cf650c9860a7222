import { spawn } from 'node:child_process'
import { mkdtemp, rmdir } from 'node:fs/promises'
import { constants, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Command } from 'commander'
import { positiveInteger } from './commands/shared.js'
import { agentEnv } from './db-key.js'
import { activeMounts, fuseLimitation, type MountOptions, mount } from './fuse.js'
import {
  DEFAULT_COMMIT_DELAY_MS,
  mountSession,
  openExisting,
  viewOf,
  withMemoryPolicy,
} from './open.js'

/** Resolves on the first SIGINT or SIGTERM. */
export const untilSignal = () =>
  new Promise<NodeJS.Signals>((done) => {
    process.once('SIGINT', done)
    process.once('SIGTERM', done)
  })

/** A commander parser for `--commit-delay`: whole milliseconds, 0 … 1000. */
export function commitDelayArg(value: string): number {
  const n = Number(value)
  if (!/^\d+$/.test(value) || n > 1000)
    throw new Error(
      `--commit-delay expects whole milliseconds from 0 to 1000, got ${JSON.stringify(value)}`,
    )
  return n
}

/** A commander parser for a user or group id. */
const idArg =
  (flag: string) =>
  (value: string): number => {
    const n = Number(value)
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n > 0xfffffffe)
      throw new Error(`${flag} expects a numeric id, got ${JSON.stringify(value)}`)
    return n
  }

interface MountFlags {
  readOnly?: boolean
  memory?: boolean
  syncInterval?: number
  allowOther?: boolean
  autoUnmount?: boolean
  uid?: number
  gid?: number
  commitDelay?: number
}

const mountOptions = (db: string, o: MountFlags): MountOptions => ({
  source: `agentfs:${resolve(db)}`,
  ...(o.readOnly ? { readOnly: true } : {}),
  ...(o.allowOther ? { allowOther: true } : {}),
  ...(o.autoUnmount ? { autoUnmount: true } : {}),
  ...(o.uid !== undefined ? { uid: o.uid } : {}),
  ...(o.gid !== undefined ? { gid: o.gid } : {}),
})

/** The options `mount` and `exec` share. */
function withMountOptions(command: Command): Command {
  return command
    .option('--read-only', 'refuse every change with EROFS')
    .option(
      '--memory',
      "hold every change to @agentfs/memory's policy: users' garden files keep their anchors and identity frontmatter, nothing under users/ is deleted, nothing is written outside the allowed roots (EPERM)",
    )
    .option('--allow-other', 'let other users reach the mount (the default as root)')
    .option('--auto-unmount', 'unmount when this process dies, however it dies')
    .option('--uid <uid>', 'show every file as owned by this user id', idArg('--uid'))
    .option('--gid <gid>', 'show every file as owned by this group id', idArg('--gid'))
    .option(
      '--commit-delay <ms>',
      `commit the mount's changes together, each at most this many ms after it is made (default ${DEFAULT_COMMIT_DELAY_MS}: one commit per change); fsync commits at once`,
      commitDelayArg,
    )
}

/** `agentfs mount DB MOUNTPOINT`: the database as a real directory until SIGINT/SIGTERM. */
export function registerMount(program: Command): void {
  withMountOptions(
    program
      .command('mount')
      .description(
        'mount a database as a directory through FUSE (Linux); Ctrl-C unmounts; with no arguments, list AgentFS mounts',
      )
      .argument('[db]', 'agent id or database path')
      .argument('[mountpoint]', 'an existing directory'),
  )
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
New files belong to the user who creates them; the kernel checks permissions
(default_permissions). Unmounting from outside (umount, fusermount3 -u) ends the command.

Examples:
  $ agentfs mount                                           # list AgentFS mounts
  $ mkdir /tmp/agent && agentfs mount my-agent /tmp/agent
  $ agentfs mount --read-only --auto-unmount session.db /mnt/review
  $ agentfs mount --sync-interval 1000 agent-a /tmp/agent   # a database made by init --sync-url`,
    )
    .action(async (db: string | undefined, mountpoint: string | undefined, o: MountFlags) => {
      if (db === undefined) {
        const mounts = activeMounts()
        if (mounts.length === 0) process.stdout.write('no AgentFS mounts\n')
        for (const m of mounts) process.stdout.write(`${m.source} on ${m.mountpoint}\n`)
        return
      }
      if (mountpoint === undefined)
        throw new Error('agentfs mount needs a mountpoint: agentfs mount DB MOUNTPOINT')
      // Listening before anything is mounted: a signal that comes while mounting, or right
      // after "mounted" is printed, still unmounts (the default action would leave a dead
      // mount behind).
      const signalled = untilSignal()
      const agent = await openExisting(db)
      const target = resolve(mountpoint)
      try {
        const own = mountSession(agent, o.commitDelay)
        const view = await viewOf(agent, own.fs, own.db)
        const mounted = await mount(o.memory ? await withMemoryPolicy(view) : view, target, {
          ...mountOptions(db, o),
          changes: own.changes,
          flush: own.db.flush,
        })
        process.stdout.write(
          `mounted ${db} at ${target} (${mounted.binding}); Ctrl-C or SIGTERM unmounts\n`,
        )
        const limitation = mounted.binding === 'fuse-native' ? fuseLimitation() : undefined
        if (limitation) process.stderr.write(`agentfs: warning: ${limitation}\n`)
        // A synced database keeps syncing while mounted: rounds run between FUSE requests'
        // statements (the driver lends its connection only between transactions).
        const sync = (agent as Partial<{ sync: import('@agentfs/sync').AgentSync }>).sync
        if (sync !== undefined) sync.start(o.syncInterval ?? 2000)
        else if (o.syncInterval !== undefined)
          process.stderr.write(`agentfs: warning: ${db} does not sync; --sync-interval ignored\n`)
        const outside = await Promise.race([
          signalled.then(() => false),
          mounted.ended.then(() => true),
        ])
        await sync?.stop()
        await mounted.unmount()
        process.stdout.write(
          outside ? `${target} was unmounted from outside\n` : `unmounted ${target}\n`,
        )
      } finally {
        await agent.close()
      }
    })

  withMountOptions(
    program
      .command('exec')
      .description('mount a database on a temporary directory, run a command there, unmount')
      .argument('<db>', 'agent id or database path')
      .argument('<command...>', 'the command and its arguments (after --)'),
  )
    .addHelpText(
      'after',
      `
The command runs with the mount as its working directory and AGENTFS_MOUNT set to it; its exit
code is agentfs exec's. Changes land in the database as they are made.

Examples:
  $ agentfs exec my-agent -- sh -c 'ls -lR notes && cat notes/todo.md'`,
    )
    .action(async (db: string, argv: string[], o: MountFlags) => {
      const agent = await openExisting(db)
      const target = await mkdtemp(join(tmpdir(), 'agentfs-exec-'))
      let code = 1
      try {
        const own = mountSession(agent, o.commitDelay)
        const view = await viewOf(agent, own.fs, own.db)
        const mounted = await mount(o.memory ? await withMemoryPolicy(view) : view, target, {
          ...mountOptions(db, o),
          autoUnmount: true,
          changes: own.changes,
          flush: own.db.flush,
        })
        const ignore = () => {}
        process.on('SIGINT', ignore)
        process.on('SIGTERM', ignore)
        try {
          const [command] = argv as [string, ...string[]]
          // The shell enters the mount after it has started: a child started with its working
          // directory on the mount would wait for this process to answer FUSE while this
          // process waits for it to start.
          const child = spawn('sh', ['-c', 'cd "$AGENTFS_MOUNT" && exec "$@"', 'sh', ...argv], {
            stdio: 'inherit',
            env: agentEnv({ AGENTFS_MOUNT: target }),
          })
          code = await new Promise<number>((done) => {
            child.on('error', (error) => {
              process.stderr.write(`agentfs exec: cannot run ${command}: ${error.message}\n`)
              done(127)
            })
            child.on('exit', (status, signal) =>
              done(status ?? (signal ? 128 + (constants.signals[signal] ?? 0) : 1)),
            )
          })
        } finally {
          process.off('SIGINT', ignore)
          process.off('SIGTERM', ignore)
          await mounted.unmount()
        }
      } finally {
        await agent.close()
        await rmdir(target).catch(() => {})
      }
      process.exitCode = code
    })
}
