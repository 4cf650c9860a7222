import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type SyncServer, startSyncServer } from '@agentfs/turso-sync-server'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { fuseTests, runCli, sh, useCliSandbox } from './helpers.js'

// Every `$ …` line under "Examples:" in every help text runs as written, in a folder prepared
// with what the examples name (my-agent with /notes/todo.md, ./project, session.db …), each in
// a fresh copy of it. Two host paths are moved into that folder so the test touches nothing
// outside it: /tmp/agent and /mnt/review. `mount` examples run until "mounted" and are then
// stopped; `mount` and `run` need FUSE (skipped with a printed reason outside CI). The sync
// examples' server (libsql://agents-org.turso.io) is a local `tursodb --sync-server` started here.

const fuse = fuseTests('CLI help examples on FUSE')

let cli: string
let cwd: string
useCliSandbox('agentfs-examples-', (sandbox) => {
  ;({ cli, cwd } = sandbox)
})
let server: SyncServer
beforeAll(async () => {
  server = await startSyncServer({ maxSeconds: 900 })
})
afterAll(() => server.stop())
const SYNC_URL = 'libsql://agents-org.turso.io'

const WORLD = String.raw`
agentfs init my-agent
agentfs fs mkdir -p my-agent /notes
agentfs fs mkdir my-agent /src
agentfs fs mkdir my-agent /build
agentfs fs write my-agent /notes/todo.md '# Todo'
agentfs fs write my-agent /a.txt 'a'
agentfs fs write my-agent /draft.md 'draft'
agentfs fs write my-agent /tmp.txt 'scratch'
agentfs fs write my-agent /src/main.ts 'export {}'
agentfs fs write my-agent /build/out.js 'built'
agentfs kv set my-agent user:prefs '{"theme":"dark"}'
agentfs kv set my-agent note 'a note'
mkdir -p docs project/src tools data
printf '# Docs\n' > docs/README.md
printf '# Project\n' > project/README.md
printf 'export {}\n' > project/src/index.ts
printf '{"name":"example","version":"1.0.0","private":true,"scripts":{"test":"echo tested"}}\n' > package.json
printf 'all:\n\t@echo built\ntest:\n\t@echo tested\n' > Makefile
printf "console.log('rewrote')\n" > tools/rewrite.mjs
head -c 4096 /dev/urandom > report.pdf
agentfs init session.db --base ./project
agentfs fs write session.db /NOTES.md 'edited in the session'
agentfs init old-agent.db
agentfs init old.db
agentfs init agent.db
agentfs init --sync-url ${SYNC_URL} agent-a
agentfs init --sync-url ${SYNC_URL} agent-b
`

/** Commands whose examples start long-running processes or need FUSE. */
const needsFuse = (line: string) => /agentfs (mount|run|exec)\b/.test(line)

function helpTexts(): string[] {
  const texts = [runCli(cli, ['--help'], { cwd }).out]
  const commands = (help: string) =>
    [...(help.split('Commands:\n')[1] ?? '').split('\n\n')[0]!.matchAll(/^ {2}(\S+)/gm)]
      .map((m) => m[1]!)
      .filter((name) => name !== 'help')
  for (const name of commands(texts[0]!)) {
    const help = runCli(cli, [name, '--help'], { cwd }).out
    if (help.includes('Commands:'))
      for (const sub of commands(help)) texts.push(runCli(cli, [name, sub, '--help'], { cwd }).out)
    else texts.push(help)
  }
  return texts
}

/** The examples of each help text, in the order shown. */
function examples(): string[][] {
  return helpTexts()
    .map((help) =>
      [...(help.split('Examples:\n')[1] ?? '').matchAll(/^ {2}\$ (.+)$/gm)].map((m) => m[1]!),
    )
    .filter((lines) => lines.length > 0)
}

const root = new URL('../../../', import.meta.url).pathname

/**
 * The shell blocks of the README and the CLI README, line by line. The repository's own
 * commands (`pnpm …`: install, demo, check) are run by `.ci/run` as printed, through
 * scripts/readme-commands.mjs; every other block is made of agentfs lines, run here.
 */
