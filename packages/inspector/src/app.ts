import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isAgentFsError } from '@agentfs/core'
import { type Context, Hono } from 'hono'
import { getCookie, setCookie } from 'hono/cookie'
import { streamSSE } from 'hono/streaming'
import { callDetail, sessions, stats, timeline } from './api/calls.js'
import {
  branchDiff,
  type ChangeFilters,
  feed,
  follow,
  kvEntry,
  kvPage,
  snapshotDiff,
  snapshots,
} from './api/feed.js'
import { blame, fileDiff, fileHistory, fileView, tree } from './api/files.js'
import { search } from './api/search.js'
import { type InspectedAgent, type InspectorAppOptions, inspection } from './context.js'
import {
  flagParam,
  HttpError,
  intParam,
  LIMITS,
  optionalString,
  pageParam,
  stringParam,
  timeParam,
} from './limits.js'

/** The cookie that carries the token after the printed URL was opened once. */
export const TOKEN_COOKIE = 'agentfs_inspector'

/** The web app's files, read once from the build. */
function loadAssets(): Record<string, { body: string; type: string }> {
  const dir = new URL('../dist/ui/', import.meta.url)
  const read = (name: string) => {
    try {
      return readFileSync(new URL(name, dir), 'utf8')
    } catch {
      throw new Error(
        `the inspector's web app is missing (${name} under ${dir.pathname}); build it with "pnpm --filter @agentfs/inspector build"`,
      )
    }
  }
  return {
    '/': { body: read('index.html'), type: 'text/html; charset=utf-8' },
    '/app.js': { body: read('app.js'), type: 'text/javascript; charset=utf-8' },
    '/app.css': { body: read('app.css'), type: 'text/css; charset=utf-8' },
  }
}

/**
 * Every page and answer: scripts, styles, images and requests only from this server — so a
 * page can never make the browser reach anything but 127.0.0.1 — and never framed.
 */
const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-store',
}

/** The inspector as a Hono app (mount it in your own server, or use `serveInspector`). */
export interface InspectorApp {
  readonly app: Hono
  /** The token requests must carry. */
  readonly token: string
  /** Ends the live streams (call before closing the server). */
  close(): void
}

const digest = (s: string) => createHash('sha256').update(s).digest()

