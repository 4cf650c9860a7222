import { HostFileSystem, openOverlay } from '@agentfs/overlay'
import type { Command } from 'commander'
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
        if (o.from !== undefined) return printSnapshotDiff(agent, o.from, o.to, o.json === true)
        const overlay = await openOverlay(agent.db)
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
      }),
    )

  program
    .command('commit')
    .description('apply an overlay database to its base directory, then empty it')
    .argument('<db>')
    .action(async (db: string) =>
      withAgent(db, async (agent) => {
        const overlay = await openOverlay(agent.db)
        const base = overlay.base as { root?: string }
        const target = base.root
          ? new HostFileSystem({ root: base.root, writable: true })
          : overlay.base
        // An overlay commit empties the session: this snapshot brings its changes back on undo.
        await agent.snapshot(undefined, { kind: 'auto', reason: 'before commit' })
        const result = await overlay.commit(target)
        print(
          result.resumed
            ? 'finished the interrupted commit'
            : `applied ${result.applied.length} change(s)`,
        )
      }),
    )

  program
    .command('discard')
    .description("throw an overlay database's changes away")
    .argument('<db>')
    .action(async (db: string) =>
      withAgent(db, async (agent) => {
        await (await openOverlay(agent.db)).discard()
        print('discarded')
      }),
    )
}
