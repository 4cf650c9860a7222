import {
  type AgentFsError,
  describeDatabase,
  type FsckReport,
  fsck,
  SQLITE_INTEGRITY_RULE,
} from '@agentfs/core'
import type { Change } from '@agentfs/sdk'
import type { Command } from 'commander'
import {
  byteSize,
  changeTarget,
  json,
  nonNegativeNumber,
  positiveInteger,
  print,
  withAgent,
} from './shared.js'

/** Changes listed under one call by `timeline --changes`, at most. */
const CALL_CHANGES = 1000

/**
 * A call's changes, one line per transaction (the changes it made together): `tx #12: write
 * /a.md (5 B); write /b.md (7 B)`.
 */
export function transactionLines(changes: readonly Change[]): string[] {
  const lines: string[] = []
  let txid: number | undefined
  let parts: string[] = []
  const flush = () => {
    if (txid !== undefined) lines.push(`tx #${txid}: ${parts.join('; ')}`)
  }
  for (const c of changes) {
    if (c.txid !== txid) {
      flush()
      txid = c.txid
      parts = []
    }
    parts.push(changeTarget(c))
  }
  flush()
  return lines
}

/** `timeline`, `stats`, `info`, `fsck`: what a database holds and whether it is sound. */
export function registerInspect(program: Command): void {
  program
    .command('timeline')
    .description('tool calls, newest first (filters apply before the limit)')
    .argument('<db>')
    .option('--session <id>')
    .option('--name <tool>')
    .option('--since <time>', 'ISO time or ms since the epoch')
    .option('--errors', 'only failed calls')
    .option('--limit <n>', 'at most this many', positiveInteger('--limit'), 50)
    .option('--params', "each call's parameters (JSON, whole) under its line")
    .option('--full', "each call's parameters and result or error, whole, under its line")
    .option('--changes', "each call's changes under its line, one line per transaction")
    .option('--json', 'print JSON (parameters included, whole)')
    .action(
      async (
        db: string,
        o: {
          session?: string
          name?: string
          since?: string
          errors?: boolean
          limit: number
          params?: boolean
          full?: boolean
          changes?: boolean
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
            // Large payloads are read back only when they are printed.
            ...(o.params || o.full || o.json ? {} : { payloads: 'stub' as const }),
          })
          // Calls under way (or abandoned by a process that died) come first: they have no
          // tool_calls row yet.
          const pending =
            o.errors || since !== undefined
              ? []
              : (
                  await agent.tools.pending({
                    limit: o.limit,
                    ...(o.params || o.full || o.json ? {} : { payloads: 'stub' as const }),
                    ...(o.session === undefined ? {} : { sessionId: o.session }),
                  })
                ).filter((p) => o.name === undefined || p.name === o.name)
          // A call's changes, by its id (or, under way, its token), at most CALL_CHANGES.
          const changesOf = async (query: { toolCallId: number } | { callToken: string }) =>
            (await agent.changes.since(0, { ...query, limit: CALL_CHANGES })) as {
              changes: Change[]
              more: boolean
            }
          const withChanges = async <T extends object>(
            item: T,
            query: { toolCallId: number } | { callToken: string },
          ) => {
            const page = await changesOf(query)
            return { ...item, changes: page.changes, ...(page.more ? { moreChanges: true } : {}) }
          }
          if (o.json)
            return json(
              o.changes
                ? [
                    ...(await Promise.all(
                      pending.map((p) =>
                        withChanges({ ...p, status: 'pending' }, { callToken: p.token }),
                      ),
                    )),
                    ...(await Promise.all(calls.map((c) => withChanges(c, { toolCallId: c.id })))),
                  ]
                : [...pending.map((p) => ({ ...p, status: 'pending' })), ...calls],
            )
          const printChanges = async (query: { toolCallId: number } | { callToken: string }) => {
            if (!o.changes) return
            const page = await changesOf(query)
            for (const line of transactionLines(page.changes)) print(`  ${line}`)
            if (page.more) print(`  … more than ${CALL_CHANGES} changes (agentfs log --json)`)
          }
          const filtered =
            o.session !== undefined || o.name !== undefined || since !== undefined || o.errors
          if (calls.length === 0 && pending.length === 0)
            return print(`no tool calls recorded${filtered ? ' that match these filters' : ''}`)
          for (const p of pending) {
            print(
              `${new Date(p.startedAt).toISOString()} ${p.name} pending for ${(p.ageMs / 1000).toFixed(1)}s, started by ${p.owner ?? 'an unknown process'}${p.ours ? '' : ' (abandoned if that process is gone: agentfs reconcile)'}`,
            )
            if (o.params || o.full) print(`  parameters: ${JSON.stringify(p.parameters)}`)
            await printChanges({ callToken: p.token })
          }
          for (const c of calls) {
            print(
              `${new Date(c.startedAt).toISOString()} #${c.id} ${c.name} ${c.status}${c.durationMs === null ? '' : ` ${c.durationMs.toFixed(1)}ms`}${c.error ? ` — ${c.error.split('\n')[0]}` : ''}`,
            )
            // Whole, as recorded: nothing an agent sent is shortened here either.
            if (o.params || o.full) print(`  parameters: ${JSON.stringify(c.parameters)}`)
            if (o.full)
              print(
                c.status === 'error'
                  ? `  error: ${JSON.stringify(c.error)}`
                  : `  result: ${JSON.stringify(c.result)}`,
              )
            await printChanges({ toolCallId: c.id })
          }
        }),
    )
  program
    .command('reconcile')
    .description(
      'record tool calls started long ago and never completed (their process died) as failed',
    )
    .argument('<db>')
    .requiredOption(
      '--older-than <ms>',
      'calls started at least this many ms ago are abandoned',
      nonNegativeNumber('--older-than'),
    )
    .option('--json', 'print JSON')
    .action(async (db: string, o: { olderThan: number; json?: boolean }) =>
      withAgent(db, async (agent) => {
        const ids = await agent.tools.reconcile({ olderThan: o.olderThan })
        if (o.json) return json(ids)
        print(
          ids.length === 0
            ? 'no abandoned tool calls'
            : `recorded ${ids.length} abandoned tool call${ids.length === 1 ? '' : 's'} as failed: #${ids.join(', #')}`,
        )
      }),
    )
  program
    .command('payloads')
    .description(
      "the audit's payload store (parameters and results over 64 KiB, kept whole): its size and budget",
    )
    .argument('<db>')
    .option(
      '--budget <bytes>',
      'set the budget (e.g. 2GiB, or unlimited): calls are refused before they run once it is full',
      byteSize('--budget'),
    )
    .option('--json', 'print JSON')
    .action(async (db: string, o: { budget?: number; json?: boolean }) =>
      withAgent(db, async (agent) => {
        if (o.budget !== undefined)
          await agent.tools.setBudget(Number.isFinite(o.budget) ? o.budget : null)
        const usage = await agent.tools.usage()
        if (o.json) return json(usage)
        const mib = (n: number) => `${(n / 1024 ** 2).toFixed(1)} MiB`
        print(
          `${usage.payloads} payload${usage.payloads === 1 ? '' : 's'}, ${mib(usage.used)} of ${usage.budget === null ? 'an unlimited budget' : `a budget of ${mib(usage.budget)}`}` +
            (usage.budget !== null && usage.used >= usage.budget
              ? ': full, tool calls are refused (raise it with --budget)'
              : ''),
        )
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
          compression: 'how file content is stored (agentfs init --compress)',
          storedBytes: 'what the chunks take as stored',
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
}