/** The web app and JSON API over `agent`, behind `options.token`. */
export function createInspectorApp(
  agent: InspectedAgent,
  options: InspectorAppOptions = {},
): InspectorApp {
  const token = options.token ?? randomBytes(32).toString('base64url')
  if (token.length < 16) throw new TypeError('the inspector token must be at least 16 characters')
  const tokenDigest = digest(token)
  const ins = inspection(agent, options)
  const assets = loadAssets()
  const hosts = new Set(['127.0.0.1', 'localhost', '[::1]', ...(options.hosts ?? [])])
  const streams = new Set<AbortController>()
  const app = new Hono()

  const valid = (candidate: string | undefined) =>
    candidate !== undefined && timingSafeEqual(digest(candidate), tokenDigest)
  const bearer = (c: Context) => {
    const header = c.req.header('authorization')
    return header?.startsWith('Bearer ') ? header.slice(7) : undefined
  }

  app.use('*', async (c, next) => {
    // A page of another site that resolves its own name to 127.0.0.1 (DNS rebinding) sends its
    // own name as Host: refused before anything else.
    const host = (c.req.header('host') ?? '').replace(/:\d+$/, '').toLowerCase()
    if (!hosts.has(host)) {
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) c.header(k, v)
      return c.json({ error: `this inspector does not answer to the host '${host}'` }, 421)
    }
    await next()
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(k, v)
  })

  app.get('/', (c) => {
    const offered = c.req.query('token')
    if (offered !== undefined) {
      if (!valid(offered)) return c.text('wrong token: open the URL agentfs ui printed', 401)
      setCookie(c, TOKEN_COOKIE, token, { httpOnly: true, sameSite: 'Strict', path: '/' })
      return c.redirect('/', 302)
    }
    if (!valid(getCookie(c, TOKEN_COOKIE)))
      return c.text('this inspector needs its token: open the URL agentfs ui printed', 401)
    const page = assets['/']!
    return c.body(page.body, 200, { 'Content-Type': page.type })
  })

  app.use('*', async (c, next) => {
    if (c.req.path === '/') return next()
    if (!valid(getCookie(c, TOKEN_COOKIE)) && !valid(bearer(c)))
      return c.json(
        {
          error:
            'a token is required: open the URL agentfs ui printed, or send Authorization: Bearer TOKEN',
        },
        401,
      )
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      // Changes come only from this app's own pages or from scripts with the token.
      const origin = c.req.header('origin')
      if (
        origin !== undefined &&
        !hosts.has(new URL(origin).hostname.toLowerCase()) &&
        !hosts.has(`[${new URL(origin).hostname}]`)
      )
        return c.json({ error: `requests from ${origin} are refused` }, 403)
    }
    return next()
  })

  app.get('/favicon.ico', (c) => c.body(null, 204))
  for (const path of ['/app.js', '/app.css'] as const)
    app.get(path, (c) => {
      const asset = assets[path]!
      return c.body(asset.body, 200, { 'Content-Type': asset.type })
    })

  const q = (c: Context, name: string) => c.req.query(name)

  app.get('/api/info', async (c) => {
    const last = await agent.changes.last()
    const snaps = await agent.history.listSnapshots()
    return c.json({
      path: agent.path ?? null,
      chunkSize: agent.db.chunkSize,
      compression: agent.db.chunks.codec?.name ?? null,
      lastChange: last,
      snapshots: snaps.length,
      allowWrites: options.allowWrites === true,
      policy: options.policy !== undefined,
      limits: LIMITS,
    })
  })

  app.get('/api/tree', async (c) =>
    c.json(
      await tree(
        ins,
        q(c, 'path') ?? '/',
        optionalString(q(c, 'cursor'), 'cursor'),
        pageParam(q(c, 'limit')),
      ),
    ),
  )
  app.get('/api/file', async (c) =>
    c.json(
      await fileView(
        ins,
        stringParam(q(c, 'path'), 'path'),
        optionalString(q(c, 'version'), 'version'),
      ),
    ),
  )
  app.get('/api/file/history', async (c) =>
    c.json(await fileHistory(ins, stringParam(q(c, 'path'), 'path'), pageParam(q(c, 'limit')))),
  )
  app.get('/api/file/diff', async (c) =>
    c.json(
      await fileDiff(
        ins,
        stringParam(q(c, 'path'), 'path'),
        stringParam(q(c, 'from'), 'from'),
        q(c, 'to') ?? 'current',
      ),
    ),
  )
  app.get('/api/file/blame', async (c) =>
    c.json(await blame(ins, stringParam(q(c, 'path'), 'path'))),
  )

  app.get('/api/search', async (c) =>
    c.json(
      await search(
        ins,
        stringParam(q(c, 'q'), 'q'),
        q(c, 'path') || '/',
        intParam(q(c, 'limit'), 'limit', {
          min: 1,
          max: LIMITS.searchMatches,
          fallback: LIMITS.page,
        }) as number,
        flagParam(q(c, 'ignoreCase'), 'ignoreCase'),
      ),
    ),
  )

  const callFilters = (c: Context) => ({
    sessionId: optionalString(q(c, 'session'), 'session'),
    name: optionalString(q(c, 'tool'), 'tool'),
    errorsOnly: flagParam(q(c, 'errors'), 'errors'),
    since: timeParam(q(c, 'since'), 'since'),
    until: timeParam(q(c, 'until'), 'until'),
  })
  app.get('/api/calls', async (c) =>
    c.json(
      await timeline(
        ins,
        callFilters(c),
        pageParam(q(c, 'limit')),
        intParam(q(c, 'offset'), 'offset', { min: 0, max: 1e9, fallback: 0 }) as number,
      ),
    ),
  )
  app.get('/api/calls/:id', async (c) =>
    c.json(
      await callDetail(
        ins,
        intParam(c.req.param('id'), 'id', { min: 1, max: Number.MAX_SAFE_INTEGER }) as number,
      ),
    ),
  )
  app.get('/api/sessions', async (c) => c.json(await sessions(ins, pageParam(q(c, 'limit')))))
  app.get('/api/stats', async (c) =>
    c.json(await stats(ins, { sessionId: optionalString(q(c, 'session'), 'session') })),
  )

  const changeFilters = (c: Context): ChangeFilters => {
    const store = q(c, 'store')
    if (store !== undefined && store !== '' && store !== 'fs' && store !== 'kv')
      throw new HttpError(400, `store must be fs or kv, got '${store}'`)
    return {
      path: optionalString(q(c, 'path'), 'path'),
      sessionId: optionalString(q(c, 'session'), 'session'),
      store: store === 'fs' || store === 'kv' ? store : undefined,
    }
  }
  const cursorParam = (c: Context) =>
    intParam(q(c, 'cursor'), 'cursor', {
      min: 0,
      max: Number.MAX_SAFE_INTEGER,
      fallback: 0,
    }) as number
  app.get('/api/changes', async (c) =>
    c.json(await feed(ins, changeFilters(c), cursorParam(c), pageParam(q(c, 'limit')))),
  )
  app.get('/api/changes/stream', (c) => {
    if (streams.size >= LIMITS.sseClients)
      throw new HttpError(429, `at most ${LIMITS.sseClients} live views at once; close one`)
    const filters = changeFilters(c)
    const cursor = cursorParam(c)
    const controller = new AbortController()
    streams.add(controller)
    c.req.raw.signal.addEventListener('abort', () => controller.abort())
    return streamSSE(c, async (stream) => {
      stream.onAbort(() => controller.abort())
      try {
        await stream.writeSSE({ event: 'ready', data: String(cursor) })
        for await (const change of follow(ins, filters, cursor, controller.signal))
          await stream.writeSSE({
            event: 'change',
            id: String(change.seq),
            data: JSON.stringify(change),
          })
      } catch (error) {
        if (!controller.signal.aborted) throw error
      } finally {
        streams.delete(controller)
      }
    })
  })
  app.get('/api/snapshots', async (c) => c.json(await snapshots(ins)))
  app.get('/api/snapshots/diff', async (c) =>
    c.json(
      await snapshotDiff(ins, stringParam(q(c, 'from'), 'from'), optionalString(q(c, 'to'), 'to')),
    ),
  )
  app.post('/api/snapshots', async (c) => {
    if (options.allowWrites !== true)
      throw new HttpError(
        403,
        'this inspector is read-only: start it with --allow-writes to take snapshots',
      )
    const body = (await c.req.json().catch(() => ({}))) as { name?: unknown; reason?: unknown }
    if (body.name !== undefined && typeof body.name !== 'string')
      throw new HttpError(400, 'name must be a string')
    if (body.reason !== undefined && typeof body.reason !== 'string')
      throw new HttpError(400, 'reason must be a string')
    const info = await agent.history.snapshot(body.name, {
      reason: body.reason ?? 'taken in the inspector',
    })
    return c.json(info, 201)
  })
  app.get('/api/branch', async (c) => c.json(await branchDiff(ins)))
  app.get('/api/kv', async (c) =>
    c.json(
      await kvPage(
        ins,
        q(c, 'prefix') ?? '',
        optionalString(q(c, 'cursor'), 'cursor'),
        pageParam(q(c, 'limit')),
      ),
    ),
  )
  app.get('/api/kv/entry', async (c) =>
    c.json(await kvEntry(ins, stringParam(q(c, 'key'), 'key'), pageParam(q(c, 'limit')))),
  )
  app.all('/api/*', (c) => c.json({ error: `no endpoint ${c.req.method} ${c.req.path}` }, 404))

  app.onError((error, c) => {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) c.header(k, v)
    if (error instanceof HttpError) return c.json({ error: error.message }, error.status)
    const message = (error.message.split('\n')[0] ?? String(error)).slice(0, 500)
    if (isAgentFsError(error) && error.code === 'INVALID_ARGUMENT')
      return c.json({ error: message }, 400)
    if (isAgentFsError(error) && error.code === 'TOO_BIG') return c.json({ error: message }, 413)
    return c.json({ error: message }, 500)
  })

  return {
    app,
    token,
    close() {
      for (const s of streams) s.abort()
      streams.clear()
    },
  }
}
