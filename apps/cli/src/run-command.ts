import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rmdir, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { openOverlay, readOverlayBase, saveOverlayBase } from '@agentfs/overlay'
import { AgentFS } from '@agentfs/sdk'
import type { Command } from 'commander'
import { agentEnv, encryption } from './db-key.js'
import { mount } from './fuse.js'
import { commitDelayArg } from './mount-command.js'
import { mountSession, openExisting, RUN_COMMIT_DELAY_MS, runSessionPath, runsDir } from './open.js'
import { hostPath, runSandboxed, sandboxProblem } from './sandbox.js'

/** `YYYYMMDD-HHMMSS` in UTC, for default session names. */
const stamp = (d = new Date()) =>
  d.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)

/**
 * Whether this process can give the command a private mount namespace (root, Linux, unshare
 * from util-linux), so the project's own path shows the copy-on-write view.
 */
function canUseNamespace(): boolean {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false
  return spawnSync('unshare', ['--mount', '--propagation', 'private', 'true']).status === 0
}

/** Opens the session database, creating it as an overlay over `project` when new. */
async function openSession(path: string, project: string): Promise<AgentFS> {
  await mkdir(dirname(path), { recursive: true })
  const agent = await AgentFS.open({ path, ...encryption() })
  try {
    const base = await readOverlayBase(agent.db)
    if (!base) {
      const entries = await agent.fs.readdir('/')
      if (entries.length > 0)
        throw new Error(
          `${path} already holds files and is not an overlay; pass a new --db path for the run`,
        )
      await saveOverlayBase(agent.db, { kind: 'host', path: project })
    } else if (base.kind !== 'host' || resolve(base.path) !== project) {
      throw new Error(
        `${path} is an overlay over ${base.path}, not ${project}; run from that directory or pass a new --db path`,
      )
    }
    return agent
  } catch (error) {
    await agent.close()
    throw error
  }
}

/** Runs `argv` in `view` (the mountpoint), as `project` when a mount namespace is available. */
function runIn(argv: string[], view: string, project: string, namespace: boolean) {
  const [command, ...args] = argv as [string, ...string[]]
  const child = namespace
    ? spawn(
        'unshare',
        [
          '--mount',
          '--propagation',
          'private',
          'sh',
          '-c',
          'mount --bind "$1" "$2" && cd "$2" && shift 2 && exec "$@"',
          'agentfs-run',
          view,
          project,
          command,
          ...args,
        ],
        { stdio: 'inherit', cwd: project, env: agentEnv() },
      )
    : spawn(command, args, { stdio: 'inherit', cwd: view, env: agentEnv({ PWD: view }) })
  return new Promise<number>((done, fail) => {
    child.on('error', (error) =>
      fail(new Error(`cannot run ${command}: ${(error as NodeJS.ErrnoException).code ?? error}`)),
    )
    child.on('exit', (code, signal) => done(code ?? 128 + (signal === 'SIGKILL' ? 9 : 15)))
  })
}

interface RunFlags {
  db?: string
  snapshot: boolean
  sandbox?: boolean
  allowNet?: boolean
  writable: string[]
  read: string[]
  commitDelay?: number
}

const collect = (value: string, previous: string[]) => [...previous, value]

/**
 * The sandbox's settings from the flags, or undefined without --sandbox; checked before anything
 * is created (a flag that needs --sandbox, or a sandbox that cannot run here, is refused).
 */
function sandboxSettings(o: RunFlags) {
  if (!o.sandbox) {
    const stray = [
      o.allowNet ? '--allow-net' : undefined,
      o.writable.length > 0 ? '--writable' : undefined,
      o.read.length > 0 ? '--read' : undefined,
    ].filter((flag) => flag !== undefined)
    if (stray.length > 0) throw new Error(`${stray.join(', ')} only apply with --sandbox`)
    return undefined
  }
  const problem = sandboxProblem()
  if (problem !== undefined) throw new Error(problem)
  return {
    allowNet: o.allowNet === true,
    writable: o.writable.map((path) => hostPath('--writable', path)),
    read: o.read.map((path) => hostPath('--read', path)),
    home: process.env.HOME,
  }
}

