import { createHash } from 'node:crypto'
import {
  type AgentDatabase,
  fixedClock,
  guardDriver,
  isAgentFsError,
  openDatabase,
  PAYLOAD_CHUNK_BYTES,
  PAYLOAD_INLINE_BYTES,
  sealAudit,
  verifyAudit,
} from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { tursoDriver } from '@agentfs/driver-turso'
import { afterEach, describe, expect, test } from 'vitest'
import { AuditFullError, createToolCalls } from '../src/index.js'

const DRIVERS = {
  'better-sqlite3': () => betterSqlite3Driver({ path: ':memory:' }),
  libsql: () => libsqlDriver({ url: ':memory:' }),
  turso: () => tursoDriver({ path: ':memory:' }),
}
const open: AgentDatabase[] = []
afterEach(async () => {
  for (const db of open.splice(0)) await db.close()
})

const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')
/** A string of at least `bytes` UTF-8 bytes (11 a piece), with multi-byte characters across chunk ends. */
const big = (bytes: number, seed = 'x') =>
  Array.from({ length: Math.ceil(bytes / 11) }, (_, i) => `${seed}é€😀${i % 10}`).join('')

for (const [name, driver] of Object.entries(DRIVERS)) {
  describe(`audit payloads (${name})`, () => {
    const fresh = async () => {
      const db = await openDatabase({
        driver: guardDriver(driver()),
        clock: fixedClock({ stepNs: 1_000_000 }),
      })
      open.push(db)
      return { tools: createToolCalls(db), db }
    }
    const count = async (db: AgentDatabase, table: string) =>
      Number(
        (await db.execute<{ n: number }>({ sql: `SELECT COUNT(*) AS n FROM ${table}` })).rows[0]!.n,
      )

    test('a parameter and a result over 64 KiB are kept whole, the row keeps a stub naming them', async () => {
      const { tools, db } = await fresh()
      const parameters = { content: big(200_000) }
      const result = { text: big(150_000, 'r') }
      const id = await tools.record({
        name: 'write_file',
        parameters,
        result,
        startedAt: 1_700_000_000_000,
        completedAt: 1_700_000_000_500,
      })
      const call = await tools.get(id)
      expect(call?.parameters).toEqual(parameters)
      expect(call?.result).toEqual(result)
      const paramsText = JSON.stringify(parameters)
      expect(call?.payloads).toEqual({
        parameters: sha(paramsText),
        result: sha(JSON.stringify(result)),
      })
      // The spec row holds valid JSON a spec reader understands.
      const row = (
        await db.execute<{ parameters: string }>({
          sql: 'SELECT parameters FROM tool_calls WHERE id = ?',
          params: [id],
        })
      ).rows[0]!
      const stub = JSON.parse(row.parameters)
      expect(stub.$agentfs_payload.sha256).toBe(sha(paramsText))
      expect(stub.$agentfs_payload.bytes).toBe(Buffer.byteLength(paramsText))
      expect(paramsText.startsWith(stub.$agentfs_payload.preview)).toBe(true)
      expect(row.parameters.length).toBeLessThan(2000)
      expect(await count(db, 'agentfs_payload_chunk')).toBe(
        Math.ceil(Buffer.byteLength(paramsText) / PAYLOAD_CHUNK_BYTES) +
          Math.ceil(Buffer.byteLength(JSON.stringify(result)) / PAYLOAD_CHUNK_BYTES),
      )
      // The stub on request, without reading the store.
      const stubbed = await tools.query({ payloads: 'stub' })
      expect(stubbed[0]?.parameters).toEqual(stub)
      // The same payload again is stored once.
      await tools.record({
        name: 'write_file',
        parameters,
        result: 'ok',
        startedAt: 1_700_000_001_000,
        completedAt: 1_700_000_001_500,
      })
      expect(await count(db, 'agentfs_payload')).toBe(2)
      expect((await tools.usage()).payloads).toBe(2)
    })

    test('a text just at the limit stays in the row; one byte more goes to the store', async () => {
      const { tools } = await fresh()
      // JSON of a string: two quotes around it.
      const at = 'a'.repeat(PAYLOAD_INLINE_BYTES - 2)
      const over = `${'a'.repeat(PAYLOAD_INLINE_BYTES - 3)}é`
      const a = await tools.record({ name: 't', parameters: at, startedAt: 0, completedAt: 1 })
      const b = await tools.record({ name: 't', parameters: over, startedAt: 0, completedAt: 1 })
      expect((await tools.get(a))?.payloads).toBeUndefined()
      expect((await tools.get(b))?.payloads).toEqual({ parameters: sha(JSON.stringify(over)) })
      expect((await tools.get(b))?.parameters).toBe(over)
    })

    test('a stub an agent writes itself is read back as written, never followed', async () => {
      const { tools } = await fresh()
      const { sha256 } = { sha256: sha(JSON.stringify({ content: big(100_000) })) }
      await tools.record({
        name: 'w',
        parameters: { content: big(100_000) },
        startedAt: 0,
        completedAt: 1,
      })
      const forged = { $agentfs_payload: { sha256, bytes: 10, preview: 'x' } }
      const id = await tools.record({ name: 'w', parameters: forged, startedAt: 2, completedAt: 3 })
      const call = await tools.get(id)
      expect(call?.parameters).toEqual(forged)
      expect(call?.payloads).toBeUndefined()
    })

    test('a large error and a call under way keep theirs whole; reconcile keeps them', async () => {
      const { tools } = await fresh()
      const message = big(90_000, 'e')
      await expect(
        tools.track('fail', { n: 1 }, () => {
          throw new Error(message)
        }),
      ).rejects.toThrow()
      const [failed] = await tools.query()
      expect(failed?.error).toBe(message)
      expect(failed?.payloads).toEqual({ error: sha(message) })
      const parameters = { content: big(120_000) }
      await tools.start({ name: 'slow', parameters, callToken: 'tok-1' })
      const [pending] = await tools.pending()
      expect(pending?.parameters).toEqual(parameters)
      const [id] = await tools.reconcile({ olderThan: 0, includeOwn: true })
      const abandoned = await tools.get(id!)
      expect(abandoned?.parameters).toEqual(parameters)
      expect(abandoned?.payloads).toEqual({ parameters: sha(JSON.stringify(parameters)) })
    })

    test('a full store refuses calls before they run and records each refusal', async () => {
      const { tools, db } = await fresh()
      await tools.setBudget(300_000)
      expect((await tools.usage()).budget).toBe(300_000)
      await tools.record({ name: 'w', parameters: big(200_000), startedAt: 0, completedAt: 1 })
      const used = (await tools.usage()).used
      expect(used).toBeGreaterThan(200_000)
      // Would overfill it: refused, the body never runs, the input kept as its digest only.
      const input = { content: big(150_000) }
      let ran = false
      const refused = await tools
        .track('write_file', input, () => {
          ran = true
        })
        .catch((error: unknown) => error)
      expect(ran).toBe(false)
      expect(refused).toBeInstanceOf(AuditFullError)
      expect(isAgentFsError(refused, 'AUDIT_FULL')).toBe(true)
      const record = await tools.get((refused as AuditFullError).callId)
      expect(record?.error).toMatch(/^refused before it ran: the audit's payload store is full/)
      expect(record?.parameters).toMatchObject({
        $agentfs_payload: { sha256: sha(JSON.stringify(input)) },
      })
      expect(record?.metadata).toEqual({ refused: 'audit-full', used, budget: 300_000 })
      expect((await tools.usage()).used).toBe(used)
      expect(await count(db, 'agentfs_tool_call_pending')).toBe(0)
      // A small call still fits; what a call that ran returns is kept whole, past the budget.
      const result = big(120_000, 'r')
      expect(await tools.track('read_file', { path: '/a' }, () => result)).toBe(result)
      expect((await tools.usage()).used).toBeGreaterThan(300_000)
      expect((await tools.query({ limit: 1 }))[0]?.result).toBe(result)
      // Now full: even a small call is refused.
      await expect(tools.track('ls', {}, () => 1)).rejects.toMatchObject({ code: 'AUDIT_FULL' })
      await tools.setBudget(null)
      expect(await tools.track('ls', {}, () => 1)).toBe(1)
      await expect(tools.setBudget(-1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    })

    test('a payload altered, cut short or removed is refused on read and named by verify', async () => {
      const { tools, db } = await fresh()
      const a = await tools.record({
        name: 'a',
        parameters: big(100_000, 'a'),
        startedAt: 0,
        completedAt: 1,
      })
      const b = await tools.record({
        name: 'b',
        result: big(140_000, 'b'),
        startedAt: 2,
        completedAt: 3,
      })
      const c = await tools.record({
        name: 'c',
        error: big(70_000, 'c'),
        startedAt: 4,
        completedAt: 5,
      })
      await sealAudit(db)
      expect((await verifyAudit(db)).ok).toBe(true)
      const shaOf = async (id: number) =>
        Object.values(
          JSON.parse(
            (
              await db.execute<{ payloads: string }>({
                sql: 'SELECT payloads FROM agentfs_tool_call_meta WHERE id = ?',
                params: [id],
              })
            ).rows[0]!.payloads,
          ),
        )[0] as string
      await db.execute({
        sql: "UPDATE agentfs_payload_chunk SET data = CAST('tampered' AS BLOB) WHERE sha256 = ? AND chunk_index = 1",
        params: [await shaOf(a)],
      })
      await db.execute({
        sql: 'DELETE FROM agentfs_payload_chunk WHERE sha256 = ? AND chunk_index = 2',
        params: [await shaOf(b)],
      })
      await db.execute({
        sql: 'DELETE FROM agentfs_payload WHERE sha256 = ?',
        params: [await shaOf(c)],
      })
      await expect(tools.get(a)).rejects.toMatchObject({ code: 'CORRUPT' })
      await expect(tools.get(b)).rejects.toMatchObject({ code: 'CORRUPT' })
      const report = await verifyAudit(db)
      expect(report.ok).toBe(false)
      expect(report.issues.map((i) => [i.seq, i.kind])).toEqual([
        [a, 'changed'],
        [b, 'changed'],
        [c, 'changed'],
      ])
      expect(report.issues[0]?.message).toMatch(/parameters .*altered/)
      expect(report.issues[1]?.message).toMatch(/result .*chunk 2 is missing/)
      expect(report.issues[2]?.message).toMatch(/error .*missing from agentfs_payload/)
      // Dropping the ref (so the stub reads as the value) is a change to the sealed row.
      await db.execute({
        sql: 'UPDATE agentfs_tool_call_meta SET payloads = NULL WHERE id = ?',
        params: [a],
      })
      expect((await verifyAudit(db)).issues[0]).toMatchObject({ seq: a, kind: 'changed' })
    })
  })
}
