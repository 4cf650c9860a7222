import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { nodeSqliteProblem } from '@agentfs/driver-node-sqlite'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { beforeAll, describe, expect, test } from 'vitest'
import {
  agentfsIn,
  dependencyClosure,
  importsOf,
  installLine,
  manifest,
  node,
  packed,
  project,
  README_PACKAGES,
  readmeBlocks,
  repo,
  run,
  sh,
  transpile,
  usePackedTarballs,
} from './packing.js'

const tarballs = packed.tarballs
usePackedTarballs()

const SHARED = process.env.AGENTFS_PACKED_SHARED === '1'
let sharedInstall: Promise<{ dir: string; installed: string[] }> | undefined

/** One project with every README's install line; `pkg`'s blocks run in a folder of it. */
async function sharedProject(pkg: string) {
  sharedInstall ??= (async () => {
    const all = new Set<string>()
    for (const name of README_PACKAGES)
      for (const dep of await installLine(`packages/${name}`)) all.add(dep)
    return project('all-readmes', [...all])
  })()
  const { dir: root, installed } = await sharedInstall
  const dir = join(root, pkg)
  await mkdir(dir, { recursive: true })
  return { root, dir, installed }
}

describe('packed packages installed outside the workspace', () => {
  test('no tarball carries workspace ranges, tests or sources maps pointing outside it', async () => {
    for (const [name, file] of tarballs) {
      if (name.startsWith('better-sqlite3')) continue
      const { stdout: list } = await run('tar', ['tzf', file])
      expect(list, name).toContain('package/LICENSE')
      expect(list, name).toContain('package/README.md')
      expect(list, name).not.toMatch(/package\/(test|src)\//)
      const { stdout: pkg } = await run('tar', ['xzf', file, '-O', 'package/package.json'])
      expect(pkg, name).not.toContain('workspace:')
    }
  })

  // Each README, installed as its install line says, runs its code blocks as written. With
  // AGENTFS_PACKED_SHARED=1 (.ci/run's Node 22 and 24 legs) every install line goes into one
  // project, installed once, and each README runs in its own folder of it: the blocks still run
  // on that Node.js from the tarballs; what each line alone brings is checked on the first leg.
  for (const pkg of README_PACKAGES)
    test(`${pkg}: its README's install line and code blocks work`, async () => {
      const line = await installLine(`packages/${pkg}`)
      const { root, dir, installed } = SHARED
        ? await sharedProject(pkg)
        : await project(pkg, line).then((p) => ({ ...p, root: p.dir }))
      const blocks = await readmeBlocks(root, `@agentfs/${pkg}`)
      expect(blocks.all.length).toBeGreaterThan(0)
      // node:sqlite's blocks need Node.js 22.16 (.ci/run's Node 24 leg runs them).
      if (pkg === 'driver-node-sqlite' && nodeSqliteProblem() !== undefined) return
      for (const [i, block] of blocks.run.entries())
        await node(dir, `readme-${i}.mjs`, transpile(block))
      // Blocks that cannot run alone still import only what the install line brought, and
      // opening by id or path needs the default driver.
      for (const [i, block] of blocks.all.entries()) {
        const loads = importsOf(block).map((m) => `await import(${JSON.stringify(m)})`)
        await node(dir, `imports-${i}.mjs`, loads.join('\n'))
        if (/AgentFS\.open\(\{ (id|path):/.test(block))
          await node(
            dir,
            `driver-${i}.mjs`,
            "await import('@agentfs/driver-better-sqlite3'); await import('better-sqlite3')",
          )
      }
      // Nothing of AgentFS arrives that the line did not ask for, directly or as a dependency.
      if (SHARED) return
      const allowed = await dependencyClosure(line)
      for (const found of agentfsIn(installed)) expect(allowed, `${pkg}: ${found}`).toContain(found)
    })

  test('kv with a driver alone installs nothing else of AgentFS', async () => {
    const { installed } = await project('kv-alone', [
      '@agentfs/kv',
      '@agentfs/driver-better-sqlite3',
      'better-sqlite3',
    ])
    expect(agentfsIn(installed)).toEqual([
      '@agentfs/core',
      '@agentfs/driver-better-sqlite3',
      '@agentfs/kv',
    ])
  })

  test('the sdk quick start leaves the file it wrote', async () => {
    const { dir } = await project('sdk-check', await installLine('packages/sdk'))
    for (const [i, block] of (await readmeBlocks(dir, '@agentfs/sdk')).run.entries())
      await node(dir, `sdk-${i}.mjs`, transpile(block))
    const check = await node(
      dir,
      'check.mjs',
      `import { AgentFS } from '@agentfs/sdk'
const agent = await AgentFS.open({ id: 'my-agent' })
console.log(await agent.fs.readFile('/notes/todo.md', 'utf8'))
await agent.close()
`,
    )
    expect(check).toBe('- ship it\n\n')
  })

  test('the sdk without better-sqlite3 says what to install and creates nothing', async () => {
    const { dir, installed } = await project('sdk-bare', ['@agentfs/sdk'])
    expect(installed.some((entry) => entry.startsWith('better-sqlite3'))).toBe(false)
    const out = await node(
      dir,
      'open.mjs',
      `import { AgentFS } from '@agentfs/sdk'
try { await AgentFS.open({ id: 'agent' }); console.log('opened') }
catch (error) { console.log(error.code + ': ' + error.message) }
`,
    )
    expect(out).toMatch(/^CANT_OPEN: .*npm install @agentfs\/driver-better-sqlite3 better-sqlite3/)
    expect(existsSync(join(dir, '.agentfs'))).toBe(false)
  })

  test('the sdk with only the node:sqlite driver: opens on Node 22.16+, names what to install before', async () => {
    const { dir, installed } = await project('sdk-node-sqlite', [
      '@agentfs/sdk',
      '@agentfs/driver-node-sqlite',
    ])
    expect(installed.some((entry) => entry.startsWith('better-sqlite3'))).toBe(false)
    const out = await node(
      dir,
      'open.mjs',
      `import { AgentFS } from '@agentfs/sdk'
try {
  const agent = await AgentFS.open({ id: 'agent' })
  await agent.fs.writeFile('/a.txt', 'built in')
  console.log('ok: ' + (await agent.fs.readFile('/a.txt', 'utf8')))
  await agent.close()
} catch (error) { console.log(error.code + ': ' + error.message) }
`,
    )
    if (nodeSqliteProblem() === undefined) expect(out).toBe('ok: built in\n')
    else expect(out).toMatch(/^CANT_OPEN: .*@agentfs\/driver-node-sqlite \(no native build\)/)
  })

  test('a better-sqlite3 whose native module was never built gets an error saying how to build it', async () => {
    const { dir } = await project('unbuilt', [
      '@agentfs/sdk',
      '@agentfs/driver-better-sqlite3',
      'better-sqlite3-unbuilt',
    ])
    const out = await node(
      dir,
      'open.mjs',
      `import { AgentFS } from '@agentfs/sdk'
try { await AgentFS.open({ path: 'agent.db' }); console.log('opened') }
catch (error) { console.log(error.code + ': ' + error.message) }
`,
    )
    expect(out).toMatch(/^CANT_OPEN: better-sqlite3's native module is not built.*approve-builds/)
  })

  test('fs on libSQL file: needs no native better-sqlite3', async () => {
    const { dir, installed } = await project('libsql', [
      '@agentfs/fs',
      ...(await installLine('packages/driver-libsql')),
    ])
    expect(installed.some((entry) => entry.startsWith('better-sqlite3'))).toBe(false)
    expect(agentfsIn(installed)).toEqual(['@agentfs/core', '@agentfs/driver-libsql', '@agentfs/fs'])
    const out = await node(
      dir,
      'fs.mjs',
      `import { openDatabase } from '@agentfs/core'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { createFileSystem } from '@agentfs/fs'
const db = await openDatabase({ driver: libsqlDriver({ url: 'file:agent.db' }) })
const fs = createFileSystem(db)
await fs.mkdir('/notes/a', { recursive: true })
await fs.writeFile('/notes/a/todo.md', 'libsql\\n')
console.log(JSON.stringify([await fs.readFile('/notes/a/todo.md', 'utf8'), await fs.readdir('/notes')]))
await db.close()
`,
    )
    expect(JSON.parse(out)).toEqual(['libsql\n', ['a']])
  })

  test('the AI SDK adapter runs a generateText loop with a mock model', async () => {
    const { dir } = await project('ai-sdk-loop', [
      ...(await installLine('packages/ai-sdk')),
      ...(await installLine('packages/sdk')).filter((d) => d !== '@agentfs/sdk'),
    ])
    const out = await node(
      dir,
      'loop.mjs',
      `import { AgentFS } from '@agentfs/sdk'
import { aiSdkTools } from '@agentfs/ai-sdk'
import { generateText, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
}
const step = (content, unified) => ({ content, finishReason: { unified, raw: unified }, usage, warnings: [] })
const model = new MockLanguageModelV3({
  doGenerate: [
    step([{ type: 'tool-call', toolCallId: '1', toolName: 'write_file', input: JSON.stringify({ path: '/notes.md', content: '- ship\\n' }) }], 'tool-calls'),
    step([{ type: 'text', text: 'done' }], 'stop'),
  ],
})
const agent = await AgentFS.open({ id: 'editor' })
const result = await generateText({
  model,
  tools: aiSdkTools({ fs: agent.fs, kv: agent.kv, audit: agent.tools, sessionId: 'chat-1' }),
  stopWhen: stepCountIs(5),
  prompt: 'write the notes',
})
const calls = await agent.tools.bySession('chat-1')
console.log(JSON.stringify([result.text, await agent.fs.readFile('/notes.md', 'utf8'), calls.map((c) => [c.name, c.status])]))
await agent.close()
`,
    )
    expect(JSON.parse(out)).toEqual(['done', '- ship\n', [['write_file', 'success']]])
  })

  test('a backend runs the published conformance suite under vitest', async () => {
    const { dir } = await project('conformance', [
      '@agentfs/conformance',
      '@agentfs/core',
      '@agentfs/fs',
      '@agentfs/kv',
      '@agentfs/tool-calls',
      '@agentfs/overlay',
      '@agentfs/history',
      'vitest',
      ...(await installLine('packages/driver-libsql')),
    ])
    await mkdir(join(dir, 'test'))
    await writeFile(
      join(dir, 'test', 'driver.test.mjs'),
      `import { runConformance } from '@agentfs/conformance'
import { libsqlDriver } from '@agentfs/driver-libsql'
runConformance({ createDriver: ({ tempDir }) => libsqlDriver({ url: 'file:' + tempDir + '/db.sqlite' }) })
`,
    )
    const vitest = join(dir, 'node_modules', 'vitest', 'vitest.mjs')
    const { stdout } = await run(process.execPath, [vitest, 'run', '--reporter=dot'], {
      cwd: dir,
      env: { ...process.env, NO_COLOR: '1' },
      maxBuffer: 16 << 20,
    })
    expect(stdout).toMatch(/Tests\s+\d+ passed/)
    expect(stdout).not.toMatch(/failed/)
  })
})

describe('the packed CLI', () => {
  let dir: string
  let agentfs: string
  const cli = (args: string[], cwd = dir) =>
    run(process.execPath, [agentfs, ...args], { cwd, maxBuffer: 16 << 20 })

  beforeAll(async () => {
    ;({ dir } = await project('cli', ['@agentfs/cli']))
    agentfs = join(dir, 'node_modules', '@agentfs', 'cli', 'dist', 'cli.js')
  })

  test('init, fs write and cat, import and export round-trip', async () => {
    const own = (await manifest(join(repo, 'apps/cli'))).version
    expect((await cli(['--version'])).stdout.trim()).toBe(own)
    await cli(['init', 'agent.db'])
    await cli(['fs', 'write', 'agent.db', '/notes/todo.md', '# Todo'])
    expect((await cli(['fs', 'cat', 'agent.db', '/notes/todo.md'])).stdout).toBe('# Todo')
    await mkdir(join(dir, 'project', 'src'), { recursive: true })
    await writeFile(join(dir, 'project', 'src', 'main.ts'), 'export {}\n')
    await cli(['import', 'project', 'agent.db'])
    await cli(['export', 'agent.db', 'out'])
    expect(await readFile(join(dir, 'out', 'src', 'main.ts'), 'utf8')).toBe('export {}\n')
    expect(await readFile(join(dir, 'out', 'notes', 'todo.md'), 'utf8')).toBe('# Todo')
  })

  test('serve mcp answers a real MCP client', async () => {
    await cli(['init', 'mcp.db'])
    const client = new Client({ name: 'packed-test', version: '1.0.0' })
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [agentfs, 'serve', 'mcp', '--bash', 'mcp.db'],
        cwd: dir,
        stderr: 'pipe',
      }),
    )
    try {
      const { tools } = await client.listTools()
      expect(tools.map((t) => t.name)).toContain('write_file')
      const written = await client.callTool({
        name: 'write_file',
        arguments: { path: '/hello.txt', content: 'from mcp\n' },
      })
      expect(written.isError ?? false).toBe(false)
      const read = await client.callTool({ name: 'read_file', arguments: { path: '/hello.txt' } })
      expect(JSON.stringify(read.content)).toContain('from mcp')
      const bash = await client.callTool({
        name: 'bash',
        arguments: { command: 'cat /hello.txt | tr a-z A-Z > /upper.txt && wc -c < /upper.txt' },
      })
      expect((bash.content as Array<{ text: string }>)[0]!.text).toBe('9\n[exit status 0]')
    } finally {
      await client.close()
    }
    expect((await cli(['fs', 'cat', 'mcp.db', '/hello.txt'])).stdout).toBe('from mcp\n')
    expect((await cli(['fs', 'cat', 'mcp.db', '/upper.txt'])).stdout).toBe('FROM MCP\n')
  })

  // FUSE as for the CLI's own tests: skipped with a reason outside CI, required under CI=true.
  const fuseProblem = !existsSync('/dev/fuse')
    ? '/dev/fuse is missing'
    : !(process.env.PATH ?? '').split(':').some((d) => d && existsSync(join(d, 'fusermount3')))
      ? 'fusermount3 is not installed (apt-get install fuse3)'
      : undefined
  if (fuseProblem !== undefined && process.env.CI === 'true')
    throw new Error(`packed mount test: FUSE is required under CI=true but ${fuseProblem}`)
  if (fuseProblem !== undefined)
    console.log(
      `packed mount test skipped: ${fuseProblem}. Enable it with: apt-get install fuse3 libfuse3-dev pkg-config (as root).`,
    )

  test.skipIf(fuseProblem !== undefined)(
    'mount serves the database through the libfuse 3 binding built at install, keeping mtimes',
    async () => {
      await cli(['init', 'mount.db'])
      await cli(['fs', 'write', 'mount.db', '/a.txt', 'in the db'])
      const point = join(dir, 'mnt')
      await mkdir(point)
      // A tarball whose file has a known modification time, for tar x through the mount.
      const source = join(dir, 'tar-src')
      await mkdir(source)
      await writeFile(join(source, 'old.txt'), 'from tar')
      await run('touch', ['-m', '-d', '2001-02-03 04:05:06 UTC', join(source, 'old.txt')])
      await run('tar', ['cf', join(dir, 'old.tar'), '-C', source, 'old.txt'])
      const child = spawn(process.execPath, [agentfs, 'mount', 'mount.db', point], { cwd: dir })
      let output = ''
      child.stdout.on('data', (chunk) => (output += chunk))
      child.stderr.on('data', (chunk) => (output += chunk))
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
      try {
        const deadline = Date.now() + 20_000
        while (!output.includes('mounted') && Date.now() < deadline)
          await new Promise((resolve) => setTimeout(resolve, 50))
        expect(output).toContain('mounted')
        expect(output).toContain('(libfuse3)')
        expect(output).not.toMatch(/warning/)
        expect(await readFile(join(point, 'a.txt'), 'utf8')).toBe('in the db')
        await writeFile(join(point, 'b.txt'), 'through the mount')
        await run('touch', ['-m', '-d', '2010-01-02 03:04:05.123456789 UTC', join(point, 'b.txt')])
        await run('tar', ['xf', join(dir, 'old.tar'), '-C', point])
        const b = await stat(join(point, 'b.txt'), { bigint: true })
        expect(b.mtimeNs).toBe(1_262_401_445_123_456_789n)
        expect((await stat(join(point, 'old.txt'))).mtime.toISOString()).toBe(
          '2001-02-03T04:05:06.000Z',
        )
      } finally {
        child.kill('SIGTERM')
        const code = await Promise.race([
          exited,
          new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 10_000)),
        ])
        if (code === 'timeout') {
          child.kill('SIGKILL')
          await run('umount', ['-l', point]).catch(() => {})
        }
      }
      expect((await cli(['fs', 'cat', 'mount.db', '/b.txt'])).stdout).toBe('through the mount')
    },
  )
})

