import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export interface FuseRow {
  readonly command: string
  /** Medians over the rounds: a plain directory on the same disk as the database. */
  readonly plainSeconds: number
  /** The same in memory (/dev/shm), where available: no disk writeback in the numbers. */
  readonly tmpfsSeconds?: number
  readonly fuseSeconds: number
  /** fuseSeconds ÷ plainSeconds. */
  readonly ratio: number
  readonly tmpfsRatio?: number
  /** Medians on a mount with grouped commits (`--commit-delay`, {@link GROUPED_DELAY_MS} ms). */
  readonly groupedSeconds: number
  /** groupedSeconds ÷ plainSeconds. */
  readonly groupedRatio: number
  readonly groupedTmpfsRatio?: number
  /**
   * Medians on the floor: an in-memory FUSE filesystem in C whose handlers cost next to nothing
   * (`native/floor-fs.c`), i.e. the kernel's round trips alone. Absent where it cannot be built.
   */
  readonly floorSeconds?: number
  /** floorSeconds ÷ tmpfsSeconds: the least any FUSE filesystem's ratio can be here. */
  readonly floorTmpfsRatio?: number
  /** groupedSeconds ÷ floorSeconds: what AgentFS itself costs over the round trips. */
  readonly groupedFloorRatio?: number
  /** Every round's seconds, plain / tmpfs / mount / grouped mount / floor. */
  readonly rounds: {
    readonly plain: number[]
    readonly tmpfs: number[]
    readonly fuse: number[]
    readonly grouped: number[]
    readonly floor: number[]
  }
}

/** The commit delay of W12's second mount. */
export const GROUPED_DELAY_MS = 20

/** Where the built agentfs CLI is, or why W12 cannot run here. */
export function fuseReadiness(): { cli: string } | { skip: string } {
  if (!existsSync('/dev/fuse')) return { skip: '/dev/fuse is not available' }
  const onPath = (process.env.PATH ?? '')
    .split(':')
    .some((dir) => dir !== '' && existsSync(`${dir}/fusermount3`))
  if (!onPath) return { skip: 'fusermount3 is not installed (apt-get install fuse3)' }
  let cli: string
  try {
    cli = join(
      dirname(createRequire(import.meta.url).resolve('@agentfs/cli/package.json')),
      'dist',
      'cli.js',
    )
  } catch {
    return { skip: '@agentfs/cli is not installed' }
  }
  if (!existsSync(cli)) return { skip: `${cli} is not built (pnpm build)` }
  return { cli }
}

/**
 * The floor filesystem's source, `native/floor-fs.c` of this package: looked for upwards from
 * this module, which runs from `src/`, `dist/` or a test's bundle below the package.
 */
function floorSource(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let up = 0; up < 4; up++, dir = dirname(dir)) {
    const candidate = join(dir, 'native', 'floor-fs.c')
    if (existsSync(candidate)) return candidate
  }
  return undefined
}

/**
 * Builds the floor filesystem (`native/floor-fs.c`) into `dir` with the C compiler and libfuse
 * 3's headers (`apt-get install gcc libfuse3-dev pkg-config`): its path, or why it cannot be.
 */
export function buildFloor(dir: string): { path: string } | { skip: string } {
  const source = floorSource()
  if (source === undefined) return { skip: 'native/floor-fs.c is not beside the bench' }
  let flags: string[]
  try {
    flags = execFileSync('pkg-config', ['--cflags', '--libs', 'fuse3'], { encoding: 'utf8' })
      .trim()
      .split(/\s+/)
  } catch {
    return { skip: 'pkg-config finds no fuse3 (apt-get install libfuse3-dev pkg-config)' }
  }
  const path = join(dir, 'floor-fs')
  try {
    execFileSync('cc', ['-O2', '-o', path, source, ...flags], {
      stdio: ['ignore', 'ignore', 'pipe'],
    })
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '').split('\n')[0]
    return { skip: `cc cannot build ${source}: ${stderr || String(error)}` }
  }
  return { path }
}

const time = (cmd: string, cwd: string, src: string, settle: boolean) => {
  // Earlier commands' dirty pages are written out first, so that their writeback does not land
  // in this command's time (on whichever side runs next).
  if (settle) execFileSync('sync')
  const start = process.hrtime.bigint()
  execFileSync('bash', ['-c', cmd], { cwd, stdio: 'ignore', env: { ...process.env, SRC: src } })
  return Number(process.hrtime.bigint() - start) / 1e9
}

const median = (values: number[]) => {
  const sorted = [...values].sort((x, y) => x - y)
  return sorted[Math.floor(sorted.length / 2)] ?? 0
}

const COMMANDS = [
  ['cp -r', 'cp -r "$SRC" tree'],
  ['ls -lR', 'ls -lR tree > /dev/null'],
  ['grep -r', 'grep -r token_7_ tree > /dev/null'],
  [
    'git add+commit',
    'cd tree && git init -q && git add -A && git -c user.name=bench -c user.email=bench@example.com commit -qm import',
  ],
  ['rm -r', 'rm -r tree'],
] as const

/** One round of the commands in `base/round-N`, copying the tree from `src`: seconds each. */
async function round(base: string, n: number, src: string, settle: boolean): Promise<number[]> {
  const where = join(base, `round-${n}`)
  await mkdir(where, { recursive: true })
  return COMMANDS.map(([, cmd]) => time(cmd, where, src, settle))
}