async function readmeBlocks(): Promise<{ file: string; lines: string[] }[]> {
  const blocks: { file: string; lines: string[] }[] = []
  for (const file of ['README.md', 'apps/cli/README.md']) {
    const text = await readFile(join(root, file), 'utf8')
    for (const m of text.matchAll(/^```(?:sh|bash|shell)\n([\s\S]*?)^```/gm))
      blocks.push({
        file,
        lines: m[1]!.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#')),
      })
  }
  return blocks
}

/** The repository's own commands (install, build, demo, check): run by .ci/run, not here. */
const repoCommand = (line: string) => /^(npm install -g pnpm@[\d.]+ && )?pnpm /.test(line)

/** The databases a block creates with `agentfs init`, as the files they become. */
const initialised = (lines: string[]) =>
  lines.flatMap((line) =>
    [...line.matchAll(/agentfs init (?:--\S+ \S+ )*([^\s-]\S*)/g)].map((m) =>
      m[1]!.includes('.') || m[1]!.includes('/') ? m[1]! : `.agentfs/${m[1]}.db`,
    ),
  )

// HOME is the sandbox's: examples keep keys in ~/ and must not touch the user's own.
const env = () => ({ ...process.env, PATH: `${bin}:${process.env.PATH}`, NO_COLOR: '1', HOME: cwd })

let world: string
let bin: string
let groups: string[][]

/**
 * A fresh copy of the world for one help text; without its databases when the examples start
 * by creating them.
 */
async function fresh(name: string, lines: string[]): Promise<string> {
  const dir = join(cwd, name)
  await cp(world, dir, { recursive: true })
  if (/^agentfs init /.test(lines[0]!))
    for (const entry of await readdir(dir))
      if (entry === '.agentfs' || entry.endsWith('.db'))
        await rm(join(dir, entry), { recursive: true })
  // Two host paths of the examples, moved into the copy.
  await mkdir(join(dir, 'mnt-review'))
  return dir
}

const hostPaths = (line: string, dir: string) =>
  line
    .replaceAll(SYNC_URL, server.url)
    .replaceAll('/tmp/agent', join(dir, 'tmp-agent'))
    .replaceAll('/mnt/review', join(dir, 'mnt-review'))

function runLine(line: string, dir: string, prefix = ''): void {
  const result = spawnSync('sh', ['-c', `${prefix}${hostPaths(line, dir)}`], {
    cwd: dir,
    encoding: 'utf8',
    env: env(),
    timeout: 60_000,
    input: '',
  })
  expect({ line, code: result.status, err: result.stderr }).toEqual({
    line,
    code: 0,
    err: expect.not.stringMatching(/agentfs: (?!warning)/),
  })
}

/** `agentfs ui` examples serve until stopped. */
const serves = (line: string) => /agentfs ui\b/.test(line)

/**
 * A mount example runs until it says "mounted" (a ui example until it prints its address);
 * SIGTERM stops it and it exits 0.
 */
async function runMount(line: string, dir: string, ready = 'mounted'): Promise<void> {
  // `exec` makes the command the shell's own process, so the signal reaches it.
  const script = hostPaths(line, dir).replace(/(^|&& )agentfs (mount|ui)/, '$1exec agentfs $2')
  const child = spawn('sh', ['-c', script], { cwd: dir, env: env() })
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
  const deadline = Date.now() + 20_000
  while (!output.includes(ready) && Date.now() < deadline && child.exitCode === null)
    await new Promise((resolve) => setTimeout(resolve, 50))
  expect(output, line).toContain(ready)
  child.kill('SIGTERM')
  expect(await exited, line).toBe(0)
}

