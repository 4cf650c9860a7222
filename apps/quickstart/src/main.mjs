// Quick start: an agent's filesystem, key-value store and tool-call log in one SQLite file,
// through the built @agentfs/sdk. Usage: node src/main.mjs [path-to-db] (default: a temp file)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AgentFS } from '@agentfs/sdk'

const dir = process.argv[2] ? undefined : mkdtempSync(join(tmpdir(), 'agentfs-quickstart-'))
const agent = await AgentFS.open({
  path: process.argv[2] ?? join(dir, 'agent.db'),
  sessionId: 'quickstart',
})

// Every tool call is timed and audited; the file write and the key commit together.
await agent.tools.track('write_notes', { path: '/notes/todo.md' }, () =>
  agent.transaction(async (tx) => {
    await tx.fs.mkdir('/notes', { recursive: true })
    await tx.fs.writeFile(
      '/notes/todo.md',
      '# Todo\n\n- keep files, keys and tool calls in one SQLite file\n',
    )
    await tx.kv.set('user:prefs', { theme: 'dark' })
  }),
)
const text = await agent.tools.track('read_notes', { path: '/notes/todo.md' }, () =>
  agent.fs.readFile('/notes/todo.md', 'utf8'),
)
await agent.tools
  .track('read_missing', { path: '/nope.md' }, () => agent.fs.readFile('/nope.md', 'utf8'))
  .catch((error) => console.log(`(a deliberate mistake, recorded: ${error.code})`))

console.log(`database: ${agent.path} (chunk_size ${agent.fs.chunkSize})`)
console.log('files:')
for (const entry of await agent.fs.readdir('/', { recursive: true, withFileTypes: true })) {
  const path = join(entry.parentPath, entry.name)
  const stats = await agent.fs.stat(path)
  console.log(
    `  ${path}${entry.isDirectory() ? '/' : `  ${stats.size} bytes  version ${stats.version}`}`,
  )
}
console.log(text.trimEnd().replace(/^/gm, '    '))
console.log('keys:')
for await (const entry of agent.kv.entries())
  console.log(`  ${entry.key} = ${JSON.stringify(entry.value)} (v${entry.version})`)
console.log('tool calls:')
for (const call of await agent.tools.bySession('quickstart')) {
  console.log(
    `  #${call.id} ${call.name}(${JSON.stringify(call.parameters)}) ${call.status}${call.error ? `: ${call.error}` : ''} ${call.durationMs?.toFixed(2)} ms`,
  )
}
await agent.close()
if (dir) rmSync(dir, { recursive: true, force: true })
