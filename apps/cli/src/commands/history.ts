import { existsSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import {
  commitUndoable,
  HostFileSystem,
  openOverlay,
  readOverlayBase,
  rebaseOverlayTokens,
  saveOverlayBase,
  undoCommit,
} from '@agentfs/overlay'
import {
  AgentFS,
  type Blame,
  type BlameLine,
  type Change,
  storedVersions,
  storeVersions,
} from '@agentfs/sdk'
import type { Command } from 'commander'
import { encryption } from '../db-key.js'
import { databasePath, openBranchBase } from '../open.js'
import {
  changeTarget,
  colorDiff,
  json,
  positiveInteger,
  print,
  useColor,
  withAgent,
} from './shared.js'

const when = (us: number) => new Date(Math.floor(us / 1000)).toISOString()

/**
 * One change, one line. `grouped` holds the transactions shown with several changes: each of
 * their lines names the transaction (`tx #` and its first change's seq).
 */
function describe(c: Change, grouped: ReadonlySet<number> = new Set()): string {
  const who = [
    (grouped.has(c.txid) || c.txid !== c.seq) && `tx #${c.txid}`,
    c.sessionId && `session ${c.sessionId}`,
    c.toolCallId !== null && `call #${c.toolCallId}`,
  ]
    .filter(Boolean)
    .join(', ')
  // The first 16 hex digits of the content after the change (`--json` has the whole hash).
  const hash = c.hash === null ? '' : ` ${c.hash.slice(0, 23)}`
  const message = c.message === null ? '' : ` — ${JSON.stringify(c.message)}`
  return `${when(c.atUs)} #${c.seq} ${changeTarget(c)}${hash}${who ? ` [${who}]` : ''}${message}`
}

/**
 * `git blame`'s shape: the change (`#seq`, or `?` when unknown), then who and when, the line
 * number and the text. The messages follow once per change, at its first line.
 */
export function blameLines(blame: Blame): string[] {
  const who = (l: BlameLine) => {
    const c = l.change
    if (!c) {
      const { after, by } = l.between ?? { after: null, by: null }
      return `unknown${after === null ? '' : ` after #${after}`}${by === null ? '' : ` by #${by}`}`
    }
    const call = c.toolCall ? ` ${c.toolCall.name}#${c.toolCall.id}` : ''
    return `${c.sessionId ?? '-'}${call} ${new Date(c.at).toISOString().replace('T', ' ').slice(0, 19)}`
  }
  const ids = blame.lines.map((l) => (l.change ? `#${l.change.seq}` : '?'))
  const idWidth = Math.max(1, ...ids.map((s) => s.length))
  const whoWidth = Math.max(1, ...blame.lines.map((l) => who(l).length))
  const numberWidth = String(blame.lines.length).length
  const seen = new Set<number>()
  const out: string[] = []
  for (const [i, l] of blame.lines.entries()) {
    const c = l.change
    if (c?.message && !seen.has(c.seq)) out.push(`${''.padEnd(idWidth)} # #${c.seq}: ${c.message}`)
    if (c) seen.add(c.seq)
    out.push(
      `${ids[i]!.padEnd(idWidth)} (${who(l).padEnd(whoWidth)} ${String(l.line).padStart(numberWidth)}) ${l.text}`,
    )
  }
  return out
}

/** The newest automatic snapshot taken before a run or a commit: what `undo` restores. */
async function lastUndoable(agent: AgentFS) {
  const all = await agent.history.listSnapshots()
  return all.filter((s) => s.kind === 'auto' && /^before (run|commit)/.test(s.reason ?? '')).at(-1)
}

/** Takes a commit onto the overlay's host directory back, when that commit recorded how. */
async function undoHostCommit(agent: AgentFS, id: string) {
  if (!(await commitUndoable(agent.db, id))) return undefined
  if (!(await readOverlayBase(agent.db)))
    throw new Error(`${id} records a commit onto a base, but the database has none any more`)
  // The target the commit wrote: the base directory, writable (as "agentfs commit" opens it).
  const overlay = await openOverlay(agent.db, { openBase: openBranchBase })
  const base = overlay.base as { root?: string }
  const target = base.root ? new HostFileSystem({ root: base.root, writable: true }) : overlay.base
  return undoCommit(agent.db, target, id)
}

/** `log`, `history`, `snapshot`, `snapshots`, `restore`, `undo`: what changed, and going back. */
export function registerHistory(program: Command): void {
  program
    .command('log')
    .description('the change feed: what changed, when, through which session and tool call')
    .argument('<db>')
    .argument('[path]', 'only changes of this path and below')
    .option('--follow', 'keep printing new changes until interrupted')
    .option(
      '--limit <n>',
      'at most this many of the newest (without --follow)',
      positiveInteger('--limit'),
      100,
    )
    .option('--tx <txid>', 'only the changes of this transaction', positiveInteger('--tx'))
    .option('--call <id>', 'only the changes this tool call made', positiveInteger('--call'))
    .option('--json', 'print JSON (one object per line with --follow)')
    .action(
      async (
        db: string,
        path: string | undefined,
        o: { follow?: boolean; limit: number; tx?: number; call?: number; json?: boolean },
      ) =>
        withAgent(db, async (agent) => {
          const query = {
            ...(path === undefined ? {} : { path, recursive: true }),
            ...(o.tx === undefined ? {} : { txid: o.tx }),
            ...(o.call === undefined ? {} : { toolCallId: o.call }),
          }
          const last = await agent.changes.last()
          const shown = (
            await agent.changes.since(0, { ...query, limit: o.limit, reverse: true })
          ).changes.reverse()
          const counts = new Map<number, number>()
          for (const c of shown) counts.set(c.txid, (counts.get(c.txid) ?? 0) + 1)
          const grouped = new Set([...counts].filter(([, n]) => n > 1).map(([txid]) => txid))
          if (o.json && !o.follow) json(shown)
          else for (const c of shown) print(o.json ? JSON.stringify(c) : describe(c, grouped))
          if (!o.follow) return
          const controller = new AbortController()
          const stop = () => controller.abort()
          process.once('SIGINT', stop)
          process.once('SIGTERM', stop)
          try {
            for await (const c of agent.changes.follow({
              ...query,
              cursor: last,
              signal: controller.signal,
              intervalMs: 100,
            }))
              print(o.json ? JSON.stringify(c) : describe(c))
          } finally {
            process.off('SIGINT', stop)
            process.off('SIGTERM', stop)
          }
        }),
    )
  program
    .command('history')
    .description("a file's changes, newest first, and which versions can be read back")
    .argument('<db>')
    .argument('<path>')
    .option('--json', 'print JSON')
    .action(async (db: string, path: string, o: { json?: boolean }) =>
      withAgent(db, async (agent) => {
        const versions = await agent.fs.history(path)
        if (o.json) return json(versions)
        for (const v of versions)
          print(
            `${new Date(v.at).toISOString()} ${v.op} ${v.path ?? ''} ${v.size ?? '-'} B version ${v.version ?? '-'}${v.readable ? ' (readable)' : ''}${v.toolCallId === null ? '' : ` [call #${v.toolCallId}]`}${v.message === null ? '' : ` — ${JSON.stringify(v.message)}`}`,
          )
      }),
    )
  program
    .command('blame')
    .description(
      'who wrote each line: the change, session and tool call that gave it its text (from kept versions)',
    )
    .argument('<db>')
    .argument('<path>')
    .option(
      '--version <token>',
      'blame this version (from agentfs history) instead of the current one',
    )
    .option(
      '--max-versions <n>',
      'walk at most this many versions back (default 1000)',
      positiveInteger('--max-versions'),
    )
    .option('--json', 'print JSON')
    .action(
      async (
        db: string,
        path: string,
        o: { version?: string; maxVersions?: number; json?: boolean },
      ) =>
        withAgent(db, async (agent) => {
          const blame = await agent.fs.blame(path, {
            ...(o.version === undefined ? {} : { version: o.version }),
            ...(o.maxVersions === undefined ? {} : { maxVersions: o.maxVersions }),
          })
          if (o.json) return json(blame)
          for (const line of blameLines(blame)) print(line)
          if (blame.unattributed > 0)
            process.stderr.write(
              `agentfs: ${blame.unattributed} of ${blame.lines.length} lines have no known change (versions not kept, or trimmed): "agentfs versions ${db} on" keeps them for every later write\n`,
            )
        }),
    )
  program
    .command('versions')
    .description(
      "keep past contents of files for every process that opens the database (the CLI's own writes too): on, off, or show the setting",
    )
    .argument('<db>')
    .argument('[setting]', 'on or off (none: show the setting)')
    .option(
      '--max-count <n>',
      'versions kept per file (default 20)',
      positiveInteger('--max-count'),
    )
    .option(
      '--max-days <n>',
      'versions older than this are dropped (default 30)',
      positiveInteger('--max-days'),
    )
    .option('--max-mib <n>', 'MiB of all kept versions (default 256)', positiveInteger('--max-mib'))
    .option('--json', 'print JSON')
    .action(
      async (
        db: string,
        setting: string | undefined,
        o: { maxCount?: number; maxDays?: number; maxMib?: number; json?: boolean },
      ) => {
        if (setting !== undefined && setting !== 'on' && setting !== 'off')
          throw new Error(`the setting is on or off, not ${JSON.stringify(setting)}`)
        const limits = o.maxCount !== undefined || o.maxDays !== undefined || o.maxMib !== undefined
        if (limits && setting !== 'on')
          throw new Error('--max-count, --max-days and --max-mib go with "on"')
        await withAgent(db, async (agent) => {
          if (setting !== undefined)
            await agent.db.transaction((tx) =>
              storeVersions(
                tx,
                setting === 'off'
                  ? false
                  : {
                      ...(o.maxCount === undefined ? {} : { maxCount: o.maxCount }),
                      ...(o.maxDays === undefined ? {} : { maxAgeMs: o.maxDays * 86_400_000 }),
                      ...(o.maxMib === undefined ? {} : { maxBytes: o.maxMib * 1024 * 1024 }),
                    },
              ),
            )
          const stored = await storedVersions(agent.db)
          if (o.json) return json({ versions: stored ?? null })
          print(
            stored === undefined
              ? 'versions: not set (each program decides when it opens the database; off by default)'
              : stored === false
                ? 'versions: off'
                : `versions: on (${stored.maxCount} per file, ${Math.round(stored.maxAgeMs / 86_400_000)} days, ${Math.round(stored.maxBytes / 1024 / 1024)} MiB in all, files up to ${Math.round(stored.maxFileBytes / 1024 / 1024)} MiB)`,
          )
        })
      },
    )
  program
    .command('undelete')
    .description(
      'bring back a deleted file or directory tree from kept versions or a snapshot, as new changes; --list shows what can be',
    )
    .argument('<db>')
    .argument('<path>', 'the deleted path (with --list: a directory to look under)')
    .option('--list', 'list the deleted paths under PATH instead, newest first')
    .option('-m, --message <text>', 'why: recorded with the changes')
    .option('--json', 'print JSON')
    .action(
      async (db: string, path: string, o: { list?: boolean; message?: string; json?: boolean }) =>
        withAgent(db, async (agent) => {
          if (o.list) {
            const list = await agent.fs.deleted(path)
            if (o.json) return json(list)
            if (list.length === 0) return print(`nothing deleted under ${path}`)
            for (const d of list)
              print(
                `${new Date(d.at).toISOString()} #${d.seq} ${d.op} ${d.path} ${d.recoverable ? `(from ${d.recoverable})` : '(not kept)'}${d.toolCallId === null ? '' : ` [call #${d.toolCallId}]`}`,
              )
            return
          }
          const back = await agent.fs.undelete(
            path,
            o.message === undefined ? {} : { message: o.message },
          )
          if (o.json) return json(back)
          print(
            `undeleted ${back.path} (${back.kind}: ${back.files} files, ${back.directories} directories, ${back.bytes} B) from ${back.from.join(' and ')}${back.snapshot ? ` (snapshot ${back.snapshot})` : ''}; deleted by change #${back.deletedBy}`,
          )
        }),
    )
  program
    .command('snapshot')
    .description(
      'record the whole state (files and kv) under a name; costs what changed since the last one',
    )
    .argument('<db>')
    .argument('[name]', 'default snapshot-<id>')
    .option('--reason <text>', 'why, shown by agentfs snapshots')
    .option(
      '--full',
      'compare the whole tree, not only what the change feed recorded (after other writers)',
    )
    .action(async (db: string, name: string | undefined, o: { reason?: string; full?: boolean }) =>
      withAgent(db, async (agent) => {
        const s = await agent.snapshot(name, {
          ...(o.reason === undefined ? {} : { reason: o.reason }),
          ...(o.full ? { full: true } : {}),
        })
        print(`snapshot ${s.name} (#${s.id}, change ${s.seq})`)
      }),
    )
  program
    .command('snapshots')
    .description('list snapshots, oldest first; --delete NAME removes one and reclaims its space')
    .argument('<db>')
    .option('--delete <name>', 'delete this snapshot')
    .option('--json', 'print JSON')
    .action(async (db: string, o: { delete?: string; json?: boolean }) =>
      withAgent(db, async (agent) => {
        if (o.delete !== undefined) {
          if (!(await agent.history.deleteSnapshot(o.delete)))
            throw new Error(
              `no snapshot named '${o.delete}'; list them with "agentfs snapshots ${db}"`,
            )
          return print(`deleted ${o.delete}`)
        }
        const list = await agent.history.listSnapshots()
        if (o.json) return json(list)
        if (list.length === 0) return print(`no snapshots; take one with "agentfs snapshot ${db}"`)
        for (const s of list)
          print(
            `${s.name}  ${new Date(s.createdAt).toISOString()}  ${s.kind}${s.reason ? `  ${s.reason}` : ''}`,
          )
      }),
    )
  program
    .command('restore')
    .description(
      'make files and kv what a snapshot holds (one transaction; undo with the printed name)',
    )
    .argument('<db>')
    .argument('<name>')
    .action(async (db: string, name: string) =>
      withAgent(db, async (agent) => {
        await needSnapshot(agent, db, name)
        const { before } = await agent.restore(name)
        print(
          `restored ${name}; the state before is snapshot ${before.name} (agentfs restore ${db} ${before.name} undoes this)`,
        )
      }),
    )
  program
    .command('undo')
    .description(
      'take back the last run or commit: the session as before it, and the host files a commit changed (refused if they changed since)',
    )
    .argument('<db>')
    .action(async (db: string) =>
      withAgent(db, async (agent) => {
        const last = await lastUndoable(agent)
        if (!last)
          throw new Error(`nothing to undo: ${db} has no snapshot taken before a run or commit`)
        // A commit onto a host directory is taken back there first: refused, changing
        // nothing, when the host changed since under a path the commit wrote.
        const host = await undoHostCommit(agent, last.name)
        const { before } = await agent.restore(last.name)
        if (host) await rebaseOverlayTokens(agent.db, host.tokens)
        // Undone once: the same undo must not apply twice.
        await agent.history.deleteSnapshot(last.name)
        print(
          host
            ? `undid ${last.reason}: ${host.restored.length} host path(s) are as before it, and the changes are back in ${db} (review with "agentfs diff ${db}")`
            : `undid ${last.reason}; redo with "agentfs restore ${db} ${before.name}"`,
        )
      }),
    )
}

/** `agentfs branch DB SNAPSHOT BRANCH`: a branch database over a snapshot of DB. */
export function registerBranch(program: Command): void {
  program
    .command('branch')
    .description(
      'a new database whose tree starts as a snapshot of DB: change it (fs, mount), then diff, commit onto DB (one transaction, refused on conflicts) or discard',
    )
    .argument('<db>')
    .argument('<snapshot>')
    .argument('<branch>', 'the new branch database (id or path)')
    .action(async (db: string, snapshot: string, branch: string) => {
      const path = databasePath(branch)
      if (existsSync(path)) throw new Error(`${path} exists; name a new database for the branch`)
      const { chunkSize, compression } = await withAgent(db, async (live) => {
        await needSnapshot(live, db, snapshot)
        return { chunkSize: live.db.chunkSize, compression: live.db.chunks.codec?.name }
      })
      mkdirSync(dirname(path), { recursive: true })
      // A branch of a compressed database is compressed too.
      const agent = await AgentFS.open({
        path,
        chunkSize,
        ...(compression ? { compression } : {}),
        ...encryption(),
      })
      try {
        await saveOverlayBase(agent.db, { kind: 'snapshot', path: databasePath(db), snapshot })
      } finally {
        await agent.close()
      }
      print(
        `branch ${branch} of ${db} at ${snapshot}; review with "agentfs diff ${branch}", apply with "agentfs commit ${branch}"`,
      )
    })
}

/** Refuses a snapshot name DB does not have, in the CLI's terms. */
export async function needSnapshot(agent: AgentFS, db: string, name: string): Promise<void> {
  if (!(await agent.history.getSnapshot(name)))
    throw new Error(
      `no snapshot named '${name}' in ${db}; list them with "agentfs snapshots ${db}"`,
    )
}

/** `agentfs diff DB --from A [--to B]`: snapshot differences (else the overlay diff). */
export async function printSnapshotDiff(
  agent: AgentFS,
  from: string,
  to: string | undefined,
  asJson: boolean,
  db: string,
): Promise<void> {
  for (const name of [from, to]) if (name !== undefined) await needSnapshot(agent, db, name)
  const changes = await agent.history.diff(from, to)
  if (asJson) return json(changes)
  if (changes.length === 0) return print('no changes')
  for (const c of changes) {
    print(
      `${c.kind === 'added' ? 'A' : c.kind === 'deleted' ? 'D' : 'M'} ${c.path}${c.type === 'directory' ? '/' : ''}`,
    )
    if (c.diff) print(colorDiff(c.diff, useColor()))
  }
}
