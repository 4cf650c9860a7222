import { type AuditReport, checkAuditKey } from '@agentfs/core'
import type { Command } from 'commander'
import { AUDIT_KEY_ENV, readAuditKey } from '../audit-key.js'
import { json, print, withAgent } from './shared.js'

function summary(report: AuditReport): string {
  const unsealed = report.unsealed.call + report.unsealed.change
  const trimmed = report.trimmedTo.map((t) => `${t.stream} slot ${t.slot} up to ${t.seq}`)
  return (
    `verified ${report.verified.call} tool call(s) and ${report.verified.change} change(s)` +
    (unsealed > 0
      ? `; ${report.unsealed.call} tool call(s) and ${report.unsealed.change} change(s) not sealed yet (run with --seal)`
      : '') +
    (trimmed.length > 0 ? `; trimmed: ${trimmed.join(', ')}` : '')
  )
}

/** `verify`: walk the audit chain; name every row altered, inserted or removed since sealed. */
export function registerVerify(program: Command): void {
  program
    .command('verify')
    .description(
      'prove the audit: every tool call and change is as sealed, nothing inserted, removed or cut off',
    )
    .argument('<db>')
    .option(
      '--key-file <file>',
      `a key the chain was sealed with (repeat for rotated keys; default $${AUDIT_KEY_ENV})`,
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--seal', 'seal what is not sealed yet first (with the first key)')
    .option('--head', 'print only the head: keep it where the agent cannot write')
    .option(
      '--expect-head <head>',
      'a head printed earlier: the chain must still reach it unchanged',
    )
    .option('--json', 'print JSON')
    .action(
      async (
        db: string,
        o: {
          keyFile?: string[]
          seal?: boolean
          head?: boolean
          expectHead?: string
          json?: boolean
        },
      ) => {
        const files = o.keyFile ?? (process.env[AUDIT_KEY_ENV] ? [process.env[AUDIT_KEY_ENV]] : [])
        const keys = files.map(readAuditKey)
        const { report, events } = await withAgent(db, async (agent) => {
          if (o.seal) await agent.seal(keys[0] === undefined ? {} : { key: keys[0] })
          const report = await agent.verify({
            keys,
            ...(o.expectHead === undefined ? {} : { expectHead: o.expectHead }),
          })
          // Memory events (@agentfs/memory) carry an HMAC each: checked with the same keys.
          const { verifyEvents } = await import('@agentfs/memory')
          const events = await verifyEvents(agent.db, keys.map(checkAuditKey))
          return { report, events }
        })
        const eventsOk = keys.length === 0 || events.ok
        if (o.json) json({ ...report, ok: report.ok && eventsOk, memoryEvents: events })
        else if (o.head && report.ok && eventsOk) print(report.head)
        else {
          for (const issue of report.issues) print(`altered  ${issue.message}`)
          if (report.issueCount > report.issues.length)
            print(`… and ${report.issueCount - report.issues.length} more`)
          if (keys.length > 0) for (const issue of events.issues) print(`altered  ${issue.message}`)
          print(
            report.ok
              ? summary(report)
              : `${report.issueCount} problem(s): the audit was altered after it was sealed; the first is ${report.issues[0]!.stream} ${report.issues[0]!.seq}`,
          )
          if (events.checked > 0)
            print(
              keys.length === 0
                ? `${events.checked} memory event(s) not verified: their HMACs need the key (--key-file or $${AUDIT_KEY_ENV})`
                : events.ok
                  ? `verified ${events.checked} memory event(s)`
                  : `${events.issues.length} memory event(s) altered or sealed with a key not given`,
            )
        }
        if (!report.ok || !eventsOk) process.exitCode = 1
      },
    )
}
