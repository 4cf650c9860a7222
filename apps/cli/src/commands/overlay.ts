import type { FileSystem } from '@agentfs/fs'
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
      'merge text files both sides changed, line by line, instead of refusing (conflicting lines are listed; nothing is applied then)',
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
              for (const line of conflictLines(error, db, BRANCH_SIDES)) print(line)
            throw error
          })
          return print(
            `applied ${result.applied.length} change(s) to ${described.path}${result.merged?.length ? ` (merged: ${result.merged.join(', ')})` : ''}; "agentfs restore ${described.path} ${result.before.name}" undoes it`,
          )
        }
        // An overlay commit empties the session: this snapshot brings its changes back on undo.
        // With it, the host's entries the commit replaces are kept, so undo can bring them back.
        const before = o.snapshot
          ? await agent.snapshot(undefined, { kind: 'auto', reason: 'before commit' })
          : undefined
        const base = overlay.base as { root?: string }
        const target = base.root
          ? new HostFileSystem({ root: base.root, writable: true })
          : overlay.base
        const result = await overlay
          .commit(target, {
            keepSpecialBits: o.keepSetuid === true,
            // AgentFS's own databases (sessions, this one) are never written by a commit.
            protect: ['/.agentfs'],
            ...(before ? { undoId: before.name } : {}),
            ...(o.merge ? { merge: true as const } : {}),
          })
          .catch((error: unknown) => {
            if (error instanceof MergeConflictError)
              for (const line of conflictLines(error, db, HOST_SIDES)) print(line)
            throw error
          })
        print(
          result.resumed
            ? 'finished the interrupted commit'
            : `applied ${result.applied.length} change(s)${result.merged?.length ? ` (merged: ${result.merged.join(', ')})` : ''}`,
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
    .command('resolve')
    .description(
      "after writing the resolution of a merge conflict: count the base's current version of PATH as the one the overlay or branch started from",
    )
    .argument('<db>')
    .argument('<paths...>')
    .action(async (db: string, paths: string[]) =>
      withAgent(db, async (agent) => {
        const described = await readOverlayBase(agent.db)
        if (!described)
          throw new Error(
            `${db} is not an overlay or a branch, so it has nothing to merge: resolve applies to "agentfs commit --merge"`,
          )
        const overlay = await openOverlay(agent.db, { openBase: openBranchBase })
        const resolve = async (target?: FileSystem) => {
          for (const path of paths) await overlay.resolve(path, target)
        }
        // A branch resolves against the live database, an overlay against its base directory.
        if (described.kind === 'snapshot')
          await withAgent(described.path, (live) => resolve(live.fs))
        else await resolve()
        print(`resolved ${paths.join(', ')}: "agentfs commit${' --merge'} ${db}" applies them`)
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
function conflictLines(
  error: MergeConflictError,
  db: string,
  sides: { ours: string; base: string; theirs: string },
): string[] {
  const out: string[] = []
  for (const m of error.merges) {
    if (m.hunks.length === 0) out.push(`conflict ${m.path}: ${m.reason ?? 'not merged'}`)
    for (const h of m.hunks)
      out.push(
        `conflict ${m.path}: ${sides.ours} line ${h.oursLine}, ${sides.base} line ${h.baseLine}, ${sides.theirs} line ${h.theirsLine}`,
      )
  }
  const first = error.merges[0]?.path ?? 'PATH'
  out.push(
    `to resolve: write the merged text into ${db} (agentfs fs write ${db} ${first} …), run "agentfs resolve ${db} ${first}", then commit again`,
  )
  return out
}

const BRANCH_SIDES = { ours: 'branch', base: 'snapshot', theirs: 'live' }
const HOST_SIDES = { ours: 'overlay', base: 'ancestor', theirs: 'host' }
