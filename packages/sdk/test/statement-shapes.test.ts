import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import Database from 'better-sqlite3'
import { afterAll, expect, test } from 'vitest'
import { AgentFS } from '../src/index.js'

// ARCHITECTURE.md, "Statement shapes": a statement that goes through SQLite's full query planner
// takes its parameters through subqueries, never as an operand of its own terms or its LIMIT.
// SQLite 3.54 (better-sqlite3 13, on Node.js 22 and 24) inspects such a parameter and marks the
// statement to be prepared again when it is rebound, and better-sqlite3 clears the bindings after
// every run: every run of such a statement prepared it again (a path resolution 25-35 µs instead
// of 3). No binding reports re-preparations, so this test holds every statement the library
// prepares in a run of everyday calls to the rule itself.

const dir = mkdtempSync(join(tmpdir(), 'agentfs-shapes-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The statement with its string literals emptied and its whitespace collapsed. */
function plain(sql: string): string {
  return sql
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/\s+/g, ' ')
    .trim()
}

/**
 * A lookup by key that SQLite answers without its full planner: one table, no join, sort,
 * limit or subquery, and a WHERE of `column = ?` terms only (an UPDATE's SET aside).
 */
function keyLookup(sql: string): boolean {
  if (/\bJOIN\b|\bORDER BY\b|\bGROUP BY\b|\bLIMIT\b|\(SELECT\b|\bUNION\b/i.test(sql)) return false
  const m =
    /^(?:SELECT .+? FROM \w+(?: (?:AS )?\w+)?|UPDATE \w+ SET .+?|DELETE FROM \w+) WHERE (.+)$/i.exec(
      sql,
    )
  return m !== null && /^(?:\w+\.)?\w+ = \?(?: AND (?:\w+\.)?\w+ = \?)*$/i.test(m[1]!)
}

/** Where `sql` compares a parameter in a term or limits by one (the shapes the planner inspects). */
function inspected(sql: string): string | undefined {
  // An UPDATE's assignments are not terms.
  const text = sql.replace(/^(UPDATE \w+ SET ).+?( WHERE |$)/i, '$1…$2')
  const m =
    /(?:==?|!=|<>|<=?|>=?|\bIS(?: NOT)?|\bLIKE|\bGLOB|\bMATCH|\bBETWEEN|\bLIMIT|\bOFFSET)\s*\?/i.exec(
      text,
    )
  return m?.[0]
}

test('every statement the library prepares binds compared values through subqueries', async () => {
  const prepared = new Set<string>()
  const db = new Database(join(dir, 'shapes.db'))
  const prepare = db.prepare.bind(db)
  db.prepare = ((sql: string) => {
    prepared.add(sql)
    return prepare(sql)
  }) as typeof db.prepare
  const agent = await AgentFS.open({
    driver: betterSqlite3Driver({ database: db }),
    sessionId: 'shapes',
    versions: true,
  })
  const { fs, kv, tools, changes } = agent
  await fs.mkdir('/a/b', { recursive: true })
  for (let i = 0; i < 3; i++) await fs.writeFile(`/a/b/f${i}.txt`, `line ${i}\n`.repeat(2000))
  await fs.writeFile('/a/small.txt', 'small')
  await fs.readFile('/a/b/f0.txt')
  await fs.readFile('/a/small.txt', 'utf8')
  await fs.stat('/a/b/f1.txt')
  await fs.lstat('/a/b')
  await fs.readdir('/a/b')
  await fs.readdir('/a/b', { withFileTypes: true })
  const opened = await fs.opendir('/a/b')
  for await (const _ of opened) void _
  const handle = await fs.open('/a/b/f1.txt', 'r+')
  await handle.read(Buffer.alloc(100), 0, 100, 9000)
  await handle.write(Buffer.from('xy'), 0, 2, 10)
  await handle.close()
  await fs.appendFile('/a/small.txt', ' more')
  await fs.truncate('/a/b/f2.txt', 10)
  await fs.symlink('/a/small.txt', '/a/link')
  await fs.readlink('/a/link')
  await fs.readFile('/a/link')
  await fs.link('/a/small.txt', '/a/hard')
  await fs.copyFile('/a/small.txt', '/a/copy.txt')
  await fs.rename('/a/copy.txt', '/a/b/moved.txt')
  await fs.chmod('/a/small.txt', 0o600)
  await fs.unlink('/a/hard')
  await fs.history('/a/small.txt')
  await fs.rm('/a/b', { recursive: true })
  await kv.set('k1', { v: 1 })
  await kv.set('k1', { v: 2 }, { ifVersion: 1 })
  await kv.get('k1')
  await kv.getEntry('k1')
  await kv.has('k1')
  await kv.list({ prefix: 'k' })
  await kv.delete('k1')
  const call = await tools.record({
    name: 'read_file',
    parameters: { path: '/a' },
    result: { ok: true },
    startedAt: 1,
    completedAt: 2,
  })
  await tools.get(call)
  await tools.query({ name: 'read_file', limit: 5 })
  await changes.since(0, { path: '/a', recursive: true, limit: 10 })
  await agent.seal()
  await agent.verify()
  await agent.close()

  const offending = [...prepared]
    .map(plain)
    .filter((sql) => sql.includes('?') && !keyLookup(sql))
    .map((sql) => ({ sql, at: inspected(sql) }))
    .filter((s) => s.at !== undefined)
  expect(prepared.size).toBeGreaterThan(40)
  expect(offending).toEqual([])
})
