import { mkdtempSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AgentFS } from '@agentfs/sdk'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bounded } from '../src/api/feed.js'
import {
  InspectorApiError,
  type InspectorServer,
  inspectorClient,
  serveInspector,
} from '../src/index.js'
import { type Session, scriptedSession } from './session.js'

let dir: string
let session: Session
let agent: AgentFS
let server: InspectorServer
let api: ReturnType<typeof inspectorClient>

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentfs-inspector-'))
  session = await scriptedSession(join(dir, 'agent.db'))
  agent = await AgentFS.open({ path: session.path })
  server = await serveInspector(agent)
  api = inspectorClient(server.origin, server.token)
})

afterAll(async () => {
  await server?.close()
  await agent?.close()
  rmSync(dir, { recursive: true, force: true })
})

const refused = async (p: Promise<unknown>, status: number, message?: RegExp) => {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(InspectorApiError)
  expect((error as InspectorApiError).status).toBe(status)
  if (message) expect((error as Error).message).toMatch(message)
}

describe('the JSON API', () => {
  it('lists directories a page at a time, in name order', async () => {
    const root = await api.tree({ path: '/' })
    expect(root.entries.map((e) => e.name)).toEqual([
      '<img src=x onerror=alert(1)>.md',
      'big.txt',
      'notes.md',
      'secret',
      'src',
    ])
    const first = await api.tree({ path: '/', limit: 2 })
    expect(first.entries).toHaveLength(2)
    const rest = await api.tree({ path: '/', cursor: first.cursor!, limit: 10 })
    expect([...first.entries, ...rest.entries].map((e) => e.name)).toEqual(
      root.entries.map((e) => e.name),
    )
    expect(rest.cursor).toBeNull()
    await refused(api.tree({ path: '/nowhere' }), 404, /ENOENT/)
    await refused(api.tree({ path: '/notes.md' }), 400, /ENOTDIR/)
  })

  it('shows a file, its versions, any two of them diffed, and blame by tool call', async () => {
    const file = await api.file({ path: '/src/app.ts' })
    expect(file.text).toBe('const a = 1\nconst b = 3\nexport { a, b }\n')
    const versions = await api.history({ path: '/src/app.ts' })
    expect(versions.map((v) => v.op)).toEqual(['write', 'create'])
    const [edit, create] = versions
    const old = await api.file({ path: '/src/app.ts', version: create!.version! })
    expect(old.text).toContain('b = 2')
    const diff = await api.diff({ path: '/src/app.ts', from: create!.version!, to: 'current' })
    expect(diff.diff).toContain('-const b = 2')
    expect(diff.diff).toContain('+const b = 3')
    const blame = await api.blame({ path: '/src/app.ts' })
    expect(blame.lines.map((l) => l.toolCallId)).toEqual([
      create!.toolCallId,
      edit!.toolCallId,
      create!.toolCallId,
    ])
    expect(edit!.toolCallId).not.toBe(create!.toolCallId)
  })

  it('gives the calls in start order with errors, parents and sessions, and each call whole', async () => {
    const { calls, more } = await api.calls()
    expect(more).toBe(false)
    expect(calls).toHaveLength(session.calls)
    expect(calls.filter((c) => c.status === 'error').map((c) => c.name)).toEqual([
      'read_file',
      'think',
    ])
    expect(calls.filter((c) => c.parentId === session.parentId)).toHaveLength(2)
    expect(new Set(calls.map((c) => c.sessionId))).toEqual(new Set(['alpha', 'beta']))
    const starts = calls.map((c) => c.startedAt)
    expect(starts).toEqual([...starts].sort((a, b) => a - b))
    expect((await api.calls({ errors: true })).calls).toHaveLength(session.errors)
    expect((await api.calls({ session: 'beta' })).calls.map((c) => c.name)).toEqual(['write_file'])
    expect((await api.calls({ tool: 'think' })).calls).toHaveLength(2)
    const page = await api.calls({ limit: 4, offset: 4 })
    expect(page.calls.map((c) => c.id)).toEqual(calls.slice(4, 8).map((c) => c.id))
    const edit = calls.find((c) => c.name === 'edit_file')!
    const detail = await api.call(edit.id)
    expect(detail.call.parameters).toEqual({ path: '/src/app.ts', old: 'b = 2', new: 'b = 3' })
    expect(detail.changes.map((c) => [c.op, c.path])).toEqual([['write', '/src/app.ts']])
    await refused(api.call(99_999), 404, /no tool call #99999/)
  })

  it('summarises sessions and per-tool statistics', async () => {
    const sessions = await api.sessions()
    const beta = sessions.find((s) => s.sessionId === 'beta')!
    expect(beta).toMatchObject({ calls: 1, errors: 0, files: 1 })
    expect(beta.bytesWritten).toBe('# Notes\n\n- b is 3\n'.length)
    const alpha = sessions.find((s) => s.sessionId === 'alpha')!
    expect(alpha.errors).toBe(2)
    const { tools, overTime } = await api.stats()
    expect(tools.find((t) => t.name === 'think')).toMatchObject({ totalCalls: 2, failed: 1 })
    expect(overTime.buckets.reduce((n, b) => n + b.calls, 0)).toBe(session.calls)
    expect(overTime.buckets.reduce((n, b) => n + b.errors, 0)).toBe(session.errors)
    expect(overTime.buckets.length).toBeLessThanOrEqual(60)
  })

  it('pages the change feed newest first, by path and by session', async () => {
    const all = await api.changes()
    const seqs = all.changes.map((c) => c.seq)
    expect(seqs).toEqual([...seqs].sort((a, b) => b - a))
    expect(all.last).toBe(seqs[0])
    const page = await api.changes({ limit: 3 })
    const next = await api.changes({ limit: 3, cursor: page.cursor! })
    expect([...page.changes, ...next.changes].map((c) => c.seq)).toEqual(seqs.slice(0, 6))
    expect(
      (await api.changes({ path: '/src' })).changes.every((c) => c.path?.startsWith('/src')),
    ).toBe(true)
    const beta = await api.changes({ session: 'beta' })
    expect(beta.changes.map((c) => c.path)).toEqual(['/notes.md'])
    expect((await api.changes({ store: 'kv' })).changes.map((c) => c.path)).toEqual(['memory:task'])
  })

  it('lists snapshots and diffs two of them, or one against now', async () => {
    const snaps = await api.snapshots()
    expect(snaps.map((s) => s.name)).toEqual(['start', 'end'])
    const { changes: diff, truncated } = await api.snapshotDiff({ from: 'start', to: 'end' })
    expect(truncated).toBe(false)
    const app = diff.find((c) => c.path === '/src/app.ts')!
    expect(app.kind).toBe('added')
    expect(diff.find((c) => c.path === '/notes.md')?.kind).toBe('added')
    expect(await api.snapshotDiff({ from: 'end' })).toEqual({ changes: [], truncated: false })
    await refused(api.snapshotDiff({ from: 'nope' }), 404, /no snapshot named 'nope'/)
    expect(await api.branch()).toBeNull()
  })

  it('lists kv keys by prefix with formatted values and their changes', async () => {
    const page = await api.kv({ prefix: 'memory:' })
    expect(page.entries.map((e) => e.key)).toEqual(['memory:task'])
    expect(page.entries[0]!.json).toBe(
      JSON.stringify({ task: 'count to three', done: false }, null, 2),
    )
    const entry = await api.kvEntry({ key: 'memory:task' })
    expect(entry.changes.map((c) => c.op)).toEqual(['kv-set'])
    await refused(api.kvEntry({ key: 'nope' }), 404)
  })
})

describe('search', () => {
  it('finds the lines that hold a text, as written, in path order; a policy hides what it hides', async () => {
    const found = await api.search({ q: 'hunter2' })
    expect(found.matches).toEqual([
      { path: '/secret/key.txt', line: 1, text: 'hunter2', cut: false },
    ])
    expect(found.truncated).toBe(false)
    // In any case only when asked.
    expect((await api.search({ q: 'NOTES' })).matches).toEqual([])
    expect((await api.search({ q: 'NOTES', ignoreCase: true })).matches).toEqual([
      { path: '/notes.md', line: 1, text: '# Notes', cut: false },
    ])
    // The text is never a pattern.
    expect((await api.search({ q: 'b.is' })).matches).toEqual([])
    expect((await api.search({ q: 'const .' })).matches).toEqual([])
    // Under a directory, at most `limit` lines, and a long line as a window around the match.
    const src = await api.search({ q: 'const', path: '/src' })
    expect(src.matches.map((m) => `${m.path}:${m.line}`)).toEqual([
      '/src/app.ts:1',
      '/src/app.ts:2',
    ])
    const one = await api.search({ q: 'const', path: '/src', limit: 1 })
    expect(one).toMatchObject({ matches: [{ line: 1 }], truncated: true })
    const wide = await api.search({ q: 'xxx', path: '/big.txt' })
    expect(wide.matches).toHaveLength(1)
    expect(wide.matches[0]).toMatchObject({ path: '/big.txt', line: 1, cut: true })
    expect(wide.matches[0]!.text).toBe('x'.repeat(240))
    const held = await serveInspector(agent, { policy: { read: ['/src', '/src/**', '/'] } })
    try {
      const client = inspectorClient(held.origin, held.token)
      expect((await client.search({ q: 'hunter2' })).matches).toEqual([])
      expect((await client.search({ q: 'b = 3' })).matches).toEqual([
        { path: '/src/app.ts', line: 2, text: 'const b = 3', cut: false },
      ])
      await refused(client.search({ q: 'hunter2', path: '/secret/key.txt' }), 403)
    } finally {
      await held.close()
    }
  })

  it('refuses what it cannot answer, with one-line errors, and writes nothing', async () => {
    await refused(api.search({ q: '' }), 400, /q is required/)
    await refused(api.search({ q: 'a', limit: 1001 }), 400, /limit must be 1 … 1000/)
    await refused(api.search({ q: 'a', path: '/nowhere' }), 404, /ENOENT/)
    // Another connection sees no commit of the inspector's across searches.
    const { default: Database } = await import('better-sqlite3')
    const other = new Database(session.path, { readonly: true })
    try {
      const version = () => other.pragma('data_version', { simple: true })
      const before = version()
      await api.search({ q: 'const' })
      await api.search({ q: 'hunter2', ignoreCase: true })
      expect(version()).toBe(before)
      // (It would see one: a write through the agent moves it.)
      await agent.kv.set('search:probe', 1)
      expect(version()).not.toBe(before)
    } finally {
      other.close()
    }
  })
})

describe('bounds', () => {
  it('refuses pages past the limit and diffs of files past the budget, with one-line errors', async () => {
    await refused(api.calls({ limit: 2001 }), 400, /limit must be 1 … 2000/)
    await refused(api.changes({ cursor: -1 }), 400, /cursor must be/)
    await refused(api.diff({ path: '/big.txt', from: 'none' }), 413, /diffs files up to 1048576/)
    const big = await api.file({ path: '/big.txt' })
    expect(big.truncated).toBe(true)
    expect(big.text).toHaveLength(1024 * 1024)
    const res = await fetch(`${server.origin}/api/calls?since=yesterday`, {
      headers: { authorization: `Bearer ${server.token}` },
    })
    expect(res.status).toBe(400)
    expect(((await res.json()) as { error: string }).error).toBe(
      "since: cannot read 'yesterday' as a time",
    )
    // A yes/no parameter is 1/true or 0/false: anything else is refused, not read as no.
    for (const [route, name] of [
      ['/api/calls', 'errors'],
      ['/api/search?q=a', 'ignoreCase'],
    ] as const) {
      const flag = await fetch(
        `${server.origin}${route}${route.includes('?') ? '&' : '?'}${name}=yes`,
        {
          headers: { authorization: `Bearer ${server.token}` },
        },
      )
      expect(flag.status).toBe(400)
      expect(((await flag.json()) as { error: string }).error).toBe(
        `${name} must be 1 or true, 0 or false, got 'yes'`,
      )
    }
    expect((await api.search({ q: 'NOTES', ignoreCase: false })).matches).toEqual([])
  })
})

describe('budgets', () => {
  it("shows a call's payloads whole up to 1 MiB, and their stubs past it", async () => {
    const id = async (content: string) => {
      await agent.tools.record({
        name: 'big_write',
        parameters: { content },
        result: 'ok',
        startedAt: Date.now(),
        completedAt: Date.now(),
      })
      return (await agent.tools.query({ name: 'big_write', limit: 1 }))[0]!.id
    }
    const mid = await api.call(await id('m'.repeat(200 * 1024)))
    expect(mid.payloadsCut).toBe(false)
    expect((mid.call.parameters as { content: string }).content).toHaveLength(200 * 1024)
    const big = await api.call(await id('b'.repeat(1024 * 1024 + 1)))
    expect(big.payloadsCut).toBe(true)
    expect(JSON.stringify(big.call.parameters).length).toBeLessThan(64 * 1024)
    expect(big.call.parameters).toMatchObject({ $agentfs_payload: { bytes: expect.any(Number) } })
  })

  it('cuts a snapshot diff past its budget: the changes past the count, the diffs past the size', () => {
    const all = Array.from({ length: 5 }, (_, i) => ({ path: `/f${i}`, diff: 'x'.repeat(10) }))
    expect(bounded(all, 10, 100)).toEqual({ changes: all, truncated: false })
    const few = bounded(all, 3, 100)
    expect(few).toEqual({ changes: all.slice(0, 3), truncated: true })
    const small = bounded(all, 10, 25)
    expect(small.truncated).toBe(true)
    expect(small.changes.map((c) => c.diff !== undefined)).toEqual([
      true,
      true,
      false,
      false,
      false,
    ])
    expect(small.changes.map((c) => c.path)).toEqual(all.map((c) => c.path))
  })
})

describe('access', () => {
  it('needs the token: none, a wrong one, and the printed URL setting a cookie', async () => {
    expect((await fetch(`${server.origin}/api/info`)).status).toBe(401)
    expect((await fetch(`${server.origin}/`)).status).toBe(401)
    const wrong = await fetch(`${server.origin}/api/info`, {
      headers: { authorization: 'Bearer not-the-token-at-all' },
    })
    expect(wrong.status).toBe(401)
    expect((await fetch(`${server.origin}/?token=wrong-token-wrong-token`)).status).toBe(401)
    const opened = await fetch(server.url, { redirect: 'manual' })
    expect(opened.status).toBe(302)
    const cookie = opened.headers.get('set-cookie')!
    expect(cookie).toMatch(/HttpOnly/)
    expect(cookie).toMatch(/SameSite=Strict/)
    const page = await fetch(`${server.origin}/`, { headers: { cookie: cookie.split(';')[0]! } })
    expect(page.status).toBe(200)
    expect(page.headers.get('content-security-policy')).toContain("connect-src 'self'")
    expect(await page.text()).toContain('<script src="/app.js">')
  })

  it('answers only to its own host names (no DNS rebinding)', async () => {
    // fetch sets Host itself; a raw request sends what a rebinding page's browser would.
    const status = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(`${server.origin}/api/info`, {
          headers: { authorization: `Bearer ${server.token}`, host },
        })
        req.on('response', (res) => {
          res.resume()
          resolve(res.statusCode ?? 0)
        })
        req.on('error', reject)
        req.end()
      })
    expect(await status('evil.example')).toBe(421)
    expect(await status(`evil.example:${server.port}`)).toBe(421)
    expect(await status(`localhost:${server.port}`)).toBe(200)
    expect(await status(`127.0.0.1:${server.port}`)).toBe(200)
  })

  it('is read-only unless writes are allowed', async () => {
    await refused(api.snapshot({ name: 'x' }), 403, /read-only/)
    expect((await api.snapshots()).map((s) => s.name)).toEqual(['start', 'end'])
    const writable = await serveInspector(agent, { allowWrites: true })
    try {
      const client = inspectorClient(writable.origin, writable.token)
      expect((await client.snapshot({ name: 'from-ui' })).name).toBe('from-ui')
      const foreign = await fetch(`${writable.origin}/api/snapshots`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${writable.token}`,
          origin: 'http://evil.example',
          'content-type': 'application/json',
        },
        body: '{}',
      })
      expect(foreign.status).toBe(403)
      await agent.history.deleteSnapshot('from-ui')
    } finally {
      await writable.close()
    }
  })

  it('refuses a non-loopback address without an explicit token', async () => {
    await expect(serveInspector(agent, { host: '0.0.0.0' })).rejects.toThrow(
      /needs an explicit token/,
    )
  })

  it('shows only what a path policy lets be read', async () => {
    const held = await serveInspector(agent, { policy: { read: ['/src', '/src/**', '/'] } })
    try {
      const client = inspectorClient(held.origin, held.token)
      await refused(client.file({ path: '/secret/key.txt' }), 403, /EACCES/)
      await refused(client.history({ path: '/secret/key.txt' }), 403)
      const feed = await client.changes({ limit: 2000 })
      expect(feed.changes.some((c) => c.path?.startsWith('/secret'))).toBe(false)
      expect(feed.changes.some((c) => c.path === '/src/app.ts')).toBe(true)
      const { changes: diff } = await client.snapshotDiff({ from: 'start', to: 'end' })
      expect(diff.some((c) => c.path === '/notes.md')).toBe(false)
      expect((await client.file({ path: '/src/app.ts' })).text).toContain('b = 3')
    } finally {
      await held.close()
    }
  })

  it('is served by agent.serveInspector() too', async () => {
    const own = await agent.serveInspector()
    try {
      expect(own.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=/)
      const info = await inspectorClient(own.origin, own.token).info()
      expect(info.path).toBe(session.path)
      expect(info.allowWrites).toBe(false)
    } finally {
      await own.close()
    }
  })
})
