import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AgentFS } from '@agentfs/sdk'
import { HOSTILE_CASES } from '@agentfs/test-kit'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { serveInspector } from '../src/index.js'

// Every endpoint on every crafted database: an answer in time — a result, or a one-line JSON
// error — never a hang, never a crash of the server.

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentfs-inspector-hostile-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const LIMIT_MS = 20_000

describe('the inspector on hostile databases', () => {
  test.each(HOSTILE_CASES.map((c, i) => [c.name, c, i] as const))(
    '%s: every endpoint answers in time',
    async (_name, hostile, index) => {
      const path = join(dir, `hostile-${index}.db`)
      const clean = await AgentFS.open({ path, versions: true })
      await clean.fs.mkdir('/dir/sub', { recursive: true })
      await clean.fs.writeFile('/dir/sub/file.txt', 'hello hostile world')
      await clean.fs.writeFile('/dir/notes.md', 'notes')
      await clean.fs.writeFile('/top.txt', 'top')
      await clean.snapshot('clean')
      await clean.close()
      const raw = new Database(path)
      raw.exec(hostile.sql)
      raw.close()
      const agent = await AgentFS.open({ path })
      const server = await serveInspector(agent)
      try {
        const get = async (endpoint: string) => {
          const res = await fetch(`${server.origin}${endpoint}`, {
            headers: { authorization: `Bearer ${server.token}` },
            signal: AbortSignal.timeout(LIMIT_MS),
          })
          const body = (await res.json()) as { error?: string }
          if (!res.ok) {
            expect(body.error, endpoint).toMatch(/^[^\n]+$/)
            expect(body.error, endpoint).not.toMatch(/TypeError|RangeError|Cannot read/)
          }
          return { status: res.status, body }
        }
        const root = await get('/api/tree?path=/')
        // A damaged name fails the listing as the filesystem does: EIO, saying to run fsck.
        if (root.status !== 200) expect(root.body.error).toMatch(/^EIO: .*damaged.*agentfs fsck/)
        const endpoints = [
          '/api/info',
          '/api/tree?path=/dir',
          '/api/tree?path=/dir/sub',
          '/api/file?path=/dir/sub/file.txt',
          '/api/file?path=/top.txt',
          '/api/file/history?path=/dir/sub/file.txt',
          '/api/file/blame?path=/dir/sub/file.txt',
          '/api/file/diff?path=/dir/sub/file.txt&from=none&to=current',
          '/api/calls',
          '/api/sessions',
          '/api/stats',
          '/api/changes',
          '/api/snapshots',
          '/api/snapshots/diff?from=clean',
          '/api/branch',
          '/api/kv',
        ]
        const entries = (root.body as { entries?: { path: string; type: string }[] }).entries
        for (const e of entries ?? [])
          endpoints.push(
            e.type === 'directory'
              ? `/api/tree?path=${encodeURIComponent(e.path)}`
              : `/api/file?path=${encodeURIComponent(e.path)}`,
          )
        const snaps = (await get('/api/snapshots')).body as unknown as { name: string }[]
        for (const s of snaps)
          endpoints.push(`/api/snapshots/diff?from=${encodeURIComponent(s.name)}`)
        for (const endpoint of endpoints) {
          const { status } = await get(endpoint)
          expect([200, 400, 403, 404, 409, 413, 500], endpoint).toContain(status)
        }
        // Still serving after all of it.
        expect((await get('/api/info')).status).toBe(200)
      } finally {
        await server.close()
        await agent.close()
      }
    },
    LIMIT_MS * 30,
  )
})