describe('npm picks a better-sqlite3 that runs on this Node.js', () => {
  test('the CLI range resolves to 12 on Node 20 and 13 on Node 22 and later', async () => {
    const range = (await manifest(join(repo, 'apps/cli'))).dependencies?.['better-sqlite3']
    const dir = join(packed.work, 'npm-resolve')
    await mkdir(dir)
    await writeFile(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'resolve', private: true, dependencies: { 'better-sqlite3': range } }),
    )
    await run('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit'], {
      cwd: dir,
    })
    const lock = JSON.parse(await readFile(join(dir, 'package-lock.json'), 'utf8'))
    const version: string = lock.packages['node_modules/better-sqlite3'].version
    const major = Number(version.split('.')[0])
    const nodeMajor = Number(process.versions.node.split('.')[0])
    expect(major, `better-sqlite3 ${version} on Node ${process.versions.node}`).toBe(
      nodeMajor >= 22 ? 13 : 12,
    )
  })
})

describe('pnpm pack:all: installing from a clone before the first release', () => {
  test("the line it prints for a package installs it with plain npm in an outside project, and the package's README sample runs", async () => {
    const dest = join(packed.work, 'pack-all')
    const printed = JSON.parse(
      (
        await run(
          process.execPath,
          [join(repo, 'scripts/pack-all.mjs'), '--dest', dest, '--json'],
          {
            cwd: repo,
            maxBuffer: 16 << 20,
          },
        )
      ).stdout,
    ) as { tarballs: Record<string, string>; lines: Record<string, string> }
    expect(Object.keys(printed.tarballs).sort()).toEqual(
      [...tarballs.keys()].filter((n) => n.startsWith('@agentfs/')).sort(),
    )
    for (const file of Object.values(printed.tarballs)) expect(existsSync(file), file).toBe(true)
    const line = printed.lines['@agentfs/kv']!
    expect(line).toMatch(
      /^npm install \S+agentfs-core-[\d.]+\.tgz \S+agentfs-driver-better-sqlite3-[\d.]+\.tgz \S+agentfs-kv-[\d.]+\.tgz better-sqlite3$/,
    )
    // better-sqlite3 as this workspace built it (this machine cannot fetch a prebuilt one).
    const args = line
      .split(' ')
      .slice(2)
      .map((a) => (a === 'better-sqlite3' ? tarballs.get('better-sqlite3')! : a))
    const dir = join(packed.work, 'npm-outside')
    await mkdir(dir)
    await writeFile(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'outside', private: true, type: 'module' }),
    )
    // Scripts off: the better-sqlite3 tarball is built already (nothing else here has one).
    await sh('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', ...args], {
      cwd: dir,
    })
    const blocks = await readmeBlocks(dir, '@agentfs/kv')
    expect(blocks.run.length).toBeGreaterThan(0)
    for (const [i, block] of blocks.run.entries())
      await node(dir, `kv-readme-${i}.mjs`, transpile(block))
    // Packing every package and an npm install: 4 minutes alone on 2 cores, more beside other suites.
  }, 600_000)
})
