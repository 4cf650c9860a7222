import { commitOnto } from '@agentfs/history'
import {
  HostFileSystem,
  MergeConflictError,
  type OverlayChange,
  openOverlay,
  pendingCommit,
  readOverlayBase,
  specialBitNames,
} from '@agentfs/overlay'
import type { Command } from 'commander'
import { openBranchBase } from '../open.js'
import { leftOutLines } from '../transfer.js'
import { printSnapshotDiff } from './history.js'
import { colorDiff, json, print, useColor, withAgent } from './shared.js'

/** `diff`, `commit`, `discard`: review and apply an overlay database. */
export function registerOverlay(program: Command): void {
  program
    .command('diff')
    .description(
      'what an overlay database changed relative to its base; with --from, between snapshots',
    )
    .argument('<db>')
    .option('--from <snapshot>', 'compare this snapshot …')
    .option('--to <snapshot>', '… with this one (default: now)')
    .option('--json', 'print JSON')
    .action(async (db: string, o: { json?: boolean; from?: string; to?: string }) =>
      withAgent(db, async (agent) => {
        if (o.to !== undefined && o.from === undefined) throw new Error('--to needs --from')
        if (o.from !== undefined) return printSnapshotDiff(agent, o.from, o.to, o.json === true, db)
        if (!(await readOverlayBase(agent.db)))
          throw new Error(
            `${db} is not an overlay (one made by "agentfs init DB --base DIR" or "agentfs run"), so it has no base to diff against; compare snapshots with "agentfs diff ${db} --from SNAPSHOT"`,
          )
        const overlay = await openOverlay(agent.db, { openBase: openBranchBase })
        const changes = await overlay.diff()
        if (o.json) return json(changes)
        if (changes.length === 0) return print('no changes')
        for (const c of changes) {
          print(
            `${c.kind === 'added' ? 'A' : c.kind === 'deleted' ? 'D' : 'M'} ${c.path}${c.type === 'directory' ? '/' : ''}${c.type === 'other' ? '  (a FIFO, socket or device: commit skips it)' : ''}`,
          )
          // Everything a commit will do is shown: modes (and the bits it will drop), owners.
          for (const line of metadataLines(c)) print(`    ${line}`)
          if (c.diff) print(colorDiff(c.diff, useColor()))
        }
      }),
    )

  program
    .command('commit')
    .description(
      'apply an overlay database to its base directory (or a branch to its database), then empty it',
    )
    .argument('<db>')
    .option('--no-snapshot', 'do not snapshot first (then agentfs undo cannot take it back)')
    .option(
      '--keep-setuid',
      'give committed files their setuid, setgid and sticky bits (dropped by default)',
    )
    .option(
      '--merge',
      'a branch: merge text files both sides changed, line by line, instead of refusing (conflicting lines are listed; nothing is applied then)',
    )
    .action(async (db: string, o: { snapshot: boolean; keepSetuid?: boolean; merge?: boolean }) =>
      withAgent(db, async (agent) => {
        const described = await readOverlayBase(agent.db)
        const overlay = await openOverlay(agent.db, { openBase: openBranchBase })
        if (described?.kind === 'snapshot') {
          // A branch: applied to the live database in one transaction, which snapshots first.
          // The branch is snapshotted too: a commit that dies after emptying the branch but
          // before the live transaction commits leaves the live tree untouched, and
          // "agentfs undo" on the branch brings its changes back.
          if (o.snapshot) await agent.snapshot(undefined, { kind: 'auto', reason: 'before commit' })
          // A journal left by such a commit is moot: the live side applied nothing of it.
          if (await pendingCommit(agent.db))
            await agent.db.execute({ sql: 'DROP TABLE agentfs_overlay_commit' })
          const result = await withAgent(described.path, (live) =>
            commitOnto(overlay, live.fs, live.history, described.snapshot, {
              merge: o.merge === true,
            }),
          ).catch((error: unknown) => {
            if (error instanceof MergeConflictError)
              for (const line of conflictLines(error)) print(line)
            throw error
          })
          return print(
            `applied ${result.applied.length} change(s) to ${described.path}${result.merged?.length ? ` (merged: ${result.merged.join(', ')})` : ''}; "agentfs restore ${described.path} ${result.before.name}" undoes it`,
          )
        }
        if (o.merge)
          throw new Error(
            `--merge needs the content each file started from: branches keep it (their snapshot), an overlay of a host directory does not yet; commit without --merge, or resolve by hand`,
          )
        // An overlay commit empties the session: this snapshot brings its changes back on undo.
        // With it, the host's entries the commit replaces are kept, so undo can bring them back.
        const before = o.snapshot
          ? await agent.snapshot(undefined, { kind: 'auto', reason: 'before commit' })
          : undefined
        const base = overlay.base as { root?: string }
        const target = base.root
          ? new HostFileSystem({ root: base.root, writable: true })
          : overlay.base
        const result = await overlay.commit(target, {
          keepSpecialBits: o.keepSetuid === true,
          // AgentFS's own databases (sessions, this one) are never written by a commit.
          protect: ['/.agentfs'],
          ...(before ? { undoId: before.name } : {}),
        })
        print(
          result.resumed
            ? 'finished the interrupted commit'
            : `applied ${result.applied.length} change(s)`,
        )
        for (const line of leftOutLines(
          result.droppedBits ?? [],
          result.skipped ?? [],
          '--keep-setuid',
        ))
          print(line)
      }),
    )

  program
    .command('discard')
    .description("throw an overlay database's changes away")
    .argument('<db>')
    .action(async (db: string) =>
      withAgent(db, async (agent) => {
        await (await openOverlay(agent.db, { openBase: openBranchBase })).discard()
        print('discarded')
      }),
    )
}

const octal = (mode: number) => mode.toString(8).padStart(3, '0')

/** A change's mode and owner lines, as `agentfs diff` prints them under the path. */
function metadataLines(c: OverlayChange): string[] {
  const lines: string[] = []
  if (c.mode) {
    const special = specialBitNames(c.mode.after)
    lines.push(
      `mode ${c.mode.before === undefined ? '' : `${octal(c.mode.before)} -> `}${octal(c.mode.after)}${special.length > 0 ? ` (${special.join(', ')}: dropped by commit unless --keep-setuid)` : ''}`,
    )
  }
  if (c.owner)
    lines.push(
      `owner ${c.owner.before.uid}:${c.owner.before.gid} -> ${c.owner.after.uid}:${c.owner.after.gid} (commit applies no owner: files are the committing user's)`,
    )
  return lines
}

/** A merge's conflicts, as `agentfs commit --merge` prints them before failing. */
function conflictLines(error: MergeConflictError): string[] {
  const out: string[] = []
  for (const m of error.merges) {
    if (m.hunks.length === 0) out.push(`conflict ${m.path}: ${m.reason ?? 'not merged'}`)
    for (const h of m.hunks)
      out.push(
        `conflict ${m.path}: branch line ${h.oursLine}, snapshot line ${h.baseLine}, live line ${h.theirsLine}`,
      )
  }
  return out
}
