import { type SpawnSyncOptions, spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { afterAll, beforeAll } from 'vitest'
import { fuseProblem } from '../src/fuse.js'

const here = fileURLToPath(new URL('.', import.meta.url))

/** Bundles the CLI from source (workspace packages through their source condition). */
export async function bundleCli(): Promise<{ cli: string; dispose(): Promise<void> }> {
  const outDir = join(here, '..', '.tmp')
  await mkdir(outDir, { recursive: true })
  const cli = join(outDir, `agentfs-${process.pid}-${Math.random().toString(36).slice(2)}.mjs`)
  await build({
    entryPoints: [join(here, '..', 'src', 'cli.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: cli,
    conditions: ['@agentfs/source'],
    external: [
      'better-sqlite3',
      'better-sqlite3-multiple-ciphers',
      '@libsql/client',
      // Loaded only by `serve mcp --bash`: kept out so every other command starts without it.
      '@agentfs/just-bash',
      'just-bash',
      'fuse-native',
      '@agentfs/fuse',
      // Serves its web app from its own build (dist/ui), found next to its module.
      '@agentfs/inspector',
      '@tursodatabase/sync',
      '@tursodatabase/database',
    ],
    banner: {
      js: "import { createRequire as bannerRequire } from 'node:module'; const require = bannerRequire(import.meta.url);",
    },
    logLevel: 'silent',
  })
  return { cli, dispose: () => rm(cli, { force: true }) }
}

/**
 * Test-file scaffolding: the CLI bundled once and a scratch working directory, both removed
 * after the file's tests; `ready` receives them before the first test.
 */
export function useCliSandbox(
  prefix: string,
  ready: (sandbox: { cli: string; cwd: string }) => void,
) {
  let dispose: (() => Promise<void>) | undefined
  let cwd: string | undefined
  beforeAll(async () => {
    const bundled = await bundleCli()
    dispose = bundled.dispose
    const dir = await mkdtemp(join(tmpdir(), prefix))
    cwd = dir
    // agentfs run keeps its sessions in the user's state directory: the test's own here.
    process.env.AGENTFS_STATE_DIR = join(dir, '.state')
    ready({ cli: bundled.cli, cwd: dir })
  }, 60_000)
  afterAll(async () => {
    await dispose?.()
    if (cwd) await rm(cwd, { recursive: true, force: true })
  })
}

/** Runs the bundled CLI synchronously: exit code, stdout, stderr. */
export function runCli(
  cli: string,
  args: string[],
  options: SpawnSyncOptions & { input?: string },
) {
  const result = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', ...options })
  return { code: result.status, out: String(result.stdout), err: String(result.stderr) }
}

/** Runs a bash script in `cwd`; fails loudly with its stderr. */
export function sh(script: string, cwd: string, env: NodeJS.ProcessEnv = {}): string {
  const result = spawnSync('bash', ['-euo', 'pipefail', '-c', script], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...env },
  })
  if (result.status !== 0)
    throw new Error(`script failed (${result.status}) in ${cwd}:\n${result.stderr}${result.stdout}`)
  return result.stdout
}

export interface TreeEntry {
  type: 'file' | 'dir' | 'symlink' | 'other'
  mode?: number
  size?: number
  sha256?: string
  target?: string
}

/** Everything a tree holds that two equivalent trees must share (not inode numbers or dir times). */
export async function snapshot(
  root: string,
  skip: (rel: string) => boolean = () => false,
): Promise<Record<string, TreeEntry>> {
  const out: Record<string, TreeEntry> = {}
  const walk = async (rel: string): Promise<void> => {
    for (const name of (await readdir(join(root, rel))).sort()) {
      const path = rel ? `${rel}/${name}` : name
      if (skip(path)) continue
      const full = join(root, path)
      const s = await lstat(full)
      if (s.isSymbolicLink()) out[path] = { type: 'symlink', target: await readlink(full) }
      else if (s.isDirectory()) {
        out[path] = { type: 'dir', mode: s.mode & 0o7777 }
        await walk(path)
      } else if (s.isFile())
        out[path] = {
          type: 'file',
          mode: s.mode & 0o7777,
          size: s.size,
          sha256: createHash('sha256')
            .update(await readFile(full))
            .digest('hex'),
        }
      else out[path] = { type: 'other', mode: s.mode }
    }
  }
  await walk('')
  return out
}

/**
 * Whether the FUSE tests can run. Outside CI they are skipped with one printed line saying why
 * and how to enable them; under `CI=true` FUSE is required and its absence fails the run.
 */
export function fuseTests(name: string): boolean {
  const problem = fuseProblem()
  if (problem === undefined) return true
  if (process.env.CI === 'true')
    throw new Error(`${name}: FUSE is required under CI=true but ${problem}`)
  console.log(
    `${name} skipped: ${problem}. Enable them with: apt-get install fuse3 libfuse3-dev pkg-config (as root), then pnpm install and run the tests again.`,
  )
  return false
}

/** Starts `agentfs mount` (the bundled CLI in `cwd`) and resolves once it reports the mount. */
export async function startMountIn(
  { cli, cwd }: { cli: string; cwd: string },
  db: string,
  mountpoint: string,
  ...flags: string[]
) {
  await mkdir(mountpoint, { recursive: true })
  const child = spawn(process.execPath, [cli, 'mount', ...flags, db, mountpoint], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (d) => {
    out += d
  })
  child.stderr.on('data', (d) => {
    err += d
  })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`mount did not start: ${err}`)), 20_000)
    child.stdout.on('data', () => {
      if (out.includes('mounted')) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.on('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`mount exited with ${code}: ${err}`))
    })
  })
  return {
    child,
    output: () => ({ out, err }),
    /** SIGTERM, then the exit code. */
    stop: (signal: NodeJS.Signals = 'SIGTERM') =>
      new Promise<number | null>((resolve) => {
        child.removeAllListeners('exit')
        child.on('exit', (code) => resolve(code))
        child.kill(signal)
      }),
  }
}
