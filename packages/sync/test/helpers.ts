import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Clock, fsck } from '@agentfs/core'
import { type SyncServer, startSyncServer } from '@agentfs/turso-sync-server'
import { afterEach, expect } from 'vitest'
import { openSynced, type SyncConflict, type SyncedAgentFS } from '../src/index.js'

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
    options: { clock?: Clock } = {},
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

/** Everything a client holds, in a form two clients can be compared by. */
export async function canonical(agent: SyncedAgentFS) {
  const q = agent.db
  const rows = async (sql: string) => (await q.execute({ sql })).rows
  return {
    inodes: await rows(
      'SELECT ino, mode, nlink, uid, gid, size, mtime, mtime_nsec, ctime, ctime_nsec FROM fs_inode ORDER BY ino',
    ),
    dentries: await rows('SELECT id, name, parent_ino, ino FROM fs_dentry ORDER BY id'),
    data: await rows(
      'SELECT ino, chunk_index, hex(data) AS data FROM fs_data ORDER BY ino, chunk_index',
    ),
    symlinks: await rows('SELECT ino, target FROM fs_symlink ORDER BY ino'),
    kv: await rows('SELECT key, value, updated_at FROM kv_store ORDER BY key'),
    tools: await rows('SELECT id, name, parameters, result FROM tool_calls ORDER BY id'),
    conflicts: await rows(
      'SELECT slot, seq, kind, path FROM agentfs_sync_conflict ORDER BY slot, seq',
    ),
  }
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
