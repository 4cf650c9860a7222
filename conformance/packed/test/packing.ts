import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import ts from 'typescript'
import { afterAll, beforeAll, expect } from 'vitest'

// What a user gets from the registry: every published package is packed (`pnpm pack` rewrites
// `workspace:` ranges as publishing does), then installed from the tarballs into scratch
// projects outside the workspace, one per scenario, so a dependency a package uses but does not
// declare fails here (pnpm does not hoist). `pnpm.overrides` points every @agentfs name at its
// tarball. Third-party packages come from the registry at the versions the workspace tests.
// better-sqlite3 is the one exception: this machine cannot download its prebuilt binary, so
// the copy built for the workspace is packed as it is (the npm resolution of its range is
// checked separately below).

export const run = promisify(execFile)
export const repo = fileURLToPath(new URL('../../../', import.meta.url))
/** Packages whose README has an install line and code blocks (every published library). */
export const README_PACKAGES = [
  'agent-tools',
  'ai-sdk',
  'core',
  'deepagents',
  'driver-better-sqlite3',
  'driver-libsql',
  'driver-node-sqlite',
  'driver-turso',
  'fs',
  'history',
  'inspector',
  'just-bash',
  'kv',
  'mastra',
  'mcp',
  'memory',
  'openai-agents',
  'overlay',
  'sdk',
  'sync',
  'tool-calls',
]

/** Every published package's folder: the libraries, the CLI and the conformance kit. */
export const PACKAGE_DIRS = [
  ...README_PACKAGES.map((p) => `packages/${p}`),
  'packages/fuse',
  'apps/cli',
  'conformance',
]

/** The scratch folder (set when packing starts) and the tarball of each package name. */
export const packed = { work: '', tarballs: new Map<string, string>() }
const tarballs = packed.tarballs

interface Manifest {
  readonly name: string
  readonly version: string
  readonly dependencies?: Record<string, string>
  readonly devDependencies?: Record<string, string>
}

export async function manifest(dir: string): Promise<Manifest> {
  return JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'))
}

/**
 * better-sqlite3 as built in the workspace, packed without its sources; `unbuilt` leaves out
 * the native module too (what pnpm 10 installs when its build script was not approved).
 */
export async function packBetterSqlite3(unbuilt: boolean): Promise<string> {
  // The workspace's better-sqlite3 is tools/better-sqlite3, which picks the build for this
  // Node.js (12 or 13): that real package is what a user's install brings.
  const selector = join(repo, 'tools/better-sqlite3')
  const real = createRequire(join(selector, 'package.json'))(join(selector, 'select.cjs')) as string
  const require = createRequire(join(selector, 'package.json'))
  const source = dirname(require.resolve(`${real}/package.json`))
  const name = unbuilt ? 'better-sqlite3-unbuilt' : 'better-sqlite3'
  const staging = join(packed.work, name, 'package')
  const skip = unbuilt
    ? /[\\/](deps|src|node_modules|build|prebuilds)$/
    : /[\\/](deps|src|node_modules)$/
  await cp(source, staging, {
    recursive: true,
    dereference: true,
    filter: (path) => !skip.test(path),
  })
  const file = join(packed.work, `${name}.tgz`)
  await run('tar', ['czf', file, '-C', dirname(staging), 'package'])
  await rm(dirname(staging), { recursive: true })
  return file
}

