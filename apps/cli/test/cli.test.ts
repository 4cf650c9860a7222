import { existsSync } from 'node:fs'
import {
  chmod,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises'
import { join } from 'node:path'
import { AgentFS } from '@agentfs/sdk'
import type { Command } from 'commander'
import { describe, expect, test } from 'vitest'
import { buildProgram } from '../src/program.js'
import { runCli, useCliSandbox } from './helpers.js'

let cli: string
let cwd: string
useCliSandbox('agentfs-cli-', (sandbox) => {
  ;({ cli, cwd } = sandbox)
})

const agentfs = (args: string[], input?: string) =>
  runCli(cli, args, { cwd, ...(input === undefined ? {} : { input }) })

describe('agentfs', () => {
  test('help lists every command; unknown commands fail with a usage error', () => {
    const help = agentfs(['--help'])
    expect(help.code).toBe(0)
    for (const command of [
      'init',
      'fs',
      'kv',
      'timeline',
      'stats',
      'info',
      'migrate',
      'diff',
      'commit',
      'discard',
      'serve',
      'ui',
      'mount',
      'run',
      'runs',
      'fsck',
      'import',
      'export',
    ]) {
      expect(help.out).toContain(command)
    }
    expect(agentfs(['fs', '--help']).out).toMatch(/ls.*\n.*tree/s)
    expect(agentfs(['nope']).code).not.toBe(0)
  })

  test('every command has a description and examples in its help', () => {
    // Built in this process (the same program the binary parses): 53 helps without spawning
    // 53 processes; the binary's own --help is checked once below.
    const program = buildProgram('0.0.0')
    const helpOf = (command: Command) => {
      let out = ''
      command.configureOutput({ writeOut: (s) => (out += s) })
      command.outputHelp()
      return out
    }
    const paths: [string[], Command][] = []
    for (const command of program.commands) {
      if (command.name() === 'help') continue
      const subs = command.commands.filter((c) => c.name() !== 'help')
      if (subs.length === 0) paths.push([[command.name()], command])
      for (const sub of subs) paths.push([[command.name(), sub.name()], sub])
    }
    expect(paths.length).toBe(53)
    for (const [path, command] of paths) {
      const help = helpOf(command)
      expect(help, path.join(' ')).toMatch(/^Usage: agentfs .+\n\n\S.+\n/)
      const examples = help.split('Examples:\n')[1] ?? ''
      expect(examples, path.join(' ')).toMatch(/^ {2}\$ /)
      expect(examples, path.join(' ')).toContain(`agentfs ${path.join(' ')} `)
    }
    const top = agentfs(['--help'])
    expect(top.code).toBe(0)
    expect(top.out).toBe(helpOf(program))
    expect(top.out).toContain('Examples:')
    const one = agentfs(['fs', 'write', '--help'])
    expect(one.out).toBe(helpOf(paths.find(([p]) => p.join(' ') === 'fs write')![1]))
  })

  test('fs write reads a large standard input whole (a pipe a Node.js parent made is non-blocking)', () => {
    expect(agentfs(['init', 'stdin-db']).code).toBe(0)
    const data = `${'0123456789abcdef'.repeat(4096)}\n`.repeat(96)
    const written = agentfs(['fs', 'write', 'stdin-db', '/big.txt'], data)
    expect(written.err).toBe('')
    expect(written.code).toBe(0)
    const stat = JSON.parse(agentfs(['fs', 'stat', '--json', 'stdin-db', '/big.txt']).out)
    expect(stat.size).toBe(data.length)
  })

  test('init by id, then fs commands, with one clear error line on failure', () => {
    expect(agentfs(['init', 'demo']).out).toContain(join('.agentfs', 'demo.db'))
    expect(agentfs(['init', 'demo']).err).toMatch(/^agentfs: .*already exists; pass --force/)
    expect(agentfs(['init', 'demo', '--force']).code).toBe(0)
    expect(agentfs(['fs', 'mkdir', '-p', 'demo', '/docs/notes']).code).toBe(0)
    expect(agentfs(['fs', 'write', 'demo', '/docs/notes/a.md', '# A\n']).code).toBe(0)
    expect(agentfs(['fs', 'write', 'demo', '/docs/b.txt'], 'from stdin').code).toBe(0)
    expect(agentfs(['fs', 'cat', 'demo', '/docs/b.txt']).out).toBe('from stdin')
    expect(agentfs(['fs', 'ls', 'demo', '/docs']).out).toBe('b.txt\nnotes\n')
    expect(agentfs(['fs', 'ls', '-l', 'demo', '/docs']).out).toMatch(
      /^-rw-r--r-- +10 \S+ b\.txt\ndrwxr-xr-x/,
    )
    expect(agentfs(['fs', 'tree', 'demo']).out).toBe(
      '/\n└── docs/\n    ├── b.txt\n    └── notes/\n        └── a.md\n',
    )
    expect(agentfs(['fs', 'cp', '-r', 'demo', '/docs', '/copy']).code).toBe(0)
    expect(agentfs(['fs', 'mv', 'demo', '/copy/b.txt', '/copy/c.txt']).code).toBe(0)
    expect(agentfs(['fs', 'ln', '-s', 'demo', '/docs/b.txt', '/link']).code).toBe(0)
    expect(agentfs(['fs', 'cat', 'demo', '/link']).out).toBe('from stdin')
    const stat = JSON.parse(agentfs(['fs', 'stat', '--json', 'demo', '/copy/c.txt']).out)
    expect(stat).toMatchObject({ type: 'file', size: 10, mode: '644', nlink: 1 })
    expect(agentfs(['fs', 'rm', 'demo', '/copy']).err).toMatch(/^agentfs: EISDIR: .*recursive/)
    expect(agentfs(['fs', 'rm', '-r', 'demo', '/copy']).code).toBe(0)
    const missing = agentfs(['fs', 'cat', 'demo', '/nope'])
    expect(missing).toMatchObject({
      code: 1,
      err: "agentfs: ENOENT: no such file or directory, open '/nope'\n",
    })
    expect(agentfs(['fs', 'ls', 'ghost']).err).toMatch(
      /no database at .*ghost\.db; create it with "agentfs init ghost"/,
    )
  })

  test('kv, timeline, stats, info, migrate', () => {
    agentfs(['init', 'k.db'])
    expect(agentfs(['kv', 'set', 'k.db', 'user:prefs', '{"theme":"dark"}']).out).toBe('version 1\n')
    agentfs(['kv', 'set', 'k.db', 'note', 'plain text'])
    expect(JSON.parse(agentfs(['kv', 'get', 'k.db', 'user:prefs']).out)).toEqual({ theme: 'dark' })
    expect(agentfs(['kv', 'ls', 'k.db', 'user:']).out).toBe('user:prefs = {"theme":"dark"}\n')
    expect(agentfs(['kv', 'rm', 'k.db', 'note']).code).toBe(0)
    expect(agentfs(['kv', 'get', 'k.db', 'note']).err).toBe("agentfs: key 'note' is not set\n")
    expect(agentfs(['timeline', 'k.db']).out).toBe('no tool calls recorded\n')
    const info = JSON.parse(agentfs(['info', '--json', 'k.db']).out)
    expect(info).toMatchObject({ chunkSize: 4096, kvKeys: 1, directories: 1, specVersion: '0.4' })
    expect(agentfs(['migrate', '--dry-run', 'k.db']).out).toMatch(/is up to date/)
    expect(agentfs(['stats', 'k.db']).out).toBe('no tool calls recorded\n')
    expect(agentfs(['timeline', 'k.db', '--since', 'yesterday']).err).toMatch(
      /cannot read 'yesterday' as a time/,
    )
  })

  test('export drops setuid, setgid and sticky bits unless --keep-setuid, and says so', async () => {
    agentfs(['init', 'modes.db'])
    const agent = await AgentFS.open({ path: join(cwd, 'modes.db') })
    await agent.fs.writeFile('/rootsh', '#!/bin/sh\n')
    await agent.fs.chmod('/rootsh', 0o4755)
    await agent.fs.mknod('/pipe', 0o010644)
    await agent.close()
    const plain = agentfs(['export', 'modes.db', join(cwd, 'modes-out')])
    expect(plain.out).toMatch(/dropped setuid from \/rootsh \(pass --keep-setuid/)
    expect(plain.out).toMatch(/skipped \/pipe: a FIFO, socket or device/)
    expect((await lstat(join(cwd, 'modes-out', 'rootsh'))).mode & 0o7777).toBe(0o755)
    const kept = agentfs(['export', '--keep-setuid', 'modes.db', join(cwd, 'modes-kept')])
    expect(kept.out).not.toMatch(/dropped/)
    expect((await lstat(join(cwd, 'modes-kept', 'rootsh'))).mode & 0o7777).toBe(0o4755)
  })

  test('every command on a database with an interrupted commit says so, with how to finish it', async () => {
    agentfs(['init', 'halfway.db'])
    const agent = await AgentFS.open({ path: join(cwd, 'halfway.db') })
    await agent.db.execute({
      sql: 'CREATE TABLE agentfs_overlay_commit (step INTEGER PRIMARY KEY, op TEXT NOT NULL, path TEXT NOT NULL, arg TEXT, mode INTEGER, atime REAL, mtime REAL, done INTEGER NOT NULL DEFAULT 0)',
    })
    await agent.db.execute({
      sql: "INSERT INTO agentfs_overlay_commit (step, op, path, done) VALUES (0, 'file', '/x', 0)",
    })
    await agent.close()
    for (const args of [
      ['fs', 'ls', 'halfway.db', '/'],
      ['info', 'halfway.db'],
      ['timeline', 'halfway.db'],
    ])
      expect(agentfs(args).err, args.join(' ')).toMatch(
        /^agentfs: warning: .*halfway\.db holds an interrupted commit \(1 of 1 steps left, first: \/x\).*agentfs commit/,
      )
  })

  test('timeline --params shows what a call was sent, --full what it answered, whole', async () => {
    agentfs(['init', 'audit.db'])
    const agent = await AgentFS.open({ path: join(cwd, 'audit.db') })
    const command = `#${' '.repeat(6000)}\nrm -rf /workspace`
    const output = `${'x'.repeat(9000)}\nend`
    await agent.tools.track('bash', { command }, async () => output)
    await agent.tools
      .track('bash', { command: 'false' }, async () => {
        throw new Error(`exit 1\n${'y'.repeat(5000)}`)
      })
      .catch(() => undefined)
    await agent.close()
    const shown = agentfs(['timeline', 'audit.db', '--params']).out
    expect(shown).toContain(`  parameters: ${JSON.stringify({ command })}`)
    expect(shown).not.toContain('  result: ')
    // --full: the result or error too, whole.
    const full = agentfs(['timeline', 'audit.db', '--full']).out
    expect(full).toContain(
      `  parameters: ${JSON.stringify({ command })}\n  result: ${JSON.stringify(output)}\n`,
    )
    expect(full).toContain(`  error: ${JSON.stringify(`exit 1\n${'y'.repeat(5000)}`)}\n`)
    expect(JSON.parse(agentfs(['timeline', 'audit.db', '--json']).out)[1].parameters).toEqual({
      command,
    })
  })

  test('an overlay over a host directory: edit, diff, commit, discard; the host is untouched until commit', async () => {
    const host = join(cwd, 'project')
    await mkdir(host, { recursive: true })
    await writeFile(join(host, 'README.md'), '# Project\n')
    await writeFile(join(host, 'old.txt'), 'old\n')
    expect(agentfs(['init', 'ov.db', '--base', host]).out).toContain('overlay over')
    agentfs(['fs', 'write', 'ov.db', '/README.md', '# Better\n'])
    agentfs(['fs', 'rm', 'ov.db', '/old.txt'])
    agentfs(['fs', 'write', 'ov.db', '/new.txt', 'new\n'])
    expect(agentfs(['fs', 'ls', 'ov.db']).out).toBe('README.md\nnew.txt\n')
    expect(await readFile(join(host, 'README.md'), 'utf8')).toBe('# Project\n')
    const diff = agentfs(['diff', 'ov.db']).out
    expect(diff).toContain('M /README.md')
    expect(diff).toContain('-# Project')
    expect(diff).toContain('D /old.txt')
    expect(diff).toContain('A /new.txt')
    expect(agentfs(['commit', 'ov.db']).out).toBe('applied 3 change(s)\n')
    expect(await readFile(join(host, 'README.md'), 'utf8')).toBe('# Better\n')
    expect(await readFile(join(host, 'new.txt'), 'utf8')).toBe('new\n')
    agentfs(['fs', 'write', 'ov.db', '/scratch.txt', 'x'])
    expect(agentfs(['discard', 'ov.db']).out).toBe('discarded\n')
    expect(agentfs(['diff', 'ov.db']).out).toBe('no changes\n')
  })

  test('import then export round-trips a tree byte for byte, with modes, times and symlinks', async () => {
    const source = join(cwd, 'source')
    await mkdir(join(source, 'src', 'deep'), { recursive: true })
    await writeFile(join(source, 'README.md'), '# Round trip\n')
    await writeFile(
      join(source, 'src', 'data.bin'),
      Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31) & 255)),
    )
    await writeFile(join(source, 'src', 'deep', 'run.sh'), '#!/bin/sh\necho hi\n')
    await chmod(join(source, 'src', 'deep', 'run.sh'), 0o755)
    await chmod(join(source, 'README.md'), 0o600)
    await symlink('../README.md', join(source, 'src', 'readme-link'))
    await symlink('/etc/hostname', join(source, 'absolute-link'))
    await utimes(join(source, 'src', 'data.bin'), 1_600_000_000, 1_600_000_123.5)
    await utimes(join(source, 'src', 'deep'), 1_600_000_000, 1_600_000_456)
    const imported = agentfs(['import', source, 'rt.db'])
    expect(imported).toMatchObject({ code: 0 })
    expect(imported.out).toMatch(/^imported 7 entries \(70031 bytes\)/)
    expect(imported.err).toMatch(/import: 7 entries, 70031 bytes/)
    const target = join(cwd, 'target')
    expect(agentfs(['export', 'rt.db', target]).code).toBe(0)
    const describe = async (root: string) => {
      const out: string[] = []
      const walk = async (dir: string, rel: string) => {
        for (const name of (await readdir(dir)).sort()) {
          const full = join(dir, name)
          const s = await lstat(full, { bigint: true })
          const kind = s.isSymbolicLink()
            ? `link ${await readlink(full)}`
            : s.isDirectory()
              ? 'dir'
              : `file ${(await readFile(full)).toString('base64').length}`
          const time = s.isSymbolicLink() ? '' : ` mtime=${s.mtimeNs / 1_000_000n}`
          out.push(`${rel}/${name} ${(Number(s.mode) & 0o7777).toString(8)} ${kind}${time}`)
          if (s.isDirectory()) await walk(full, `${rel}/${name}`)
        }
      }
      await walk(root, '')
      return out
    }
    expect(await describe(target)).toEqual(await describe(source))
    expect(
      Buffer.compare(
        await readFile(join(target, 'src', 'data.bin')),
        await readFile(join(source, 'src', 'data.bin')),
      ),
    ).toBe(0)
  })

  test("the help's own quick start runs as written: fs write creates missing parents", () => {
    expect(agentfs(['init', 'my-agent']).code).toBe(0)
    expect(agentfs(['fs', 'write', 'my-agent', '/notes/todo.md', '# Todo']).code).toBe(0)
    expect(agentfs(['fs', 'cat', 'my-agent', '/notes/todo.md']).out).toBe('# Todo')
  })

  test('import twice refuses before writing anything (or replaces with --force); export refuses a non-empty folder', async () => {
    const source = join(cwd, 'twice')
    await mkdir(source)
    await writeFile(join(source, 'a.txt'), 'first')
    await writeFile(join(source, 'z.txt'), 'zed')
    await symlink('a.txt', join(source, 'link'))
    expect(agentfs(['import', source, 'twice.db']).code).toBe(0)
    await writeFile(join(source, 'a.txt'), 'second')
    await writeFile(join(source, 'z.txt'), 'zed 2')
    const again = agentfs(['import', source, 'twice.db'])
    expect(again.code).toBe(1)
    expect(again.err).toMatch(/3 entries already exist .*nothing was imported.*--force/)
    expect(agentfs(['fs', 'cat', 'twice.db', '/a.txt']).out).toBe('first')
    expect(agentfs(['fs', 'cat', 'twice.db', '/z.txt']).out).toBe('zed')
    expect(agentfs(['import', '--force', source, 'twice.db']).code).toBe(0)
    expect(agentfs(['fs', 'cat', 'twice.db', '/a.txt']).out).toBe('second')
    expect(agentfs(['fs', 'cat', 'twice.db', '/z.txt']).out).toBe('zed 2')
    const out = join(cwd, 'twice-out')
    await mkdir(out)
    await writeFile(join(out, 'keep.txt'), 'mine')
    const refused = agentfs(['export', 'twice.db', out])
    expect(refused.code).toBe(1)
    expect(refused.err).toMatch(/is not empty .*--force/)
    expect(await readdir(out)).toEqual(['keep.txt'])
    expect(agentfs(['export', '--force', 'twice.db', out]).code).toBe(0)
    expect((await readdir(out)).sort()).toEqual(['a.txt', 'keep.txt', 'link', 'z.txt'])
  })

  test('errors say what was expected and what to do', () => {
    const init = agentfs(['init', join(cwd, 'no-such-folder', 'x.db')])
    expect(init.code).toBe(1)
    expect(init.err).toMatch(/the folder .*no-such-folder does not exist; create it first/)
    expect(existsSync(join(cwd, 'no-such-folder'))).toBe(false)
    agentfs(['init', 'errs'])
    const mkdir = agentfs(['fs', 'mkdir', 'errs', '/a/b/c'])
    expect(mkdir.err).toMatch(/ENOENT.*add -p to create it/)
    const limit = agentfs(['timeline', 'errs', '--limit', 'abc'])
    expect(limit.code).not.toBe(0)
    expect(limit.err).toMatch(/--limit expects a positive whole number, got "abc"/)
    const diff = agentfs(['diff', 'errs'])
    expect(diff.err).toMatch(/not an overlay.*agentfs init DB --base DIR/)
    for (const result of [init, mkdir, diff]) expect(result.err.trim().split('\n')).toHaveLength(1)
  })

  test('each bad input a new user tries is one line naming the path and what to do', async () => {
    await mkdir(join(cwd, 'adir'), { recursive: true })
    const cases: [string[], RegExp][] = [
      [['info', './adir'], /adir is a directory, not a database file; name a file \(agentfs init/],
      [['init', '--force', './adir'], /adir is a directory, not a database file/],
      [
        ['info', 'adir'],
        /no database named adir .*; \.\/adir is a directory, not a database: copy it into one with "agentfs import \.\/adir adir"/,
      ],
      [['init', '/proc/nope.db'], /^agentfs: cannot create \/proc\/nope\.db: /],
      [['frobnicate'], /^error: unknown command 'frobnicate'\n\(agentfs --help lists the commands/],
    ]
    agentfs(['init', 'words'])
    agentfs(['fs', 'write', 'words', '/notes.md', 'x'])
    cases.push(
      [
        ['fs', 'write', 'words', '/notes.md/child', 'x'],
        /ENOTDIR: not a directory, \/notes\.md is a file: cannot write \/notes\.md\/child/,
      ],
      [
        ['restore', 'words', 'nosuch'],
        /no snapshot named 'nosuch' in words; list them with "agentfs snapshots words"/,
      ],
      [['diff', 'words', '--from', 'nosuch'], /no snapshot named 'nosuch' in words/],
      [
        ['diff', 'words'],
        /words is not an overlay .* no base to diff against; compare snapshots with "agentfs diff words --from SNAPSHOT"/,
      ],
    )
    for (const [args, expected] of cases) {
      const result = agentfs(args)
      expect({ args, code: result.code, err: result.err }).toEqual({
        args,
        code: 1,
        err: expect.stringMatching(expected),
      })
      expect(result.err.trim().split('\n').length, args.join(' ')).toBeLessThanOrEqual(2)
      expect(result.err, args.join(' ')).not.toMatch(
        /listSnapshots|fs_overlay_config|disk I\/O|EISDIR|EEXIST/,
      )
    }
    expect(existsSync(join(cwd, 'adir', 'agent.db'))).toBe(false)
  })

  test('--version is the package version; an empty timeline says so', async () => {
    const { version } = JSON.parse(
      await readFile(new URL('../package.json', import.meta.url), 'utf8'),
    )
    expect(agentfs(['--version']).out.trim()).toBe(version)
    agentfs(['init', 'quiet'])
    expect(agentfs(['timeline', 'quiet']).out).toBe('no tool calls recorded\n')
    const info = agentfs(['info', 'quiet']).out
    expect(info).toMatch(/specVersion .*\(the Agent Filesystem Specification layout/)
    expect(info).toMatch(/schemaVersion .*\(this library's own extension tables/)
  })

  test('stats is an aligned table', async () => {
    const { AgentFS } = await import('@agentfs/sdk')
    agentfs(['init', 'tally'])
    const agent = await AgentFS.open({ path: join(cwd, '.agentfs', 'tally.db') })
    for (const [name, ms] of [
      ['read_file', 3],
      ['a_much_longer_tool_name', 1200],
      ['x', 5],
    ] as const)
      await agent.tools.record({ name, parameters: {}, startedAt: 1000, completedAt: 1000 + ms })
    await agent.close()
    const lines = agentfs(['stats', 'tally']).out.trimEnd().split('\n')
    expect(lines).toHaveLength(4)
    expect(lines[0]).toMatch(/^tool +calls +ok +failed +avg ms +p50 ms +p95 ms$/)
    expect(new Set(lines.map((l) => l.length)).size).toBe(1)
  })

  test('with --json a failure is a JSON error object on stdout; messages carry no SQL', async () => {
    const failed = agentfs(['info', '--json', 'missing.db'])
    expect(failed.code).toBe(1)
    expect(JSON.parse(failed.out)).toEqual({
      error: { code: 'ERROR', message: expect.stringMatching(/no database at .*missing\.db/) },
    })
    agentfs(['init', 'ro'])
    const { chmod } = await import('node:fs/promises')
    const path = join(cwd, '.agentfs', 'ro.db')
    await chmod(path, 0o444)
    const readOnly = agentfs(['fs', 'write', 'ro', '/x.txt', 'x'])
    await chmod(path, 0o644)
    if (process.getuid?.() !== 0) {
      // root writes through read-only modes; elsewhere the refusal is one line without SQL.
      expect(readOnly.code).toBe(1)
      expect(readOnly.err).not.toMatch(/\[sql:|INSERT|UPDATE/)
    }
  })
})
