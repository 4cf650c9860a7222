// The AgentFS demo: an agent session through the Vercel AI SDK adapter on an embedded database.
// Offline by default (a scripted model drives the real tools); with OPENAI_API_KEY or
// ANTHROPIC_API_KEY set and the matching provider package installed, a real model can drive it.
//
// Usage: node dist/main.js [--db PATH] [--scripted]
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { AgentFS } from '@agentfs/sdk'
import type { LanguageModel } from 'ai'
import {
  drawStats,
  drawTimeline,
  drawTree,
  runAgent,
  scriptedModel,
  seedProject,
  TASK,
} from './session.js'

const { values } = parseArgs({
  options: { db: { type: 'string' }, scripted: { type: 'boolean', default: false } },
})

/** A real model when a key is set and its provider package is installed; otherwise undefined. */
async function realModel(): Promise<{ model: LanguageModel; label: string } | undefined> {
  const providers = [
    { key: 'OPENAI_API_KEY', pkg: '@ai-sdk/openai', exportName: 'openai', id: 'gpt-4o-mini' },
    {
      key: 'ANTHROPIC_API_KEY',
      pkg: '@ai-sdk/anthropic',
      exportName: 'anthropic',
      id: 'claude-3-5-haiku-latest',
    },
  ]
  for (const p of providers) {
    if (!process.env[p.key]) continue
    const modelId = process.env.AGENTFS_DEMO_MODEL ?? p.id
    try {
      const mod = (await import(p.pkg)) as Record<string, (id: string) => LanguageModel>
      const make = mod[p.exportName]
      if (make) return { model: make(modelId), label: `${p.pkg} ${modelId}` }
    } catch {
      console.log(`(${p.key} is set, but ${p.pkg} is not installed: using the scripted model.`)
      console.log(`  To use the real model: pnpm --filter @agentfs/demo add ${p.pkg})\n`)
    }
  }
  return undefined
}

const path = values.db ?? join(mkdtempSync(join(tmpdir(), 'agentfs-demo-')), 'demo.db')
const agent = await AgentFS.open({ path, sessionId: 'demo' })
try {
  await seedProject(agent)
  const before = await agent.snapshot('before-agent')
  const original = await agent.fs.readFile('/project/src/greet.js', 'utf8')
  const real = values.scripted ? undefined : await realModel()
  console.log(`AgentFS demo — database ${path}`)
  console.log(`model: ${real ? real.label : 'scripted (offline)'}\n`)
  console.log(`task: ${TASK}\n`)

  const result = await runAgent(agent, real ? real.model : scriptedModel())
  console.log(`agent (${result.steps} steps): ${result.text}\n`)

  console.log('files:')
  console.log((await drawTree(agent, '/project')).replace(/^/gm, '  '))
  console.log('\n/project/src/greet.js now reads:')
  console.log(
    (await agent.fs.readFile('/project/src/greet.js', 'utf8')).trimEnd().replace(/^/gm, '  '),
  )
  console.log('\nmemory:')
  for await (const entry of agent.kv.entries())
    console.log(`  ${entry.key} = ${JSON.stringify(entry.value)}`)
  console.log('\ntimeline:')
  console.log(await drawTimeline(agent))
  console.log('\nstats:')
  console.log(await drawStats(agent))
  console.log('\nwhat changed, from the change feed (who made each change):')
  for (const c of (await agent.changes.since(before.seq, { store: 'fs' })).changes)
    console.log(
      `  ${c.op.padEnd(7)} ${c.path}${c.toolCallId === null ? '' : `   ← tool call #${c.toolCallId}`}`,
    )
  console.log('\ndiff against the snapshot taken before the agent ran:')
  for (const c of await agent.history.diff('before-agent'))
    console.log(`  ${c.kind === 'added' ? 'A' : c.kind === 'deleted' ? 'D' : 'M'} ${c.path}`)
  const undo = await agent.restore('before-agent')
  const back = (await agent.fs.readFile('/project/src/greet.js', 'utf8')) === original
  console.log(
    `\nundo: restore('before-agent') in one transaction; greet.js is the original again: ${back}`,
  )
  await agent.restore(undo.before.name)
  console.log(`redo: restore('${undo.before.name}') brings the agent's work back.`)
  console.log(
    `\nInspect it yourself (from the repository): pnpm agentfs timeline ${path}\n  and: pnpm agentfs log ${path}, pnpm agentfs snapshots ${path}`,
  )
  console.log(
    `\nSee it in a browser, the timeline, the files and their versions, the changes (Ctrl-C stops):\n  pnpm agentfs ui ${path}`,
  )
} finally {
  await agent.close()
}
