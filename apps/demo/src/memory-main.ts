// The memory demo (seed 003): a scripted model tends a user's garden of Markdown files through
// the memory toolbelt, under the memory policy, offline. It runs the seed's three flows, tries
// one hard-blocked edit and one retried call, then prints the events with their statuses, the
// lint warnings, the history copies and the verification of the audit and the events.
//
// Usage: node dist/memory-main.js [--db PATH]
import { randomBytes } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { lintDocument } from '@agentfs/memory'
import { AgentFS } from '@agentfs/sdk'
import { MEMORY_SESSION, PROFILE_PATH, plantGarden, runMemorySession } from './memory.js'
import { drawTree } from './session.js'

const { values } = parseArgs({ options: { db: { type: 'string' } } })
const dir = mkdtempSync(join(tmpdir(), 'agentfs-memory-demo-'))
const path = values.db ?? join(dir, 'garden.db')
// The events' HMACs and the audit seal use this key; a deployment keeps it outside the database.
const keyFile = join(dir, 'audit.key')
const key = randomBytes(32)
writeFileSync(keyFile, key.toString('hex'), { mode: 0o600 })
const agent = await AgentFS.open({ path, audit: { key: { key }, sealOnClose: true } })
try {
  await plantGarden(agent)
  console.log(`AgentFS memory demo — database ${path}\n`)
  const { result, memory } = await runMemorySession(agent)
  console.log(`agent (${result.steps.length} steps): ${result.text}\n`)

  console.log('tool calls:')
  for (const c of await agent.tools.bySession(MEMORY_SESSION)) {
    // A retry with the same idempotency key answers as the first call and changes nothing.
    const replayed = /^Already applied/.test((c.result as { text?: string } | null)?.text ?? '')
    const why = c.error ? `\n      ↳ ${c.error.split('\n')[0]!.slice(0, 160)}` : ''
    console.log(
      `  #${c.id} ${c.name.padEnd(17)} ${c.status}${replayed ? ' (a retry: the first answer, nothing changed)' : ''}${why}`,
    )
  }

  console.log('\nevents (oldest first):')
  for (const e of (await memory.query()).reverse())
    console.log(
      `  ${e.status.padEnd(9)} ${`${e.type}/${e.op}`.padEnd(30)} ${e.file_path ?? ''}${e.section_anchor ? `#${e.section_anchor}` : ''}${e.error ? `\n      ↳ ${e.error.slice(0, 150)}` : ''}`,
    )

  console.log('\nlint of the profile:')
  const lint = lintDocument(await agent.fs.readFile(PROFILE_PATH, 'utf8'))
  if (lint.diagnostics.length === 0) console.log('  no warnings')
  for (const d of lint.diagnostics) console.log(`  ${d.code}: ${d.message}`)

  console.log('\nthe garden (history copies under .history):')
  console.log((await drawTree(agent, '/users/u1')).replace(/^/gm, '  '))

  console.log('\nthe profile now:')
  console.log((await agent.fs.readFile(PROFILE_PATH, 'utf8')).trimEnd().replace(/^/gm, '  '))

  const events = await memory.verify()
  console.log(
    `\nevents verified: ${events.checked} checked, ${events.ok ? 'every HMAC matches' : `${events.issues.length} altered`}`,
  )
  await agent.seal()
  const audit = await agent.verify({ keys: [{ key }] })
  console.log(
    `audit verified: ${audit.ok ? 'ok' : 'ALTERED'} (${audit.verified.call} tool calls, ${audit.verified.change} changes sealed)`,
  )
  console.log(`\nverify it yourself: AGENTFS_AUDIT_KEY_FILE=${keyFile} agentfs verify ${path}`)
  if (!events.ok || !audit.ok) process.exitCode = 1
} finally {
  await agent.close()
}
