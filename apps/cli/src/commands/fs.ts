import type { Dirent, FileSystem } from '@agentfs/fs'
import { withMessage } from '@agentfs/sdk'
import type { Command } from 'commander'
import { viewOf } from '../open.js'
import { json, print, withAgent } from './shared.js'

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

/** `fs …`: files in a database (the overlay view for overlay databases). */
export function registerFs(program: Command): void {
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
    .option(
      '-m, --message <text>',
      'why: recorded with the change, shown by log, history and blame',
    )
    .action(
      async (db: string, path: string, content: string | undefined, o: { message?: string }) =>
        withAgent(db, async (agent) => {
          if (content === undefined && process.stdin.isTTY)
            process.stderr.write(
              'agentfs: reading the content from standard input (end it with Ctrl-D)\n',
            )
          const data = content ?? (await readStdin())
          const parent = path.slice(0, path.lastIndexOf('/'))
          const write = async (view: FileSystem) => {
            if (parent)
              await view.mkdir(parent, { recursive: true }).catch(async (error: unknown) => {
                // mkdir -p says EEXIST when a file holds the name; what is meant is ENOTDIR.
                const kind = await view.stat(parent).catch(() => undefined)
                if (kind && !kind.isDirectory())
                  throw Object.assign(
                    new Error(
                      `ENOTDIR: not a directory, ${parent} is a file: cannot write ${path}`,
                    ),
                    { code: 'ENOTDIR' },
                  )
                throw error
              })
            await view.writeFile(path, data)
          }
          // The parents and the file in one transaction: all of it, or nothing.
          const view = (await viewOf(agent)) as FileSystem & {
            transaction?: (fn: (view: FileSystem) => Promise<void>) => Promise<void>
          }
          const run = () => (view.transaction ? view.transaction(write) : write(view))
          await (o.message === undefined ? run() : withMessage(o.message, run))
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
        (await viewOf(agent)).cp(from, to, {
          recursive: o.recursive ?? false,
          verbatimSymlinks: true,
        }),
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
}

/**
 * All of standard input. Read as a stream: a synchronous read of fd 0 fails with EAGAIN when the
 * pipe is non-blocking (as Node.js parents make them) and more than one pipe buffer is coming.
 */
async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}
