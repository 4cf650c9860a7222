import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fsck } from '@agentfs/core'
import { type SyncServer, startSyncServer } from '@agentfs/turso-sync-server'
import { afterEach, expect } from 'vitest'
import {
  type OpenSyncedOptions,
  openSynced,
  type SyncConflict,
  type SyncedAgentFS,
} from '../src/index.js'

const cleanup: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

/** A fresh sync server and a factory of clients on it (all closed and removed after the test). */
export async function world() {
  const server: SyncServer = await startSyncServer({ maxSeconds: 300 })
  const dir = mkdtempSync(join(tmpdir(), 'agentfs-sync-test-'))
  cleanup.push(async () => {
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  })
  const conflicts: SyncConflict[] = []
  let n = 0
  const client = async (
    name = `c${n++}`,
    options: Pick<OpenSyncedOptions, 'clock' | 'audit'> = {},
  ): Promise<SyncedAgentFS> => {
    const agent = await openSynced({
      ...options,
      path: join(dir, `${name}.db`),
      sync: { url: server.url, clientName: name, onConflict: (c) => conflicts.push(c) },
    })
    cleanup.push(() => agent.close())
    return agent
  }
  return { server, dir, client, conflicts }
}

/** Objects of the sync engine itself, which differ per copy by design. */
const ENGINE = /^(sqlite_|turso_cdc|turso_sync_|__turso_internal_)/

/**
 * Everything a client holds, in a form two clients can be compared by: every table's rows
 * (all columns, in a fixed order) and `sqlite_sequence`, as the conformance dump does, without
 * the sync engine's own bookkeeping.
 */
export async function canonical(agent: SyncedAgentFS): Promise<Record<string, unknown[]>> {
  const q = agent.db
  const tables = (
    await q.execute<{ name: string }>({
      sql: "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name",
    })
  ).rows
    .map((row) => row.name)
    .filter((name) => !ENGINE.test(name))
  const dump: Record<string, unknown[]> = {}
  for (const table of tables) {
    const columns = (
      await q.execute<{ name: string }>({ sql: `SELECT name FROM pragma_table_info('${table}')` })
    ).rows.map((row) => `"${row.name}"`)
    dump[table] = (
      await q.execute({
        sql: `SELECT ${columns.map((c) => `typeof(${c}) || ':' || quote(${c})`).join(" || ' | ' || ")} AS row FROM "${table}" ORDER BY ${columns.join(', ')}`,
      })
    ).rows
  }
  dump.sqlite_sequence = (
    await q.execute({
      sql: "SELECT name, seq FROM sqlite_sequence WHERE name NOT LIKE 'turso%' ORDER BY name",
    })
  ).rows
  return dump
}

/** Pulls on every client until nothing changes, then checks they agree and are fsck-clean. */
export async function converge(...agents: SyncedAgentFS[]) {
  for (let round = 0; round < 4; round++) for (const agent of agents) await agent.sync.pull()
  const first = await canonical(agents[0]!)
  for (const agent of agents.slice(1)) expect(await canonical(agent)).toEqual(first)
  for (const agent of agents) {
    const report = await fsck(agent.db)
    expect(report.findings, JSON.stringify(report.findings)).toEqual([])
  }
  return first
}

/** Every file under `/` with its content, as a map of path to text. */
export async function files(agent: SyncedAgentFS): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  const walk = async (dir: string) => {
    for (const entry of await agent.fs.readdir(dir, { withFileTypes: true })) {
      const path = dir === '/' ? `/${entry.name}` : `${dir}/${entry.name}`
      if (entry.isDirectory()) await walk(path)
      else if (entry.isFile()) out[path] = await agent.fs.readFile(path, 'utf8')
    }
  }
  await walk('/')
  return out
}
