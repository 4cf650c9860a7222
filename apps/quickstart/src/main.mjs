// Quick start: an AgentFS database through the better-sqlite3 driver, using the built packages.
// Writes a file with the spec's own SQL (inode, dentry, chunks), sets a key, records a tool call,
// then prints all three. Usage: node src/main.mjs [path-to-db]   (default: a temporary file)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase, S_IFREG } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'

const dir = process.argv[2] ? undefined : mkdtempSync(join(tmpdir(), 'agentfs-quickstart-'))
const path = process.argv[2] ?? join(dir, 'agent.db')
const db = await openDatabase({ driver: betterSqlite3Driver({ path }) })

const content = new TextEncoder().encode(
  '# Notes\n\nAgentFS keeps files, keys and tool calls in one SQLite file.\n',
)
await db.transaction(async (tx) => {
  const { sec, nsec } = db.clock.now()
  const inode = await tx.execute({
    sql: `INSERT INTO fs_inode (mode, nlink, uid, gid, size, atime, mtime, ctime, atime_nsec, mtime_nsec, ctime_nsec)
          VALUES (?, 1, 0, 0, ?, ?, ?, ?, ?, ?, ?) RETURNING ino`,
    params: [S_IFREG | 0o644, content.length, sec, sec, sec, nsec, nsec, nsec],
  })
  const ino = inode.rows[0].ino
  await tx.execute({
    sql: 'INSERT INTO fs_dentry (name, parent_ino, ino) VALUES (?, 1, ?)',
    params: ['notes.md', ino],
  })
  for (let i = 0; i * db.chunkSize < content.length; i++) {
    await tx.execute({
      sql: 'INSERT INTO fs_data (ino, chunk_index, data) VALUES (?, ?, ?)',
      params: [ino, i, content.subarray(i * db.chunkSize, (i + 1) * db.chunkSize)],
    })
  }
  await tx.execute({
    sql: `INSERT INTO kv_store (key, value, created_at, updated_at) VALUES (?, ?, ?, ?)
          ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
    params: ['user:prefs', JSON.stringify({ theme: 'dark' }), sec, sec],
  })
  await tx.execute({
    sql: `INSERT INTO tool_calls (name, parameters, result, error, started_at, completed_at, duration_ms)
          VALUES (?, ?, ?, NULL, ?, ?, 0)`,
    params: [
      'write_file',
      JSON.stringify({ path: '/notes.md' }),
      JSON.stringify({ bytes: content.length }),
      sec,
      sec,
    ],
  })
})

const files = await db.execute({
  sql: `SELECT d.name, i.size, i.mode FROM fs_dentry d JOIN fs_inode i ON i.ino = d.ino WHERE d.parent_ino = 1 ORDER BY d.name`,
})
console.log(`database: ${path} (chunk_size ${db.chunkSize})`)
console.log('files:')
for (const f of files.rows) console.log(`  /${f.name}  ${f.size} bytes  mode ${f.mode.toString(8)}`)
const chunks = await db.execute({
  sql: "SELECT data FROM fs_data WHERE ino = (SELECT ino FROM fs_dentry WHERE parent_ino = 1 AND name = 'notes.md') ORDER BY chunk_index",
})
console.log('  --- /notes.md ---')
console.log(
  new TextDecoder()
    .decode(Buffer.concat(chunks.rows.map((r) => r.data)))
    .trimEnd()
    .replace(/^/gm, '  '),
)
console.log('keys:')
for (const k of (await db.execute({ sql: 'SELECT key, value FROM kv_store ORDER BY key' })).rows) {
  console.log(`  ${k.key} = ${k.value}`)
}
console.log('tool calls:')
for (const t of (
  await db.execute({ sql: 'SELECT id, name, parameters, result FROM tool_calls ORDER BY id' })
).rows) {
  console.log(`  #${t.id} ${t.name}(${t.parameters}) -> ${t.result}`)
}
await db.close()
if (dir) rmSync(dir, { recursive: true, force: true })
