import { readFileSync, rmSync } from 'node:fs'
import {
  type AgentFsError,
  describeDatabase,
  type FsckReport,
  fsck,
  planMigration,
  SQLITE_INTEGRITY_RULE,
} from '@agentfs/core'
import type { Dirent, FileSystem } from '@agentfs/fs'
import { openOverlay, saveOverlayBase } from '@agentfs/overlay'
import { AgentFS } from '@agentfs/sdk'
import type { Command } from 'commander'
import { databasePath, explainDatabaseError, openExisting, viewOf } from './open.js'
import { exportTree, importTree } from './transfer.js'

type Out = (text: string) => void
const print: Out = (text) => process.stdout.write(`${text}\n`)
const json = (value: unknown) =>
  print(JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2))

/** Colour on a terminal unless NO_COLOR is set (https://no-color.org), or FORCE_COLOR asks. */
export function useColor(stream: NodeJS.WriteStream = process.stdout): boolean {
  if (process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== '') return false
  if (process.env.FORCE_COLOR !== undefined && process.env.FORCE_COLOR !== '0') return true
  return stream.isTTY === true
}

/** A unified diff with added lines green, removed ones red and hunk headers cyan. */
export function colorDiff(diff: string, enabled: boolean): string {
  if (!enabled) return diff
  const paint = (code: number, line: string) => `\x1b[${code}m${line}\x1b[0m`
  return diff
    .split('\n')
    .map((line) =>
      line.startsWith('+++') || line.startsWith('---')
        ? paint(1, line)
        : line.startsWith('+')
          ? paint(32, line)
          : line.startsWith('-')
            ? paint(31, line)
            : line.startsWith('@@')
              ? paint(36, line)
              : line,
    )
    .join('\n')
}

/** A commander option parser that accepts only a positive whole number, saying so otherwise. */
function positiveInteger(flag: string): (value: string) => number {
  return (value) => {
    const n = Number(value)
    if (!Number.isSafeInteger(n) || n < 1)
      throw new Error(`${flag} expects a positive whole number, got ${JSON.stringify(value)}`)
    return n
  }
}

async function withAgent<T>(
  target: string,
  fn: (agent: AgentFS) => Promise<T>,
  options: { migrate?: boolean } = {},
): Promise<T> {
  const agent = await openExisting(target, options)
  try {
    return await fn(agent)
  } catch (error) {
    throw explainDatabaseError(error, databasePath(target))
  } finally {
    await agent.close()
  }
}

const typeChar = (d: { isDirectory(): boolean; isSymbolicLink(): boolean; isFile(): boolean }) =>
  d.isDirectory() ? 'd' : d.isSymbolicLink() ? 'l' : d.isFile() ? '-' : '?'

function modeString(mode: number): string {
  const bits = 'rwxrwxrwx'
  return [...bits].map((c, i) => (mode & (1 << (8 - i)) ? c : '-')).join('')
}

async function tree(fs: FileSystem, path: string, prefix: string, lines: string[]): Promise<void> {
  const entries = (await fs.readdir(path, { withFileTypes: true })) as Dirent[]
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!
    const last = i === entries.length - 1
    lines.push(`${prefix}${last ? '└── ' : '├── '}${entry.name}${entry.isDirectory() ? '/' : ''}`)
    if (entry.isDirectory())
      await tree(
        fs,
        `${path === '/' ? '' : path}/${entry.name}`,
        `${prefix}${last ? '    ' : '│   '}`,
        lines,
      )
  }
}