describe('CLI help examples', () => {
  test('the world the examples assume can be built', async () => {
    bin = join(cwd, 'bin')
    await mkdir(bin, { recursive: true })
    await writeFile(join(bin, 'agentfs'), `#!/bin/sh\nexec "${process.execPath}" "${cli}" "$@"\n`)
    await chmod(join(bin, 'agentfs'), 0o755)
    world = join(cwd, 'world')
    await mkdir(world)
    // The examples' home (HOME is the sandbox): npm's cache, which a sandbox example may write.
    await mkdir(join(cwd, '.npm'), { recursive: true })
    sh(WORLD.replaceAll(SYNC_URL, server.url), world, { PATH: `${bin}:${process.env.PATH}` })
    groups = examples()
    expect(groups.length).toBe(54)
    expect(groups.flat().length).toBeGreaterThanOrEqual(54)
  }, 300_000) // some 40 CLI processes and a sync server: slow when the machine is busy

  test('every example exits 0, in the order its help shows, in a fresh copy of that world', async () => {
    let n = 0
    for (const [i, lines] of groups.entries()) {
      if (lines.some(needsFuse)) continue
      const dir = await fresh(`ex-${i}`, lines)
      for (const line of lines)
        if (serves(line)) await runMount(line, dir, 'http://127.0.0.1:')
        else runLine(line, dir)
      n += lines.length
      await rm(dir, { recursive: true, force: true })
    }
    expect(n).toBeGreaterThanOrEqual(40)
  }, 300_000)

  test.skipIf(!fuse)(
    'every help text with mount or run examples works on FUSE',
    async () => {
      let n = 0
      for (const [i, lines] of groups.entries()) {
        if (!lines.some(needsFuse)) continue
        const dir = await fresh(`fuse-${i}`, lines)
        for (const line of lines) {
          // A mount runs until signalled; `agentfs mount` alone lists mounts and returns.
          if (/agentfs mount\s+[^\s#]/.test(line)) await runMount(line, dir)
          else runLine(line, dir)
          n++
        }
        await rm(dir, { recursive: true, force: true })
      }
      expect(n).toBeGreaterThanOrEqual(8)
    },
    300_000,
  )
})

describe('README examples', () => {
  test('every shell block of the README and the CLI README runs as printed, line by line', async () => {
    const blocks = await readmeBlocks()
    expect(blocks.length).toBeGreaterThanOrEqual(4)
    // The repository's commands: each is one of what .ci/run runs through readme-commands.mjs.
    const ci = await readFile(join(root, '.ci', 'run'), 'utf8')
    const { readmeCommands } = await import(join(root, 'scripts', 'readme-commands.mjs'))
    const printed = Object.values(await readmeCommands()) as string[]
    for (const { file, lines } of blocks.filter((b) => b.lines.some(repoCommand))) {
      expect(lines.length, file).toBe(1)
      expect(printed, file).toContain(lines[0])
    }
    for (const which of Object.keys(await readmeCommands()))
      expect(ci).toContain(`scripts/readme-commands.mjs ${which}`)
    let n = 0
    for (const [i, { file, lines }] of blocks.entries()) {
      if (lines.some(repoCommand)) continue
      const dir = join(cwd, `readme-${i}`)
      await cp(world, dir, { recursive: true })
      await mkdir(join(dir, 'mnt-review'))
      // What a block creates must not exist yet: the database and its side files (-wal, -info…).
      for (const db of initialised(lines)) {
        const folder = join(dir, db, '..')
        const name = db.split('/').at(-1)!
        for (const entry of await readdir(folder))
          if (entry.startsWith(name))
            await rm(join(folder, entry), { recursive: true, force: true })
      }
      let prefix = ''
      for (const printedLine of lines) {
        // A run's session is named by its start time: the example's name stands for the last.
        const state = join(process.env.AGENTFS_STATE_DIR!, 'runs')
        const kept = existsSync(state) ? await readdir(state) : []
        const runs = kept.filter((f) => /^run-.*\.db$/.test(f))
        const line = printedLine.replace(
          /run-\d{8}-\d{6}/g,
          runs.sort().at(-1)?.slice(0, -3) ?? '$&',
        )
        if (serves(line)) {
          await runMount(line, dir, 'http://127.0.0.1:')
          n++
          continue
        }
        if (needsFuse(line) || /run-\d{8}/.test(printedLine)) {
          if (!fuse) continue
          if (/agentfs mount\s+[^\s#]/.test(line)) {
            await runMount(line, dir)
            n++
            continue
          }
        }
        // An exported placeholder (`…`) stands for the user's own value.
        if (/^export /.test(line))
          prefix += `${line.replace(/\s+#.*$/, '').replace('…', 'token-0')}; `
        else runLine(line, dir, prefix)
        n++
      }
      expect(n, file).toBeGreaterThan(0)
      await rm(dir, { recursive: true, force: true })
    }
    expect(n).toBeGreaterThanOrEqual(fuse ? 30 : 20)
  }, 300_000)
})