/** `agentfs run [--db PATH] -- COMMAND…`: a command on a copy-on-write view of this directory. */
export function registerRun(program: Command): void {
  program
    .command('run')
    .description(
      'run a command on a copy-on-write view of the current directory (Linux, FUSE); the directory stays untouched',
    )
    .argument('<command...>', 'the command and its arguments (after --)')
    .passThroughOptions()
    .option(
      '--db <path>',
      'session database: id or path (default the id run-<time>, kept in ~/.local/state/agentfs/runs); reuse one to continue',
    )
    .addHelpText(
      'after',
      `
Changes land in the session database, never in the directory itself: by default the id
run-<time>, a file in the user's state directory ($AGENTFS_STATE_DIR/runs, else
$XDG_STATE_HOME/agentfs/runs, else ~/.local/state/agentfs/runs), so nothing is written into
the project; "agentfs runs" lists them. Review them with "agentfs diff DB", apply them with "agentfs commit DB",
or drop them with "agentfs discard DB". Each run first snapshots the session, so
"agentfs undo DB" takes back what the last run did.

Isolation: as root on Linux the command gets a private mount namespace in which the
directory's own path shows the view, so absolute paths into it are covered too. Everything
outside the directory (/tmp, $HOME, the network, other processes) is the real system: this
is a copy-on-write workspace, not a security sandbox. Without root the command starts inside
the view, but absolute paths to the directory reach the real files.

With --sandbox the command runs under bubblewrap (apt-get install bubblewrap): new
namespaces (mount, pid, ipc, uts, cgroup, user where available, and network unless
--allow-net), no capabilities, a session of its own. The host's files are read-only, /tmp is
private and empty, the home directory and /run, /var/run, /var/tmp (where host services' sockets
are) are empty directories, and only the project's path (the copy-on-write view) and the paths
given with --writable can be changed. Still shared with the
host: the environment variables, what the host's files let anyone read, and with --allow-net
the network. It is a container-style boundary, not a virtual machine: kernel bugs are out of
its reach.

Examples:
  $ agentfs run -- sh -c 'npm install && npm test'
  $ agentfs run --sandbox -- sh -c 'make && make test'
  $ agentfs run --sandbox --allow-net --writable ~/.npm -- npm install
  $ agentfs run --db .agentfs/refactor.db -- node tools/rewrite.mjs
  $ agentfs diff .agentfs/refactor.db && agentfs commit .agentfs/refactor.db`,
    )
    .option(
      '--no-snapshot',
      'do not snapshot the session first (then agentfs undo cannot take it back)',
    )
    .option('--sandbox', 'run the command under bubblewrap: read-only host, no network, no home')
    .option('--allow-net', 'with --sandbox: keep the network')
    .option(
      '--writable <path>',
      'with --sandbox: a host path the command may change (repeatable)',
      collect,
      [],
    )
    .option(
      '--read <path>',
      'with --sandbox: a host path shown read-only inside the hidden home (repeatable)',
      collect,
      [],
    )
    .option(
      '--commit-delay <ms>',
      `commit the command's changes together, each at most this many ms after it is made (default ${RUN_COMMIT_DELAY_MS}; 0: one commit per change); fsync commits at once`,
      commitDelayArg,
    )
    .action(async (argv: string[], o: RunFlags) => {
      const sandboxed = sandboxSettings(o)
      const project = resolve('.')
      const session = o.db ?? `run-${stamp()}`
      const dbPath = runSessionPath(session)
      const agent = await openSession(dbPath, project)
      // "agentfs undo DB" restores this: the session as it was before the command ran.
      if (o.snapshot)
        await agent.snapshot(undefined, {
          kind: 'auto',
          reason: `before run: ${argv.join(' ')}`.slice(0, 200),
        })
      const view = await mkdtemp(join(tmpdir(), 'agentfs-run-'))
      let code = 1
      try {
        const own = mountSession(agent, o.commitDelay ?? RUN_COMMIT_DELAY_MS)
        const mounted = await mount(await openOverlay(own.db, { fs: own.fs }), view, {
          changes: own.changes,
          flush: own.db.flush,
        })
        // The command owns the terminal: Ctrl-C reaches it; we clean up after it exits.
        const ignore = () => {}
        process.on('SIGINT', ignore)
        process.on('SIGTERM', ignore)
        try {
          code = sandboxed
            ? await runSandboxed(argv, {
                ...sandboxed,
                project,
                view,
                // The project's own databases, and every run session (this one among them).
                hideDirs: [join(project, '.agentfs'), runsDir()],
                hideFiles: ['', '-wal', '-shm', '-journal'].map((end) => `${dbPath}${end}`),
              })
            : await runIn(argv, view, project, canUseNamespace())
        } finally {
          process.off('SIGINT', ignore)
          process.off('SIGTERM', ignore)
          await mounted.unmount()
        }
        const changes = await (await openOverlay(agent.db)).diff()
        const shown = session
        process.stderr.write(
          changes.length === 0
            ? `agentfs run: no changes (session ${shown})\n`
            : `agentfs run: ${changes.length} change(s) kept in ${shown}; review with "agentfs diff ${shown}", apply with "agentfs commit ${shown}"\n`,
        )
      } finally {
        await agent.close()
        if (existsSync(view)) await rmdir(view).catch(() => {})
      }
      process.exitCode = code
    })
}

/** `agentfs runs`: the sessions `agentfs run` kept, for this directory or all. */
export function registerRuns(program: Command): void {
  program
    .command('runs')
    .description(
      'list the sessions "agentfs run" kept (in the state directory, not the project): name, changes, last change',
    )
    .option('--all', 'sessions of every project, not only of the current directory')
    .option('--json', 'print JSON')
    .action(async (o: { all?: boolean; json?: boolean }) => {
      const dir = runsDir()
      const project = resolve('.')
      const names = existsSync(dir)
        ? (await readdir(dir)).filter((f) => f.endsWith('.db')).sort()
        : []
      const rows: { name: string; project: string; changes: number; modified: string }[] = []
      for (const file of names) {
        const path = join(dir, file)
        const agent = await openExisting(path).catch(() => undefined)
        if (!agent) continue
        try {
          const base = await readOverlayBase(agent.db)
          if (base?.kind !== 'host' || (!o.all && base.path !== project)) continue
          const changes = (await (await openOverlay(agent.db)).diff()).length
          const modified = (await stat(path)).mtime.toISOString()
          rows.push({ name: file.slice(0, -3), project: base.path, changes, modified })
        } finally {
          await agent.close()
        }
      }
      if (o.json) return void process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`)
      if (rows.length === 0)
        return void process.stdout.write(
          `no run sessions${o.all ? '' : ` for ${project} (--all lists every project's)`}\n`,
        )
      for (const r of rows)
        process.stdout.write(
          `${r.name}  ${r.changes} change(s)  ${r.modified}${o.all ? `  ${r.project}` : ''}\n`,
        )
    })
}