/** Registers every command on the program. */
export function registerCommands(program: Command): void {
  program
    .command('init')
    .description('create a database (an id means .agentfs/<id>.db, otherwise a path)')
    .argument('[target]', 'agent id or database path', 'default')
    .option(
      '--chunk-size <bytes>',
      'fs_config.chunk_size of the new database',
      positiveInteger('--chunk-size'),
    )
    .option('--force', 'replace an existing database')
    .option('--base <dir>', 'make it a copy-on-write overlay over this host directory')
    .action(
      async (target: string, options: { chunkSize?: number; force?: boolean; base?: string }) => {
        const path = databasePath(target)
        const { dirname } = await import('node:path')
        const { existsSync } = await import('node:fs')
        // An id goes to .agentfs/ (made on demand); a path's folder must already be there.
        const isId = /^[a-zA-Z0-9_-]+$/.test(target)
        if (!isId && !existsSync(dirname(path)))
          throw new Error(
            `the folder ${dirname(path)} does not exist; create it first (agentfs init does not make folders for a path)`,
          )
        if (options.force)
          for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true })
        else if (existsSync(path))
          throw new Error(`${path} already exists; pass --force to replace it`)
        const agent = await AgentFS.open({
          path,
          ...(options.chunkSize === undefined ? {} : { chunkSize: options.chunkSize }),
        })
        if (options.base)
          await saveOverlayBase(agent.db, {
            kind: 'host',
            path: (await import('node:path')).resolve(options.base),
          })
        await agent.close()
        print(`created ${path}${options.base ? ` (overlay over ${options.base})` : ''}`)
      },
    )

  const fs = program
    .command('fs')
    .description('files in a database (the overlay view for overlay databases)')
  fs.command('ls')
    .argument('<db>')
    .argument('[path]', 'directory', '/')
    .option('-l, --long', 'type, mode, size, time')
    .option('--json', 'print JSON')
    .action(async (db: string, path: string, o: { long?: boolean; json?: boolean }) =>
      withAgent(db, async (agent) => {
        const view = await viewOf(agent)
        const entries = (await view.readdir(path, { withFileTypes: true })) as Dirent[]
        const rows = await Promise.all(
          entries.map(async (e) => {
            const s = await view.lstat(`${path === '/' ? '' : path.replace(/\/$/, '')}/${e.name}`)
            return {
              name: e.name,
              type: typeChar(e),
              mode: s.mode & 0o7777,
              size: s.size,
              mtime: s.mtime.toISOString(),
            }
          }),
        )
        if (o.json) return json(rows)
        for (const r of rows)
          print(
            o.long
              ? `${r.type}${modeString(r.mode)} ${String(r.size).padStart(10)} ${r.mtime} ${r.name}`
              : r.name,
          )
      }),
    )
  fs.command('tree')
    .argument('<db>')
    .argument('[path]', 'directory', '/')
    .action(async (db: string, path: string) =>
      withAgent(db, async (agent) => {
        const lines = [path]
        await tree(await viewOf(agent), path, '', lines)
        print(lines.join('\n'))
      }),
    )
  fs.command('cat')
    .argument('<db>')
    .argument('<path>')
    .action(async (db: string, path: string) =>
      withAgent(db, async (agent) => {
        process.stdout.write(await (await viewOf(agent)).readFile(path))
      }),
    )
  fs.command('write')
    .description(
      'write CONTENT (or standard input) to a file; missing parent directories are created',
    )
    .argument('<db>')
    .argument('<path>')
    .argument('[content]')
    .action(async (db: string, path: string, content?: string) =>
      withAgent(db, async (agent) => {
        if (content === undefined && process.stdin.isTTY)
          process.stderr.write(
            'agentfs: reading the content from standard input (end it with Ctrl-D)\n',
          )
        const data = content ?? readFileSync(0)
        const view = await viewOf(agent)
        const parent = path.slice(0, path.lastIndexOf('/'))
        if (parent) await view.mkdir(parent, { recursive: true })
        await view.writeFile(path, data)
      }),
    )
  fs.command('mkdir')
    .argument('<db>')
    .argument('<path>')
    .option('-p, --parents', 'create parents, no error if it exists')
    .action(async (db: string, path: string, o: { parents?: boolean }) =>
      withAgent(db, async (agent) => {
        try {
          await (await viewOf(agent)).mkdir(path, { recursive: o.parents ?? false })
        } catch (error) {
          if ((error as { code?: string }).code === 'ENOENT' && !o.parents)
            throw new Error(
              `${(error as Error).message} — a parent directory is missing; add -p to create it`,
            )
          throw error
        }
      }),
    )
  fs.command('rm')
    .argument('<db>')
    .argument('<path>')
    .option('-r, --recursive', 'remove directories and their contents')
    .option('-f, --force', 'ignore a missing path')
    .action(async (db: string, path: string, o: { recursive?: boolean; force?: boolean }) =>
      withAgent(db, async (agent) => {
        await (await viewOf(agent)).rm(path, {
          recursive: o.recursive ?? false,
          force: o.force ?? false,
        })
      }),
    )
  fs.command('mv')
    .argument('<db>')
    .argument('<from>')
    .argument('<to>')
    .action(async (db: string, from: string, to: string) =>
      withAgent(db, async (agent) => (await viewOf(agent)).rename(from, to)),
    )
  fs.command('cp')
    .argument('<db>')
    .argument('<from>')
    .argument('<to>')
    .option('-r, --recursive', 'copy directories')
    .action(async (db: string, from: string, to: string, o: { recursive?: boolean }) =>
      withAgent(db, async (agent) =>
        (await viewOf(agent)).cp(from, to, { recursive: o.recursive ?? false }),
      ),
    )
  fs.command('ln')
    .argument('<db>')
    .argument('<target>')
    .argument('<link>')
    .option('-s, --symbolic', 'make a symbolic link')
    .action(async (db: string, target: string, link: string, o: { symbolic?: boolean }) =>
      withAgent(db, async (agent) => {
        const view = await viewOf(agent)
        if (o.symbolic) await view.symlink(target, link)
        else await view.link(target, link)
      }),
    )
  fs.command('stat')
    .argument('<db>')
    .argument('<path>')
    .option('--json', 'print JSON')
    .action(async (db: string, path: string, o: { json?: boolean }) =>
      withAgent(db, async (agent) => {
        const s = await (await viewOf(agent)).lstat(path)
        const info = {
          path,
          type: s.isDirectory()
            ? 'directory'
            : s.isSymbolicLink()
              ? 'symlink'
              : s.isFile()
                ? 'file'
                : 'special',
          size: s.size,
          mode: (s.mode & 0o7777).toString(8),
          ino: s.ino,
          nlink: s.nlink,
          uid: s.uid,
          gid: s.gid,
          atime: s.atime.toISOString(),
          mtime: s.mtime.toISOString(),
          ctime: s.ctime.toISOString(),
          version: s.version,
        }
        if (o.json) return json(info)
        for (const [k, v] of Object.entries(info)) print(`${k.padEnd(8)} ${v}`)
      }),
    )

  program
    .command('import')
    .description(
      'copy a host directory into a database (created if missing); modes, times and symlinks kept',
    )
    .argument('<hostdir>')
    .argument('[db]', 'agent id or database path', 'default')
    .option('-f, --force', 'replace files and links that already exist')
    .action(async (hostDir: string, db: string, o: { force?: boolean }) => {
      const { existsSync } = await import('node:fs')
      if (!existsSync(hostDir)) throw new Error(`no such directory: ${hostDir}`)
      const agent = existsSync(databasePath(db))
        ? await openExisting(db)
        : await AgentFS.open({ path: databasePath(db) })
      try {
        const result = await importTree(hostDir, await viewOf(agent), { force: o.force ?? false })
        print(`imported ${result.entries} entries (${result.bytes} bytes) into ${agent.path}`)
      } catch (error) {
        throw explainDatabaseError(error, databasePath(db))
      } finally {
        await agent.close()
      }
    })
  program
    .command('export')
    .description("copy a database's files into a host directory; modes, times and symlinks kept")
    .argument('<db>')
    .argument('<hostdir>')
    .option('-f, --force', 'export into a folder that is not empty, replacing what is there')
    .action(async (db: string, hostDir: string, o: { force?: boolean }) =>
      withAgent(db, async (agent) => {
        const result = await exportTree(await viewOf(agent), hostDir, { force: o.force ?? false })
        print(`exported ${result.entries} entries (${result.bytes} bytes) to ${hostDir}`)
      }),
    )

  const kv = program.command('kv').description('the key-value store')
  kv.command('get')
    .argument('<db>')
    .argument('<key>')
    .action(async (db: string, key: string) =>
      withAgent(db, async (agent) => {
        const entry = await agent.kv.getEntry(key)
        if (!entry) throw new Error(`key '${key}' is not set`)
        json(entry.value)
      }),
    )
  kv.command('set')
    .description('store VALUE (JSON; text that is not JSON is stored as a string)')
    .argument('<db>')
    .argument('<key>')
    .argument('<value>')
    .action(async (db: string, key: string, value: string) =>
      withAgent(db, async (agent) => {
        let parsed: unknown
        try {
          parsed = JSON.parse(value)
        } catch {
          parsed = value
        }
        print(`version ${await agent.kv.set(key, parsed)}`)
      }),
    )
  kv.command('rm')
    .argument('<db>')
    .argument('<key>')
    .action(async (db: string, key: string) =>
      withAgent(db, async (agent) => {
        if (!(await agent.kv.delete(key))) throw new Error(`key '${key}' is not set`)
      }),
    )
  kv.command('ls')
    .argument('<db>')
    .argument('[prefix]', 'only keys starting with this', '')
    .option('--json', 'print JSON')
    .action(async (db: string, prefix: string, o: { json?: boolean }) =>
      withAgent(db, async (agent) => {
        const entries = []
        for await (const e of agent.kv.entries(prefix ? { prefix } : {})) entries.push(e)
        if (o.json) return json(entries)
        for (const e of entries) print(`${e.key} = ${JSON.stringify(e.value)}`)
      }),
    )

  program
    .command('timeline')
    .description('tool calls, newest first (filters apply before the limit)')
    .argument('<db>')
    .option('--session <id>')
    .option('--name <tool>')
    .option('--since <time>', 'ISO time or ms since the epoch')
    .option('--errors', 'only failed calls')
    .option('--limit <n>', 'at most this many', positiveInteger('--limit'), 50)
    .option('--json', 'print JSON')
    .action(
      async (
        db: string,
        o: {
          session?: string
          name?: string
          since?: string
          errors?: boolean
          limit: number
          json?: boolean
        },
      ) =>
        withAgent(db, async (agent) => {
          const since =
            o.since === undefined
              ? undefined
              : /^\d+$/.test(o.since)
                ? Number(o.since)
                : Date.parse(o.since)
          if (since !== undefined && Number.isNaN(since))
            throw new Error(`--since: cannot read '${o.since}' as a time`)
          const calls = await agent.tools.query({
            limit: o.limit,
            ...(o.session === undefined ? {} : { sessionId: o.session }),
            ...(o.name === undefined ? {} : { name: o.name }),
            ...(since === undefined ? {} : { since }),
            ...(o.errors ? { errorsOnly: true } : {}),
          })
          if (o.json) return json(calls)
          if (calls.length === 0) return print('no tool calls recorded (with these filters)')
          for (const c of calls) {
            print(
              `${new Date(c.startedAt).toISOString()} #${c.id} ${c.name} ${c.status}${c.durationMs === null ? '' : ` ${c.durationMs.toFixed(1)}ms`}${c.error ? ` — ${c.error.split('\n')[0]}` : ''}`,
            )
          }
        }),
    )
  program
    .command('stats')
    .description('per-tool statistics')
    .argument('<db>')
    .option('--json', 'print JSON')
    .action(async (db: string, o: { json?: boolean }) =>
      withAgent(db, async (agent) => {
        const stats = await agent.tools.stats()
        if (o.json) return json(stats)
        if (stats.length === 0) return print('no tool calls recorded')
        const ms = (v: number | null) => (v === null ? '-' : v.toFixed(1))
        const rows = [
          ['tool', 'calls', 'ok', 'failed', 'avg ms', 'p50 ms', 'p95 ms'],
          ...stats.map((s) => [
            s.name,
            String(s.totalCalls),
            String(s.successful),
            String(s.failed),
            ms(s.avgDurationMs),
            ms(s.p50DurationMs),
            ms(s.p95DurationMs),
          ]),
        ]
        // An aligned table: names to the left, numbers to the right.
        const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)))
        for (const row of rows)
          print(
            row
              .map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
              .join('  ')
              .trimEnd(),
          )
      }),
    )
  program
    .command('info')
    .description('schema version, chunk size, counts and sizes')
    .argument('<db>')
    .option('--json', 'print JSON')
    .action(async (db: string, o: { json?: boolean }) =>
      withAgent(db, async (agent) => {
        const info = { path: agent.path, ...(await describeDatabase(agent.db)) }
        if (o.json) return json(info)
        const notes: Record<string, string> = {
          specVersion: 'the Agent Filesystem Specification layout the tables follow',
          schemaVersion: "this library's own extension tables (PRAGMA user_version)",
        }
        for (const [k, v] of Object.entries(info))
          print(`${k.padEnd(14)} ${v}${notes[k] ? `   (${notes[k]})` : ''}`)
      }),
    )
  program
    .command('fsck')
    .description('check every consistency rule of the spec; --repair fixes the safe ones')
    .argument('<db>')
    .option(
      '--repair',
      'recount links and sizes, drop rows that point at nothing, re-derive whiteout parents',
    )
    .option('--json', 'print JSON')
    .action(async (db: string, o: { repair?: boolean; json?: boolean }) => {
      // A file too damaged to open is a finding too, reported like the others.
      let report: FsckReport
      try {
        report = await withAgent(db, (agent) => fsck(agent.db, { repair: o.repair ?? false }))
      } catch (error) {
        if ((error as AgentFsError).code !== 'CORRUPT') throw error
        const finding = {
          rule: SQLITE_INTEGRITY_RULE,
          message: (error as Error).message,
          repairable: false,
        }
        report = { findings: [finding], repaired: [], ok: false }
      }
      if (o.json) json(report)
      else {
        for (const f of report.repaired) print(`repaired  ${f.rule}: ${f.message}`)
        for (const f of report.findings)
          print(`${f.repairable ? 'fixable ' : 'problem '}  ${f.rule}: ${f.message}`)
        print(
          report.ok
            ? 'clean'
            : `${report.findings.length} problem(s)${report.findings.some((f) => f.repairable) ? '; run with --repair to fix the safe ones' : ''}`,
        )
      }
      if (!report.ok) process.exitCode = 1
    })

  program
    .command('migrate')
    .description('bring a database to the current layout (one transaction)')
    .argument('<db>')
    .option('--dry-run', 'only show what would change')
    .action(async (db: string, o: { dryRun?: boolean }) => {
      const path = databasePath(db)
      if (o.dryRun) {
        const { betterSqlite3Driver } = await import('@agentfs/driver-better-sqlite3')
        const { guardDriver } = await import('@agentfs/core')
        const driver = guardDriver(betterSqlite3Driver({ path, readonly: true }))
        try {
          const plan = await planMigration(driver)
          print(
            plan.steps.length === 0
              ? `${path} is up to date (layout ${plan.from})`
              : `from layout ${plan.from}:\n${plan.steps.map((s) => `  ${s.description}`).join('\n')}`,
          )
        } finally {
          await driver.close()
        }
        return
      }
      await withAgent(
        db,
        async (agent) => {
          const steps = agent.db.migration.steps
          print(
            steps.length === 0
              ? `${path} is up to date`
              : `migrated from ${agent.db.migration.from}:\n${steps.map((s) => `  ${s.description}`).join('\n')}`,
          )
        },
        { migrate: true },
      )
    })

  for (const [name, description] of [
    ['diff', 'what an overlay database changed relative to its base'],
    ['commit', 'apply an overlay database to its base directory, then empty it'],
    ['discard', "throw an overlay database's changes away"],
  ] as const) {
    const command = program.command(name).description(description).argument('<db>')
    if (name === 'diff') command.option('--json', 'print JSON')
    command.action(async (db: string, o: { json?: boolean }) =>
      withAgent(db, async (agent) => {
        const overlay = await openOverlay(agent.db)
        if (name === 'diff') {
          const pending = await overlay.pendingCommit()
          if (pending)
            print(
              `an interrupted commit is pending: ${pending.steps - pending.done} of ${pending.steps} steps left (first: ${pending.pending[0] ?? '-'}); run \`agentfs commit ${db}\` to finish it`,
            )
          const changes = await overlay.diff()
          if (o.json) return json(changes)
          if (changes.length === 0) return print('no changes')
          for (const c of changes) {
            print(
              `${c.kind === 'added' ? 'A' : c.kind === 'deleted' ? 'D' : 'M'} ${c.path}${c.type === 'directory' ? '/' : ''}`,
            )
            if (c.diff) print(colorDiff(c.diff, useColor()))
          }
        } else if (name === 'commit') {
          const { HostFileSystem } = await import('@agentfs/overlay')
          const base = overlay.base as { root?: string }
          const target = base.root
            ? new HostFileSystem({ root: base.root, writable: true })
            : overlay.base
          const result = await overlay.commit(target)
          print(
            result.resumed
              ? 'finished the interrupted commit'
              : `applied ${result.applied.length} change(s)`,
          )
        } else {
          await overlay.discard()
          print('discarded')
        }
      }),
    )
  }

  program
    .command('serve')
    .description('serve a database')
    .command('mcp')
    .description('an MCP server over stdio with the AgentFS tools')
    .argument('<db>')
    .option('--read-only', 'only the tools that change nothing')
    .action(async (db: string, o: { readOnly?: boolean }) => {
      const agent = await openExisting(db)
      const { serveMcpStdio } = await import('@agentfs/mcp')
      await serveMcpStdio({
        fs: await viewOf(agent),
        kv: agent.kv,
        audit: agent.tools,
        sessionId: 'mcp',
        ...(o.readOnly ? { readOnly: true } : {}),
      })
    })
}
