// Writes fixtures/agentfs-sdk-0.6.4.sql: a database produced by the reference SDK, exported as
// SQL so every driver can rebuild it. Run: pnpm --filter @agentfs/conformance fixture:reference
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AgentFS } from 'agentfs-sdk'
import Database from 'better-sqlite3'

const dir = mkdtempSync(join(tmpdir(), 'agentfs-ref-'))
const path = join(dir, 'ref.db')
const agent = await AgentFS.open({ path })
const big = Buffer.alloc(10_000)
for (let i = 0; i < big.length; i++) big[i] = (i * 7 + 3) & 255
await agent.fs.writeFile('/docs/readme.md', 'Hello from agentfs-sdk 0.6.4\n')
await agent.fs.writeFile('/docs/big.bin', big)
await agent.fs.mkdir('/empty-dir')
await agent.fs.writeFile('/tmp/scratch.txt', 'to be deleted')
await agent.fs.unlink('/tmp/scratch.txt')
await agent.fs.symlink('/docs/readme.md', '/latest')
await agent.fs.rename('/docs/readme.md', '/docs/README.md')
await agent.kv.set('user:prefs', { theme: 'dark' })
await agent.kv.set('session:state', [1, 2, 3])
await agent.tools.record('web_search', 1_700_000_000, 1_700_000_002, { q: 'agentfs' }, { hits: 3 })
await agent.tools.record('fetch', 1_700_000_010, 1_700_000_011, { url: 'x' }, undefined, 'timeout')
const pending = await agent.tools.start('read_file', { path: '/docs/README.md' })
const done = await agent.tools.start('list_dir', { path: '/' })
await agent.tools.success(done, ['docs', 'empty-dir', 'latest'])
await agent.close()
void pending

const db = new Database(path, { readonly: true })
const lines = ['-- Written by agentfs-sdk 0.6.4 (scripts/make-reference-fixture.mjs); do not edit.']
const objects = db
  .prepare(
    "SELECT type, name, sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT GLOB 'sqlite_*' ORDER BY type = 'index', rowid",
  )
  .all()
for (const { sql } of objects) lines.push(`${sql};`)
for (const { name } of objects.filter((o) => o.type === 'table')) {
  const columns = db
    .prepare('SELECT name FROM pragma_table_info(?) ORDER BY cid')
    .all(name)
    .map((c) => c.name)
  const quoted = columns.map((c) => `quote("${c}")`).join(` || ', ' || `)
  for (const row of db.prepare(`SELECT ${quoted} AS v FROM "${name}" ORDER BY rowid`).all()) {
    lines.push(`INSERT INTO ${name} (${columns.join(', ')}) VALUES (${row.v});`)
  }
}
for (const row of db.prepare('SELECT name, seq FROM sqlite_sequence ORDER BY name').all()) {
  lines.push(`UPDATE sqlite_sequence SET seq = ${row.seq} WHERE name = '${row.name}';`)
}
db.close()
rmSync(dir, { recursive: true, force: true })
const out = new URL('../fixtures/agentfs-sdk-0.6.4.sql', import.meta.url)
writeFileSync(out, `${lines.join('\n')}\n`)
console.log(`wrote ${out.pathname} (${lines.length} lines)`)