/** Runs a command; a failure carries its stderr. */
export async function sh(
  file: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<string> {
  try {
    // Bounded: a stuck install or script fails the test with its output instead of hanging.
    return (await run(file, args, { ...options, maxBuffer: 16 << 20, timeout: 150_000 })).stdout
  } catch (error) {
    const { stderr, stdout } = error as { stderr?: string; stdout?: string }
    throw new Error(`${file} ${args.join(' ')} failed:\n${stdout ?? ''}\n${stderr ?? ''}`)
  }
}

/** The exact versions the workspace tests third-party packages at. */
export async function workspacePins(): Promise<Map<string, string>> {
  const pins = new Map<string, string>()
  for (const dir of [...PACKAGE_DIRS, 'conformance/packed']) {
    const m = await manifest(join(repo, dir))
    for (const deps of [m.dependencies, m.devDependencies])
      for (const [name, version] of Object.entries(deps ?? {}))
        if (/^\d+\.\d+\.\d+$/.test(version)) pins.set(name, version)
  }
  return pins
}

/**
 * A scratch project with `packages` installed: AgentFS names and better-sqlite3 from the
 * tarballs, anything else from the registry at the workspace's version.
 */
export async function project(
  name: string,
  packages: string[],
): Promise<{ dir: string; installed: string[] }> {
  const dir = join(packed.work, name)
  await mkdir(dir, { recursive: true })
  const pins = await workspacePins()
  const deps: Record<string, string> = {}
  for (const dep of packages) {
    const file = tarballs.get(dep)
    const version = file ? `file:${file}` : pins.get(dep)
    if (version === undefined) throw new Error(`no version of ${dep} is pinned in the workspace`)
    // `better-sqlite3-unbuilt` is better-sqlite3 without its native module.
    deps[dep.replace(/-unbuilt$/, '')] = version
  }
  const overrides: Record<string, string> = {}
  // Every AgentFS name, direct or transitive, resolves to its tarball (a direct dependency
  // alone would leave the transitive `@agentfs/core@0.1.0` edges to the registry).
  for (const [dep, file] of tarballs)
    if (!dep.endsWith('-unbuilt')) overrides[dep] = deps[dep] ?? `file:${file}`
  await writeFile(
    join(dir, 'package.json'),
    JSON.stringify({
      name: `scratch-${name}`,
      private: true,
      type: 'module',
      dependencies: deps,
      pnpm: { overrides },
    }),
  )
  // As the CLI README says for pnpm 10: the FUSE binding's build script is allowed (a tarball
  // dependency is named with its spec, relative to the project).
  const fuse = tarballs.get('@agentfs/fuse')
  if (fuse !== undefined)
    await writeFile(
      join(dir, 'pnpm-workspace.yaml'),
      `onlyBuiltDependencies:\n  - ${JSON.stringify(`@agentfs/fuse@file:${relative(dir, fuse)}`)}\n`,
    )
  await sh('pnpm', ['install', '--config.confirmModulesPurge=false'], {
    cwd: dir,
    env: { ...process.env, CI: 'true' },
  })
  const installed = (await readdir(join(dir, 'node_modules', '.pnpm'))).filter(
    (entry) => entry !== 'lock.yaml' && entry !== 'node_modules',
  )
  return { dir, installed }
}

/** What a package's README tells the reader to install (its first `pnpm add` line). */
export async function installLine(dir: string): Promise<string[]> {
  const text = await readFile(join(repo, dir, 'README.md'), 'utf8')
  const line = /^pnpm add ([^#\n]+)/m.exec(text)
  if (!line) throw new Error(`${dir}/README.md has no install line`)
  return line[1]!.trim().split(/\s+/)
}

/** Runs a module in the scratch project; returns its stdout. */
export async function node(dir: string, file: string, code: string): Promise<string> {
  await writeFile(join(dir, file), code)
  return sh(process.execPath, [file], { cwd: dir })
}

/**
 * The ```ts blocks a package's README ships with: `run` the runnable ones, `all` including
 * those marked as not runnable alone (they need a model or a project).
 */
export async function readmeBlocks(
  dir: string,
  pkg: string,
): Promise<{ run: string[]; all: string[] }> {
  const text = await readFile(join(dir, 'node_modules', pkg, 'README.md'), 'utf8')
  const run: string[] = []
  const all: string[] = []
  for (const match of text.matchAll(/(<!-- doctest: skip \([^)]*\) -->\n)?```ts\n([\s\S]*?)```/g)) {
    all.push(match[2]!)
    if (match[1] === undefined) run.push(match[2]!)
  }
  return { run, all }
}

/** The packages a block imports. */
export const importsOf = (code: string) =>
  [...code.matchAll(/^import .* from '([^']+)'/gm)]
    .map((m) => m[1]!)
    .filter((m) => !m.startsWith('.'))

export function transpile(code: string): string {
  return ts.transpileModule(`${code}\nexport {}\n`, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText
}

/** The AgentFS packages `names` depend on at run time, transitively, themselves included. */
export async function dependencyClosure(names: string[]): Promise<string[]> {
  const dirOf = new Map<string, string>()
  for (const dir of PACKAGE_DIRS) dirOf.set((await manifest(join(repo, dir))).name, dir)
  const seen = new Set<string>()
  const queue = names.filter((n) => dirOf.has(n))
  while (queue.length > 0) {
    const name = queue.pop()!
    if (seen.has(name)) continue
    seen.add(name)
    const deps = (await manifest(join(repo, dirOf.get(name)!))).dependencies ?? {}
    for (const dep of Object.keys(deps)) if (dirOf.has(dep)) queue.push(dep)
  }
  return [...seen]
}

export const agentfsIn = (installed: string[]) =>
  installed
    .filter((entry) => entry.startsWith('@agentfs+'))
    .map((entry) => `@agentfs/${entry.slice('@agentfs+'.length).split('@')[0]}`)
    .sort()

/** Packs every published package once for the test file that calls it, and cleans up after. */
export function usePackedTarballs(): void {
  beforeAll(async () => {
    packed.work = await mkdtemp(join(tmpdir(), 'agentfs-packed-'))
    for (const dir of PACKAGE_DIRS) {
      const { name, version } = await manifest(join(repo, dir))
      await run('pnpm', ['pack', '--pack-destination', packed.work], { cwd: join(repo, dir) })
      const file = join(packed.work, `${name.slice(1).replace('/', '-')}-${version}.tgz`)
      expect(existsSync(file), file).toBe(true)
      tarballs.set(name, file)
    }
    tarballs.set('better-sqlite3', await packBetterSqlite3(false))
    tarballs.set('better-sqlite3-unbuilt', await packBetterSqlite3(true))
  })

  afterAll(async () => {
    if (packed.work) await rm(packed.work, { recursive: true, force: true })
  })
}