/** How W12 runs: rounds (medians are reported) and whether to `sync` before each command. */
export interface FuseWorkloadOptions {
  readonly rounds: number
  readonly settle: boolean
}

/**
 * W12: shell tools on the FUSE mount against a plain directory — `cp -r` of a source tree in,
 * `ls -lR`, `grep -r`, git add + commit of the tree, `rm -r` — with the same tree and commands on
 * both, in `rounds` rounds (medians reported: a disk's writeback makes single runs of the plain
 * side vary several-fold). The plain directory is on the same disk as the database; where
 * /dev/shm exists the commands also run in memory, the strictest baseline.
 */
export async function runFuseWorkload(
  cli: string,
  files: number,
  { rounds, settle }: FuseWorkloadOptions = { rounds: 3, settle: true },
): Promise<FuseRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-bench-fuse-'))
  const shm = existsSync('/dev/shm') ? await mkdtemp('/dev/shm/agentfs-bench-fuse-') : undefined
  const mounts: ChildProcess[] = []
  /** Starts `command` mounting at `mnt`; resolves once it says it is mounted. */
  const started = async (mnt: string, command: string, args: string[]) => {
    const child = spawn(command, [...args, mnt], { stdio: ['ignore', 'pipe', 'inherit'] })
    mounts.push(child)
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => {
        if (String(d).includes('mounted')) resolve()
      })
      child.on('exit', (code) => reject(new Error(`${command} exited with ${code}`)))
    })
    return mnt
  }
  /** Mounts a new database at `dir/<name>` with `flags`; resolves once it is mounted. */
  const mountNew = async (name: string, flags: string[]) => {
    const mnt = join(dir, name)
    await mkdir(mnt)
    execFileSync(process.execPath, [cli, 'init', join(dir, `${name}.db`)], { stdio: 'ignore' })
    return started(mnt, process.execPath, [cli, 'mount', ...flags, join(dir, `${name}.db`)])
  }
  /** Mounts the floor filesystem at `dir/floor`, or says why it cannot. */
  const mountFloor = async () => {
    const built = buildFloor(dir)
    if ('skip' in built) {
      process.stderr.write(`bench: W12 without its floor: ${built.skip}\n`)
      return undefined
    }
    await mkdir(join(dir, 'floor'))
    return started(join(dir, 'floor'), built.path, [])
  }
  try {
    const per = Math.ceil(files / 20)
    for (let p = 0; p < 20; p++) {
      await mkdir(join(dir, 'src', `pkg${p}`), { recursive: true })
      for (let m = 0; m < per; m++)
        await writeFile(
          join(dir, 'src', `pkg${p}`, `mod${m}.ts`),
          `export const token_${p}_${m} = ${m}\n${'// filler line for a source file of about two KiB\n'.repeat(40)}`,
        )
    }
    if (shm) await cp(join(dir, 'src'), join(shm, 'src'), { recursive: true })
    const mnt = await mountNew('mnt', [])
    const grouped = await mountNew('grouped', ['--commit-delay', String(GROUPED_DELAY_MS)])
    const floorMnt = await mountFloor()
    const plain: number[][] = []
    const tmpfs: number[][] = []
    const fuse: number[][] = []
    const fuseGrouped: number[][] = []
    const floor: number[][] = []
    for (let n = 0; n < rounds; n++) {
      plain.push(await round(join(dir, 'plain'), n, join(dir, 'src'), settle))
      if (shm) tmpfs.push(await round(join(shm, 'plain'), n, join(shm, 'src'), settle))
      // Into the mount, the tree is copied from the host, as into the plain directory.
      fuse.push(await round(join(mnt, 'bench'), n, join(dir, 'src'), settle))
      fuseGrouped.push(await round(join(grouped, 'bench'), n, join(dir, 'src'), settle))
      if (floorMnt) floor.push(await round(join(floorMnt, 'bench'), n, join(dir, 'src'), settle))
    }
    return COMMANDS.map(([command], i) => {
      const p = median(plain.map((r) => r[i]!))
      const t = shm ? median(tmpfs.map((r) => r[i]!)) : undefined
      const f = median(fuse.map((r) => r[i]!))
      const g = median(fuseGrouped.map((r) => r[i]!))
      const fl = floorMnt ? median(floor.map((r) => r[i]!)) : undefined
      return {
        command,
        plainSeconds: p,
        ...(t !== undefined
          ? { tmpfsSeconds: t, tmpfsRatio: f / t, groupedTmpfsRatio: g / t }
          : {}),
        fuseSeconds: f,
        ratio: f / p,
        groupedSeconds: g,
        groupedRatio: g / p,
        ...(fl !== undefined
          ? {
              floorSeconds: fl,
              ...(t !== undefined ? { floorTmpfsRatio: fl / t } : {}),
              groupedFloorRatio: g / fl,
            }
          : {}),
        rounds: {
          plain: plain.map((r) => r[i]!),
          tmpfs: tmpfs.map((r) => r[i]!),
          fuse: fuse.map((r) => r[i]!),
          grouped: fuseGrouped.map((r) => r[i]!),
          floor: floor.map((r) => r[i]!),
        },
      }
    })
  } finally {
    for (const child of mounts) {
      if (child.exitCode !== null) continue
      await new Promise<void>((resolve) => {
        child.removeAllListeners('exit')
        child.on('exit', () => resolve())
        child.kill('SIGTERM')
      })
    }
    await rm(dir, { recursive: true, force: true })
    if (shm) await rm(shm, { recursive: true, force: true })
  }
}
