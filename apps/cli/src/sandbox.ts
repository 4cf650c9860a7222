import { spawn, spawnSync } from 'node:child_process'
import { existsSync, lstatSync, readFileSync, statSync } from 'node:fs'
import { constants } from 'node:os'
import { isAbsolute, resolve } from 'node:path'
import { agentEnv } from './db-key.js'

/**
 * `agentfs run --sandbox`: the command runs under bubblewrap (`bwrap`, Debian's `bubblewrap`)
 * in new namespaces (user where available, mount, pid, ipc, uts, cgroup, and network unless
 * allowed), with every capability dropped and its own session (no terminal injection). The
 * host's files are read-only; the project's own path shows the copy-on-write view (the only
 * writable place besides a private /tmp and the paths given with `--writable`); the user's home
 * and the directories holding host services' unix sockets (/run, /var/run, /var/tmp) are empty
 * directories unless a path in them is exposed with `--writable` or `--read`.
 */
export interface SandboxOptions {
  /** The project directory: its path shows `view` inside the sandbox. */
  readonly project: string
  /** The copy-on-write view (the FUSE mountpoint). */
  readonly view: string
  /** Keep the host's network (default: a network namespace with loopback only). */
  readonly allowNet?: boolean
  /** Host paths the command may change (bound read-write at the same path); from hostPath. */
  readonly writable?: readonly string[]
  /** Host paths shown read-only even where the sandbox hides them; from hostPath. */
  readonly read?: readonly string[]
  /** The home directory to hide (default $HOME); none when undefined or `/`. */
  readonly home?: string | undefined
  /**
   * Directories shown empty (a private tmpfs), mounted after the view: the project's
   * `.agentfs`, so the command can neither read nor change the session's own database.
   */
  readonly hideDirs?: readonly string[]
  /** Files shown as an empty read-only file (the session database and its -wal, -shm). */
  readonly hideFiles?: readonly string[]
}

/** The path as an absolute, existing host path, or an error that says which flag is wrong. */
export function hostPath(flag: string, path: string): string {
  const absolute = resolve(path)
  if (!existsSync(absolute))
    throw new Error(`${flag} ${path}: no such file or directory on the host; create it first`)
  return absolute
}

/** bwrap's arguments for running `argv` in the sandbox (order matters: later mounts win). */
export function bwrapArgs(o: SandboxOptions, argv: readonly string[]): string[] {
  const given = [
    o.project,
    o.view,
    ...(o.read ?? []),
    ...(o.writable ?? []),
    ...(o.hideDirs ?? []),
    ...(o.hideFiles ?? []),
  ]
  if (!given.every((path) => isAbsolute(path)))
    throw new Error('the sandbox needs absolute paths (hostPath gives them)')
  const args = [
    '--die-with-parent',
    '--new-session',
    '--unshare-all',
    ...(o.allowNet ? ['--share-net'] : []),
    '--cap-drop',
    'ALL',
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
  ]
  // Host daemons' unix sockets live in these (docker, dbus, databases): connecting to a socket
  // needs no write to the filesystem, so a read-only view of them is not enough — they are
  // replaced by empty directories.
  for (const dir of SOCKET_DIRS) if (isDirectory(dir) && !isLink(dir)) args.push('--tmpfs', dir)
  const home = o.home
  if (home !== undefined && home !== '/' && isAbsolute(home) && isDirectory(home))
    args.push('--tmpfs', home)
  for (const path of o.read ?? []) args.push('--ro-bind', path, path)
  for (const path of o.writable ?? []) args.push('--bind', path, path)
  // Last: the project's path is the view whatever was mounted above or around it.
  args.push('--bind', o.view, o.project)
  // After the view: what the session keeps of its own (its database) is out of the command's
  // reach, inside the view and out of it (a --db elsewhere would be readable through the
  // read-only host).
  const hiddenDirs = (o.hideDirs ?? []).filter((dir) => isDirectory(dir) && !isLink(dir))
  for (const dir of hiddenDirs) args.push('--tmpfs', dir)
  for (const file of o.hideFiles ?? [])
    if (existsSync(file) && !hiddenDirs.some((dir) => file.startsWith(`${dir}/`)))
      args.push('--ro-bind', '/dev/null', file)
  args.push('--chdir', o.project, '--setenv', 'AGENTFS_SANDBOX', '1', '--', ...argv)
  return args
}

/** Where unix sockets of the host's services are (besides /tmp, already private). */
const SOCKET_DIRS = ['/run', '/var/run', '/var/tmp']

const isLink = (path: string) => {
  try {
    return lstatSync(path).isSymbolicLink()
  } catch {
    return false
  }
}

const isDirectory = (path: string) => {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/** The pids of a process's children (from /proc), or none when it is gone. */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .split(' ')
      .filter((p) => /^\d+$/.test(p))
      .map(Number)
  } catch {
    return []
  }
}

/** Why the sandbox cannot run here, or undefined when it can. */
export function sandboxProblem(): string | undefined {
  if (process.platform !== 'linux') return '--sandbox needs Linux (bubblewrap)'
  const probe = spawnSync(
    'bwrap',
    ['--die-with-parent', '--unshare-all', '--ro-bind', '/', '/', '--', 'true'],
    {
      encoding: 'utf8',
    },
  )
  if (probe.error)
    return '--sandbox needs bubblewrap, which is not installed (apt-get install bubblewrap)'
  if (probe.status !== 0)
    return `bubblewrap cannot create namespaces here (${probe.stderr.trim().split('\n')[0] ?? `status ${probe.status}`}); run as root or enable unprivileged user namespaces`
  return undefined
}

/**
 * Runs `argv` in the sandbox; resolves with its exit status. SIGINT and SIGTERM sent to this
 * process are passed to the command (it has a session of its own, so the terminal does not
 * signal it).
 */
export function runSandboxed(argv: readonly string[], o: SandboxOptions): Promise<number> {
  const args = bwrapArgs(o, argv)
  // bwrap reports the command's host pid on --info-fd, so signals go to it, not to bwrap.
  const child = spawn('bwrap', ['--info-fd', '3', ...args], {
    stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
    env: agentEnv(),
  })
  let info = ''
  let commandPid: number | undefined
  child.stdio[3]?.on('data', (chunk: Buffer) => {
    info += chunk.toString('utf8')
    const match = /"child-pid"\s*:\s*(\d+)/.exec(info)
    if (match) commandPid = Number(match[1])
  })
  // The reported pid is the sandbox's init (bwrap's, pid 1 inside, which ignores signals): the
  // command is its child.
  const forward = (signal: NodeJS.Signals) => {
    const targets = commandPid === undefined ? [] : childrenOf(commandPid)
    if (targets.length === 0 && child.pid !== undefined) targets.push(child.pid)
    for (const pid of targets) {
      try {
        process.kill(pid, signal)
      } catch {
        // Already gone.
      }
    }
  }
  process.on('SIGINT', forward)
  process.on('SIGTERM', forward)
  return new Promise<number>((done, fail) => {
    child.on('error', (error) => {
      process.off('SIGINT', forward)
      process.off('SIGTERM', forward)
      fail(new Error(`cannot start bubblewrap: ${(error as NodeJS.ErrnoException).code ?? error}`))
    })
    child.on('exit', (code, signal) => {
      process.off('SIGINT', forward)
      process.off('SIGTERM', forward)
      done(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0))
    })
  })
}
