import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import Database from 'better-sqlite3'
import { RequestError, type Stmt, StreamState, sqliteError } from './protocol.js'
import { attachWebSocket } from './ws.js'

/** Options of {@link startHranaServer}. */
export interface HranaServerOptions {
  /** The SQLite file the server serves (created when missing). */
  readonly path: string
  /** A stream unused this long is closed and its transaction rolled back (default 10 s). */
  readonly streamIdleMs?: number
  /** Largest request body accepted, in bytes (default 64 MiB). */
  readonly maxBodyBytes?: number
  /** Called on each connection a stream opens, after the server's own settings. */
  readonly onConnection?: (db: Database.Database) => void
}

/** A running server, and what it saw. */
export interface HranaServer {
  /** `http://127.0.0.1:PORT` */
  readonly url: string
  /** `ws://127.0.0.1:PORT`: the same server over WebSocket. */
  readonly wsUrl: string
  /** Streams open now. */
  readonly openStreams: number
  /** Pipeline requests served so far (one HTTP round trip each). */
  readonly pipelines: number
  /** WebSocket requests served so far (one round trip each, some sent together). */
  readonly wsRequests: number
  /** Stops accepting, closes every stream's connection, and resolves when the port is free. */
  close(): Promise<void>
}

interface Stream {
  readonly state: StreamState
  timer: NodeJS.Timeout
}

/**
 * A libSQL remote-protocol server for tests: Hrana 2 and 3 over HTTP with JSON bodies
 * (`/v2/pipeline`, `/v3/pipeline`; `/v3-protobuf` answers 404, so clients fall back to JSON)
 * and over WebSocket on the same port (`hrana3`/`hrana2` subprotocols, JSON; see `ws.ts`),
 * each stream (baton, or WebSocket stream id) its own better-sqlite3 connection to one file. Choices, made to behave
 * like sqld where it matters:
 *
 * - Connections start with `foreign_keys = ON` (sqld's default) and WAL; a pragma set on one
 *   stream holds on that stream only (a connection is reused by a later stream only if no
 *   statement changed its settings and it is outside a transaction).
 * - `busy_timeout = 0`: a statement that meets another stream's lock fails at once with
 *   `SQLITE_BUSY` (this process runs every stream; a blocking wait would stall them all). Clients
 *   retry.
 * - Errors carry the SQLite extended code name (`SQLITE_CONSTRAINT_UNIQUE`, …) in `code`, and the
 *   message starts with `SQLite error:`.
 * - A new baton is issued with every response; an unknown or stale baton is HTTP 400. A stream
 *   idle for `streamIdleMs` is closed (its transaction rolled back).
 * - Listens on 127.0.0.1 only, on an ephemeral port.
 *
 * Not implemented: the protobuf encoding, HTTP cursors (`/v3/cursor`, which clients use only
 * with protobuf; WebSocket cursors are served), numbered parameters `?NNN` (better-sqlite3 does
 * not bind them), and authentication (any token is accepted).
 */
