import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createAgentTools } from '@agentfs/agent-tools'
import { type Clock, checkAuditKey, systemClock } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import {
  canonicalHash,
  memoryTools,
  openMemory,
  PostgresEventStore,
  SAGA_MARKER_SCOPE,
} from '../src/index.js'
import { KEY, PROFILE, PROFILE_PATH } from './fixtures.js'
import { postgresProblem, startPostgres, type TestPostgres } from './postgres.js'

const PATCH = {
  path: PROFILE_PATH,
  section_anchor: 'concerns v1',
  replace: 'Fears missing out on friends.',
  rationale: 'user said so',
  idempotency_key: 'update-1',
}

let server: TestPostgres
let serviceUrl: string
let schemaN = 0
const agents: AgentFS[] = []
const stores: PostgresEventStore[] = []
const dirs: string[] = []

beforeAll(async () => {
  if (postgresProblem) return
  server = await startPostgres()
  serviceUrl = server.url('memory_service')
}, 60_000)
afterAll(async () => {
  await server?.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close()
  for (const s of stores.splice(0)) await s.close()
})

/** A store on a schema of its own, so tests do not see each other's rows. */
async function openStore(clock?: Clock) {
  const schema = `t${++schemaN}`
  const store = await PostgresEventStore.open({
    connectionString: serviceUrl,
    schema,
    ...(clock ? { clock } : {}),
  })
  stores.push(store)
  return { store, schema }
}

async function garden(path = ':memory:') {
  const agent = await AgentFS.open({ path, audit: { key: KEY } })
  agents.push(agent)
  if (!(await agent.fs.exists(PROFILE_PATH))) {
    await agent.fs.mkdir('/users/u1/parts/p1', { recursive: true })
    await agent.fs.writeFile(PROFILE_PATH, PROFILE)
  }
  return agent
}

function toolsFor(agent: AgentFS, store: PostgresEventStore, userId = 'u1') {
  const tools = createAgentTools({
    fs: agent.fs,
    audit: agent.tools,
    tools: memoryTools({ userId, events: { postgres: store } }),
  })
  return (name: string, input: unknown) => tools.get(name)!.execute(input)
}

