import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

export interface FuseRow {
  readonly command: string
  readonly plainSeconds: number
  readonly fuseSeconds: number
  readonly ratio: number
}

/** Where the built agentfs CLI is, or why W12 cannot run here. */
export function fuseReadiness(): { cli: string } | { skip: string } {
  if (!existsSync('/dev/fuse')) return { skip: '/dev/fuse is not available' }
  const onPath = (process.env.PATH ?? '')
    .split(':')
    .some((dir) => dir !== '' && existsSync(`${dir}/fusermount`))
  if (!onPath) return { skip: 'fusermount is not installed (apt-get install fuse3 libfuse2)' }
  const libfuse = ['/usr/lib/x86_64-linux-gnu', '/lib/x86_64-linux-gnu', '/usr/lib', '/lib']
  if (!libfuse.some((dir) => existsSync(`${dir}/libfuse.so.2`)))
    return { skip: 'libfuse.so.2 is not installed (apt-get install libfuse2)' }
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

const time = (cmd: string, cwd: string) => {
  const start = process.hrtime.bigint()
  execFileSync('bash', ['-c', cmd], { cwd, stdio: 'ignore' })
  return Number(process.hrtime.bigint() - start) / 1e9
}

/**
 * W12: shell tools on the FUSE mount against a plain directory — `cp -r` of a source tree in,
 * `ls -lR`, `grep -r`, git add + commit of the tree, `rm -r` — with the same tree and commands on
 * both.
 */
export async function runFuseWorkload(cli: string, files: number): Promise<FuseRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-bench-fuse-'))
  let mount: ChildProcess | undefined
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
    const commands = [
      ['cp -r', 'cp -r ../src tree'],
      ['ls -lR', 'ls -lR tree > /dev/null'],
      ['grep -r', 'grep -r token_7_ tree > /dev/null'],
      [
        'git add+commit',
        'cd tree && git init -q && git add -A && git -c user.name=bench -c user.email=bench@example.com commit -qm import',
      ],
      ['rm -r', 'rm -r tree'],
    ] as const
    const plain = join(dir, 'plain')
    await mkdir(plain)
    const plainTimes = commands.map(([, cmd]) => time(cmd, plain))

    const mnt = join(dir, 'mnt')
    await mkdir(mnt)
    execFileSync(process.execPath, [cli, 'init', join(dir, 'fuse.db')], { stdio: 'ignore' })
    const child = spawn(process.execPath, [cli, 'mount', join(dir, 'fuse.db'), mnt], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    mount = child
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => {
        if (String(d).includes('mounted')) resolve()
      })
      child.on('exit', (code) => reject(new Error(`agentfs mount exited with ${code}`)))
    })
    // The mountpoint's own name for the source: ../src relative to mnt.
    const fuseTimes = commands.map(([, cmd]) => time(cmd, mnt))
    return commands.map(([command], i) => ({
      command,
      plainSeconds: plainTimes[i]!,
      fuseSeconds: fuseTimes[i]!,
      ratio: fuseTimes[i]! / plainTimes[i]!,
    }))
  } finally {
    if (mount && mount.exitCode === null) {
      const child = mount
      await new Promise<void>((resolve) => {
        child.removeAllListeners('exit')
        child.on('exit', () => resolve())
        child.kill('SIGTERM')
      })
    }
    await rm(dir, { recursive: true, force: true })
  }
}