export async function startHranaServer(options: HranaServerOptions): Promise<HranaServer> {
  const idleMs = options.streamIdleMs ?? 10_000
  const maxBody = options.maxBodyBytes ?? 64 * 1024 * 1024
  const streams = new Map<string, Stream>()
  let pipelines = 0
  {
    const setup = new Database(options.path)
    setup.pragma('journal_mode = WAL')
    setup.close()
  }

  /**
   * Connections of closed streams, kept for the next stream (opening one per request would
   * dominate the cost of a call): only those outside a transaction whose settings no statement
   * changed, so every stream still starts as a fresh connection would.
   */
  const idle: Database.Database[] = []
  const release = (state: StreamState) => {
    if (!state.tainted && !state.db.inTransaction && idle.length < 8) idle.push(state.db)
    else state.db.close()
  }

  const openStream = (sqls?: Map<number, string>): StreamState => {
    const reused = idle.pop()
    if (reused) return new StreamState(reused, sqls)
    const db = new Database(options.path)
    db.pragma('foreign_keys = ON')
    db.pragma('busy_timeout = 0')
    db.pragma('synchronous = NORMAL')
    options.onConnection?.(db)
    return new StreamState(db, sqls)
  }

  const closeStream = (baton: string) => {
    const stream = streams.get(baton)
    if (!stream) return
    streams.delete(baton)
    clearTimeout(stream.timer)
    // An expired stream's transaction is rolled back: its connection is not reused.
    stream.state.db.close()
  }

  const keep = (state: StreamState): string => {
    const baton = randomBytes(18).toString('base64url')
    const timer = setTimeout(() => closeStream(baton), idleMs)
    timer.unref()
    streams.set(baton, { state, timer })
    return baton
  }

  const pipeline = (version: 2 | 3, body: unknown) => {
    if (
      typeof body !== 'object' ||
      body === null ||
      !Array.isArray((body as { requests?: unknown }).requests)
    )
      throw new HttpError(400, 'the body must be an object with a requests array')
    const { baton, requests } = body as { baton?: string | null; requests: { type: string }[] }
    let state: StreamState
    if (baton !== undefined && baton !== null) {
      const stream = streams.get(baton)
      if (!stream) throw new HttpError(400, 'unknown or expired baton: the stream is closed')
      streams.delete(baton)
      clearTimeout(stream.timer)
      state = stream.state
    } else state = openStream()
    let closed = false
    const results = requests.map((request) => {
      if (closed)
        return { type: 'error', error: { message: 'the stream is closed', code: 'STREAM_CLOSED' } }
      try {
        const response = handle(version, state, request)
        if (request.type === 'close') closed = true
        return { type: 'ok', response }
      } catch (error) {
        return { type: 'error', error: sqliteError(error).toProto() }
      }
    })
    if (closed) {
      release(state)
      return { baton: null, base_url: null, results }
    }
    return { baton: keep(state), base_url: null, results }
  }

  const server = createServer((req, res) => {
    serve(req, res).catch((error: unknown) => {
      const status = error instanceof HttpError ? error.status : 500
      if (!res.headersSent) {
        res.writeHead(status, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ message: (error as Error).message }))
      } else res.destroy()
    })
  })

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname
    if (req.method === 'GET' && (path === '/v2' || path === '/v3' || path === '/health')) {
      res.writeHead(200).end()
      return
    }
    if (req.method === 'GET' && path === '/stats') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ pipelines, openStreams: streams.size }))
      return
    }
    const version = path === '/v2/pipeline' ? 2 : path === '/v3/pipeline' ? 3 : undefined
    if (req.method !== 'POST' || version === undefined)
      throw new HttpError(404, `no route ${req.method} ${path}`)
    const chunks: Buffer[] = []
    let size = 0
    for await (const chunk of req) {
      size += (chunk as Buffer).length
      if (size > maxBody) throw new HttpError(413, `the request body is over ${maxBody} bytes`)
      chunks.push(chunk as Buffer)
    }
    let body: unknown
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
    } catch {
      throw new HttpError(400, 'the body is not JSON')
    }
    pipelines++
    const out = JSON.stringify(pipeline(version, body))
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(out)
  }

  let wsRequests = 0
  const closeSockets = attachWebSocket(server, {
    openStream,
    release,
    handle,
    served: () => {
      wsRequests++
    },
  })

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    get openStreams() {
      return streams.size
    },
    get pipelines() {
      return pipelines
    },
    get wsRequests() {
      return wsRequests
    },
    async close() {
      for (const baton of [...streams.keys()]) closeStream(baton)
      closeSockets()
      for (const db of idle.splice(0)) db.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

function handle(version: 2 | 3, state: StreamState, request: Record<string, unknown>) {
  switch (request.type) {
    case 'close':
      return { type: 'close' }
    case 'execute':
      return { type: 'execute', result: state.execute(request.stmt as Stmt) }
    case 'batch':
      return {
        type: 'batch',
        result: state.batch(((request.batch as { steps?: unknown[] })?.steps ?? []) as never),
      }
    case 'sequence':
      state.sequence(
        state.sqlOf(request.sql as string | undefined, request.sql_id as number | undefined),
      )
      return { type: 'sequence' }
    case 'describe':
      return {
        type: 'describe',
        result: state.describe(
          state.sqlOf(request.sql as string | undefined, request.sql_id as number | undefined),
        ),
      }
    case 'store_sql': {
      if (state.sqls.size >= 1000 && !state.sqls.has(request.sql_id as number))
        throw new RequestError('too many stored SQL texts on this stream (1000)', 'SQL_STORE_FULL')
      state.sqls.set(Number(request.sql_id), String(request.sql))
      return { type: 'store_sql' }
    }
    case 'close_sql':
      state.sqls.delete(Number(request.sql_id))
      return { type: 'close_sql' }
    case 'get_autocommit':
      if (version < 3)
        throw new RequestError('get_autocommit needs Hrana 3 (/v3/pipeline)', 'HRANA_PROTO_ERROR')
      return { type: 'get_autocommit', is_autocommit: !state.db.inTransaction }
    default:
      throw new RequestError(
        `unknown request type ${JSON.stringify(request.type)}`,
        'HRANA_PROTO_ERROR',
      )
  }
}