describe.skipIf(postgresProblem !== undefined)('memory events in Postgres', () => {
  test('a profile update commits its event in Postgres; a retry replays; a changed event fails verification', async () => {
    const { store, schema } = await openStore()
    const agent = await garden()
    const run = toolsFor(agent, store)
    const out = await run('md_patch_section', PATCH)
    expect(out.isError).toBeFalsy()
    const text = await agent.fs.readFile(PROFILE_PATH, 'utf8')
    const events = await store.query({ user_id: 'u1' })
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({
      id: out.data?.event_id,
      status: 'committed',
      op: 'replace_section',
      before_hash: canonicalHash(PROFILE),
      intended_hash: canonicalHash(text),
      after_hash: canonicalHash(text),
      idempotency_key: 'update-1',
      integrity_salt_version: 'salt-1',
    })
    expect(events[0]!.transaction_id).toBeGreaterThan(0)
    // The retry: the first answer, nothing changed, no second event.
    const again = await run('md_patch_section', PATCH)
    expect(again.replayed).toBe(true)
    expect(again.data?.event_id).toBe(out.data?.event_id)
    expect(await agent.fs.readFile(PROFILE_PATH, 'utf8')).toBe(text)
    expect(await store.query({ user_id: 'u1' })).toHaveLength(1)
    // The key with other input is refused.
    const other = await run('md_patch_section', { ...PATCH, replace: 'Something else.' })
    expect(other.code).toBe('IDEMPOTENCY_MISMATCH')
    // events_query reads Postgres.
    const listed = await run('events_query', {})
    expect(listed.data?.rows).toHaveLength(1)
    const keys = [checkAuditKey(KEY)]
    expect((await store.verify(keys)).ok).toBe(true)
    await server.admin(`UPDATE ${schema}.events SET rationale = 'something else'`)
    const report = await store.verify(keys)
    expect(report.ok).toBe(false)
    expect(report.issues[0]).toMatchObject({ id: out.data?.event_id, kind: 'changed' })
  })

  test('a refused write is a failed event in Postgres and frees nothing it should not', async () => {
    const { store } = await openStore()
    const agent = await garden()
    const run = toolsFor(agent, store)
    const bad = await run('fs_write', {
      path: PROFILE_PATH,
      content: PROFILE.replace('<!-- @anchor: concerns v1 -->\n', ''),
    })
    expect(bad.code).toBe('BLOCKED')
    expect(await agent.fs.readFile(PROFILE_PATH, 'utf8')).toBe(PROFILE)
    const [event] = await store.query({ user_id: 'u1' })
    expect(event).toMatchObject({ status: 'failed', tool: 'fs_write' })
    expect(event!.error).toMatch(/^BLOCKED: .*anchor/)
    expect((await store.verify([checkAuditKey(KEY)])).ok).toBe(true)
  })

  test('a planted idempotency record is refused, not replayed', async () => {
    const { store, schema } = await openStore()
    const agent = await garden()
    const run = toolsFor(agent, store)
    expect((await run('md_patch_section', PATCH)).isError).toBeFalsy()
    // Someone with write access to the table makes the key's answer theirs.
    await server.admin(
      `UPDATE ${schema}.idempotency_records SET result = '{"value":{"before_hash":"x"},"event_id":"00000000-0000-0000-0000-000000000000"}' WHERE key = 'update-1'`,
    )
    const again = await run('md_patch_section', PATCH)
    expect(again.code).toBe('IDEMPOTENCY_UNTRUSTED')
  })

  test('row-level security: a user role reads its own events only, and writes none', async () => {
    const { store, schema } = await openStore()
    const agent = await garden()
    await agent.fs.mkdir('/users/u2/parts/p1', { recursive: true })
    await agent.fs.writeFile('/users/u2/parts/p1/profile.md', PROFILE.replaceAll('u1', 'u2'))
    expect((await toolsFor(agent, store)('md_patch_section', PATCH)).isError).toBeFalsy()
    const u2 = toolsFor(agent, store, 'u2')
    expect(
      (await u2('md_patch_section', { ...PATCH, path: '/users/u2/parts/p1/profile.md' })).isError,
    ).toBeFalsy()
    for (const role of ['reader_u1', 'reader_u2', 'reader_none'])
      await server.admin(`CREATE ROLE ${role} LOGIN`).catch(() => undefined)
    await store.grantRead('u1', 'reader_u1')
    await store.grantRead('u2', 'reader_u2')
    const as = async (role: string, sql: string) => {
      const client = new pg.Client({ connectionString: server.url(role) })
      await client.connect()
      try {
        return await client.query(sql)
      } finally {
        await client.end()
      }
    }
    const seen = async (role: string) =>
      (await as(role, `SELECT user_id FROM ${schema}.events`)).rows.map((r) => r.user_id)
    expect(await seen('reader_u1')).toEqual(['u1'])
    expect(await seen('reader_u2')).toEqual(['u2'])
    // A role granted nothing reads nothing.
    await expect(seen('reader_none')).rejects.toThrow(/permission denied/)
    // The mapping shows each role only its own row.
    expect((await as('reader_u1', `SELECT user_id FROM ${schema}.event_readers`)).rows).toEqual([
      { user_id: 'u1' },
    ])
    // Readers write nothing: not events, not the mapping, not idempotency records.
    await expect(
      as('reader_u1', `UPDATE ${schema}.events SET user_id = 'u1' WHERE user_id = 'u2'`),
    ).rejects.toThrow(/permission denied/)
    await expect(
      as('reader_u1', `INSERT INTO ${schema}.event_readers VALUES ('reader_u1', 'u2')`),
    ).rejects.toThrow(/permission denied/)
    await expect(as('reader_u1', `SELECT * FROM ${schema}.idempotency_records`)).rejects.toThrow(
      /permission denied/,
    )
    // The service role sees both.
    expect((await store.query({})).map((e) => e.user_id).sort()).toEqual(['u1', 'u2'])
  })

  test('a key claimed by a writer that has not reached Postgres is busy until its lease ends', async () => {
    const { store, schema } = await openStore()
    const keys = [checkAuditKey(KEY)]
    const request = { userId: 'u1', scope: 'memory:x', key: 'k', args: { a: 1 }, keys }
    const first = await store.claim(request)
    expect(first.kind).toBe('claimed')
    await expect(store.claim(request)).rejects.toMatchObject({ code: 'BUSY' })
    // With no lease, the key of a claimant that never wrote is free again, under a new event id.
    const eager = await PostgresEventStore.open({
      connectionString: serviceUrl,
      schema,
      leaseMs: 0,
    })
    stores.push(eager)
    const second = await eager.claim(request)
    expect(second.kind).toBe('claimed')
    expect(second).not.toEqual(first)
  })

  test('the migration runs once: a second open finds the tables at their version', async () => {
    const { store, schema } = await openStore()
    const second = await PostgresEventStore.open({ connectionString: serviceUrl, schema })
    stores.push(second)
    const { rows } = await server.admin(`SELECT version FROM ${schema}.agentfs_memory_schema`)
    expect(rows).toEqual([{ version: 1 }])
    expect(await store.query({})).toEqual([])
  })
})

describe.skipIf(postgresProblem !== undefined)('the saga under a kill', () => {
  /**
   * A process that runs the profile update on `db` and dies where it is told: `pg-after-commit`
   * once the AgentFS transaction committed, before the event is `committed` in Postgres;
   * `pg-inside` inside the AgentFS transaction, with the event `pending` in Postgres;
   * `local-inside` inside the transaction with events in the database, `local-after-commit`
   * after it.
   */
  function child(
    db: string,
    mode: string,
    schema?: string,
    call: { tool: string; input: unknown } = { tool: 'md_patch_section', input: PATCH },
  ): Promise<number> {
    const cache = join(import.meta.dirname, '..', 'node_modules', '.cache')
    mkdirSync(cache, { recursive: true })
    const dir = mkdtempSync(join(cache, 'saga-child-'))
    dirs.push(dir)
    const script = join(dir, 'child.mjs')
    const dist = pathToFileURL(join(import.meta.dirname, '..', 'dist', 'index.js')).href
    writeFileSync(
      script,
      `import { createAgentTools } from '@agentfs/agent-tools'
import { AgentFS } from '@agentfs/sdk'
import { AgentFsEventStore, memoryTools, PostgresEventStore } from ${JSON.stringify(dist)}
const mode = ${JSON.stringify(mode)}
const die = () => process.kill(process.pid, 'SIGKILL')
if (mode === 'pg-after-commit') PostgresEventStore.prototype.commit = async () => die()
if (mode === 'pg-inside') {
  const begin = PostgresEventStore.prototype.begin
  PostgresEventStore.prototype.begin = async function (...args) {
    await begin.apply(this, args)
    die()
  }
}
if (mode === 'local-inside') {
  const record = AgentFsEventStore.prototype.record
  AgentFsEventStore.prototype.record = async function (q, input, status, extra) {
    const out = await record.call(this, q, input, status, extra)
    if (status === 'committed') die()
    return out
  }
}
const agent = await AgentFS.open({ path: ${JSON.stringify(db)}, audit: { key: { key: Buffer.alloc(32, 3), id: 'salt-1' } } })
const events = ${schema ? `{ postgres: { connectionString: ${JSON.stringify(serviceUrl)}, schema: ${JSON.stringify(schema)} } }` : 'undefined'}
const tools = createAgentTools({ fs: agent.fs, audit: agent.tools, tools: memoryTools({ userId: 'u1', ...(events ? { events } : {}) }) })
const out = await tools.get(${JSON.stringify(call.tool)}).execute(${JSON.stringify(call.input)})
if (out.isError) { console.error(out.text); process.exit(3) }
if (mode === 'local-after-commit') die()
await agent.close()
`,
    )
    return new Promise((resolve, reject) => {
      const p = spawn(process.execPath, [script], {
        cwd: join(import.meta.dirname, '..'),
        stdio: 'inherit',
      })
      p.on('error', reject)
      p.on('exit', (code, signal) => resolve(signal === 'SIGKILL' ? -9 : (code ?? -1)))
    })
  }

  async function fileDb() {
    const dir = mkdtempSync(join(tmpdir(), 'agentfs-saga-'))
    dirs.push(dir)
    const path = join(dir, 'garden.db')
    const agent = await AgentFS.open({ path, audit: { key: KEY } })
    await agent.fs.mkdir('/users/u1/parts/p1', { recursive: true })
    await agent.fs.writeFile(PROFILE_PATH, PROFILE)
    await agent.close()
    return path
  }

  const changeLogLines = (text: string) =>
    text.split('\n').filter((l) => l.includes("replace_section 'concerns v1'")).length

  test('Postgres: killed after the file commit, before the event commit — reconciliation settles it committed, and the retry replays', async () => {
    const path = await fileDb()
    const { store, schema } = await openStore()
    expect(await child(path, 'pg-after-commit', schema)).toBe(-9)
    const agent = await garden(path)
    const text = await agent.fs.readFile(PROFILE_PATH, 'utf8')
    expect(text).toContain('Fears missing out on friends.')
    const [pending] = await store.query({ user_id: 'u1' })
    expect(pending).toMatchObject({ status: 'pending', intended_hash: canonicalHash(text) })
    // A retry before reconciliation settles the stale event itself and replays.
    const memory = await openMemory({ userId: 'u1', fs: agent.fs, events: { postgres: store } })
    expect(memory.reconciled.settled).toEqual([
      { id: pending!.id, status: 'committed', file_path: PROFILE_PATH },
    ])
    const [settled] = await memory.query()
    expect(settled).toMatchObject({ status: 'committed', after_hash: canonicalHash(text) })
    expect((await memory.verify()).ok).toBe(true)
    const tools = createAgentTools({ fs: agent.fs, audit: agent.tools, tools: memory.tools })
    const again = await tools.get('md_patch_section')!.execute(PATCH)
    expect(again.replayed).toBe(true)
    expect(again.data?.event_id).toBe(pending!.id)
    const after = await agent.fs.readFile(PROFILE_PATH, 'utf8')
    expect(after).toBe(text)
    expect(changeLogLines(after)).toBe(1)
    expect(await memory.query()).toHaveLength(1)
  }, 60_000)

  test('Postgres: killed inside the file transaction with the event pending — reconciliation settles it failed, and the retry applies once', async () => {
    const path = await fileDb()
    const { store, schema } = await openStore()
    expect(await child(path, 'pg-inside', schema)).toBe(-9)
    const agent = await garden(path)
    expect(await agent.fs.readFile(PROFILE_PATH, 'utf8')).toBe(PROFILE)
    const [pending] = await store.query({ user_id: 'u1' })
    expect(pending?.status).toBe('pending')
    // The retry comes first: it settles the dead writer's event, then applies.
    const memory = await openMemory({ userId: 'u1', fs: agent.fs, events: { postgres: store } })
    expect(memory.reconciled.settled).toEqual([
      { id: pending!.id, status: 'failed', file_path: PROFILE_PATH },
    ])
    const tools = createAgentTools({ fs: agent.fs, audit: agent.tools, tools: memory.tools })
    const again = await tools.get('md_patch_section')!.execute(PATCH)
    expect(again.isError).toBeFalsy()
    expect(again.replayed).toBeFalsy()
    const after = await agent.fs.readFile(PROFILE_PATH, 'utf8')
    expect(changeLogLines(after)).toBe(1)
    const statuses = (await memory.query()).map((e) => e.status).sort()
    expect(statuses).toEqual(['committed', 'failed'])
    expect((await memory.verify()).ok).toBe(true)
  }, 60_000)

  test('Postgres: a write that left the file as it was is settled by its marker, not its hash', async () => {
    // events_log changes no file: before and intended hashes are equal, so only the marker
    // row of its AgentFS transaction tells whether it committed.
    const path = await fileDb()
    const { store, schema } = await openStore()
    const log = {
      tool: 'events_log',
      input: { type: 'observation', op: 'note', file_path: PROFILE_PATH, rationale: 'seen' },
    }
    expect(await child(path, 'pg-after-commit', schema, log)).toBe(-9)
    const agent = await garden(path)
    const memory = await openMemory({ userId: 'u1', fs: agent.fs, events: { postgres: store } })
    expect(memory.reconciled.settled.map((e) => e.status)).toEqual(['committed'])
  }, 60_000)

  test('Postgres: a pending event altered while its writer was dead is left pending and reported, not resealed', async () => {
    const path = await fileDb()
    const { store, schema } = await openStore()
    expect(await child(path, 'pg-after-commit', schema)).toBe(-9)
    await server.admin(`UPDATE ${schema}.events SET rationale = 'rewritten'`)
    const agent = await garden(path)
    const memory = await openMemory({ userId: 'u1', fs: agent.fs, events: { postgres: store } })
    expect(memory.reconciled.settled).toEqual([])
    expect(memory.reconciled.skipped[0]?.reason).toMatch(/does not verify/)
    expect((await memory.query())[0]?.status).toBe('pending')
    expect((await memory.verify()).ok).toBe(false)
  }, 60_000)

  test('Postgres: a retry finds the dead writer’s pending event and settles it first', async () => {
    const path = await fileDb()
    const { store, schema } = await openStore()
    expect(await child(path, 'pg-after-commit', schema)).toBe(-9)
    const agent = await garden(path)
    // No reconciliation at open: the retry meets the pending record.
    const run = toolsFor(agent, store)
    const again = await run('md_patch_section', PATCH)
    expect(again.replayed).toBe(true)
    expect(changeLogLines(await agent.fs.readFile(PROFILE_PATH, 'utf8'))).toBe(1)
    expect((await store.query({ user_id: 'u1' })).map((e) => e.status)).toEqual(['committed'])
  }, 60_000)

  test('Postgres: once the marker has expired, reconciliation compares the file’s hash with the intended one', async () => {
    const later: Clock = (() => {
      const clock = systemClock()
      return {
        now: () => {
          const t = clock.now()
          return { sec: t.sec + 31 * 24 * 3600, nsec: t.nsec }
        },
      }
    })()
    for (const [mode, expected] of [
      ['pg-after-commit', 'committed'],
      ['pg-inside', 'failed'],
    ] as const) {
      const path = await fileDb()
      const { store, schema } = await openStore()
      expect(await child(path, mode, schema)).toBe(-9)
      const agent = await garden(path)
      const memory = await openMemory({
        userId: 'u1',
        fs: agent.fs,
        events: { postgres: store },
        clock: later,
      })
      expect(memory.reconciled.settled.map((s) => s.status)).toEqual([expected])
      const { rows } = await agent.db.execute({
        sql: 'SELECT count(*) AS n FROM agentfs_idempotency WHERE scope = ?',
        params: [SAGA_MARKER_SCOPE],
      })
      expect(Number((rows[0] as { n: number }).n)).toBe(0)
    }
  }, 120_000)

  test('events in the database: a kill inside the transaction leaves neither change nor event; after the commit, both', async () => {
    const inside = await fileDb()
    expect(await child(inside, 'local-inside')).toBe(-9)
    let agent = await garden(inside)
    expect(await agent.fs.readFile(PROFILE_PATH, 'utf8')).toBe(PROFILE)
    const count = async (a: AgentFS) =>
      Number(
        (
          (await a.db.execute({ sql: 'SELECT count(*) AS n FROM agentfs_memory_event' }))
            .rows[0] as {
            n: number
          }
        ).n,
      )
    expect(await count(agent)).toBe(0)
    const after = await fileDb()
    expect(await child(after, 'local-after-commit')).toBe(-9)
    agent = await garden(after)
    const text = await agent.fs.readFile(PROFILE_PATH, 'utf8')
    expect(changeLogLines(text)).toBe(1)
    expect(await count(agent)).toBe(1)
    const memory = await openMemory({ userId: 'u1', fs: agent.fs })
    expect((await memory.query())[0]).toMatchObject({
      status: 'committed',
      after_hash: canonicalHash(text),
    })
    const tools = createAgentTools({ fs: agent.fs, audit: agent.tools, tools: memory.tools })
    expect((await tools.get('md_patch_section')!.execute(PATCH)).replayed).toBe(true)
    expect(await count(agent)).toBe(1)
  }, 60_000)
})
