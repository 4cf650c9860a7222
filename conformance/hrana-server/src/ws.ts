import type { Server } from 'node:http'
import { type WebSocket, WebSocketServer } from 'ws'
import { type ProtoError, RequestError, type StreamState, sqliteError } from './protocol.js'

/** What the WebSocket transport needs from the server. */
export interface WsHost {
  /** A stream's connection: fresh settings, from the server's pool. */
  openStream(sqls: Map<number, string>): StreamState
  /** Gives a closed stream's connection back (rolled back and closed if in a transaction). */
  release(state: StreamState): void
  /** Runs one stream request (execute, batch, sequence, describe, get_autocommit). */
  handle(version: 2 | 3, state: StreamState, request: Record<string, unknown>): unknown
  /** Counts one request served. */
  served(): void
}

/** Subprotocols offered, best first: Hrana 3 and 2 with JSON (protobuf is not spoken). */
const SUBPROTOCOLS: ReadonlyArray<[string, 2 | 3]> = [
  ['hrana3', 3],
  ['hrana2', 2],
]

type CursorEntry = Record<string, unknown>

/**
 * Hrana over WebSocket on the server's port (`ws://127.0.0.1:PORT`): hello, then requests by id;
 * streams by client-chosen id, each its own connection like an HTTP baton's; SQL texts stored per
 * socket; batches also as cursors (Hrana 3 clients run every batch through one), computed whole
 * and paged by `fetch_cursor`. Closing the socket closes its streams (their transactions roll
 * back). Returns a function that closes every socket.
 */
export function attachWebSocket(server: Server, host: WsHost): () => void {
  const wss = new WebSocketServer({
    server,
    handleProtocols: (offered) => {
      for (const [name] of SUBPROTOCOLS) if (offered.has(name)) return name
      return false
    },
  })
  wss.on('connection', (socket) => serveSocket(socket, host))
  return () => {
    for (const socket of wss.clients) socket.terminate()
    wss.close()
  }
}

function serveSocket(socket: WebSocket, host: WsHost): void {
  const version = SUBPROTOCOLS.find(([name]) => name === socket.protocol)?.[1] ?? 2
  const streams = new Map<number, StreamState>()
  const sqls = new Map<number, string>()
  const cursors = new Map<number, { entries: CursorEntry[]; next: number }>()
  let greeted = false

  const send = (message: unknown) => socket.send(JSON.stringify(message))
  const protocolError = (message: string) => {
    socket.close(1002, message.slice(0, 120))
  }
  const stream = (id: unknown): StreamState => {
    const state = streams.get(Number(id))
    if (!state) throw new RequestError(`no stream ${String(id)} is open`, 'STREAM_CLOSED')
    return state
  }

  const request = (req: Record<string, unknown>): unknown => {
    switch (req.type) {
      case 'open_stream': {
        const id = Number(req.stream_id)
        if (streams.has(id))
          throw new RequestError(`stream ${id} is already open`, 'HRANA_PROTO_ERROR')
        streams.set(id, host.openStream(sqls))
        return { type: 'open_stream' }
      }
      case 'close_stream': {
        const id = Number(req.stream_id)
        const state = streams.get(id)
        streams.delete(id)
        if (state) host.release(state)
        return { type: 'close_stream' }
      }
      case 'store_sql': {
        const id = Number(req.sql_id)
        if (sqls.size >= 1000 && !sqls.has(id))
          throw new RequestError('too many stored SQL texts (1000)', 'SQL_STORE_FULL')
        sqls.set(id, String(req.sql))
        return { type: 'store_sql' }
      }
      case 'close_sql':
        sqls.delete(Number(req.sql_id))
        return { type: 'close_sql' }
      case 'open_cursor': {
        if (version < 3) throw new RequestError('cursors need Hrana 3', 'HRANA_PROTO_ERROR')
        const batch = host.handle(version, stream(req.stream_id), {
          type: 'batch',
          batch: req.batch,
        }) as { result: { step_results: unknown[]; step_errors: (ProtoError | null)[] } }
        cursors.set(Number(req.cursor_id), { entries: cursorEntries(batch.result), next: 0 })
        return { type: 'open_cursor' }
      }
      case 'fetch_cursor': {
        const cursor = cursors.get(Number(req.cursor_id))
        if (!cursor) throw new RequestError(`no cursor ${String(req.cursor_id)}`, 'CURSOR_CLOSED')
        const count = Math.max(1, Math.min(Number(req.max_count) || 1, 10_000))
        const entries = cursor.entries.slice(cursor.next, cursor.next + count)
        cursor.next += entries.length
        return { type: 'fetch_cursor', entries, done: cursor.next >= cursor.entries.length }
      }
      case 'close_cursor':
        cursors.delete(Number(req.cursor_id))
        return { type: 'close_cursor' }
      default:
        return host.handle(version, stream(req.stream_id), req)
    }
  }

  socket.on('message', (data, isBinary) => {
    if (isBinary) return protocolError('binary messages need the protobuf encoding')
    let message: Record<string, unknown>
    try {
      message = JSON.parse(String(data)) as Record<string, unknown>
    } catch {
      return protocolError('a message is not JSON')
    }
    if (message.type === 'hello') {
      // Any token is accepted (as over HTTP); a later hello re-authenticates.
      greeted = true
      send({ type: 'hello_ok' })
      return
    }
    if (message.type !== 'request' || !greeted)
      return protocolError('expected hello, then request messages')
    host.served()
    const id = message.request_id
    try {
      const response = request((message.request ?? {}) as Record<string, unknown>)
      send({ type: 'response_ok', request_id: id, response })
    } catch (error) {
      send({ type: 'response_error', request_id: id, error: sqliteError(error).toProto() })
    }
  })
  socket.on('close', () => {
    for (const state of streams.values()) host.release(state)
    streams.clear()
    cursors.clear()
  })
}

/** A batch's results as cursor entries: per step begin, rows, end, or its error. */
function cursorEntries(result: {
  step_results: unknown[]
  step_errors: (ProtoError | null)[]
}): CursorEntry[] {
  const entries: CursorEntry[] = []
  result.step_results.forEach((value, step) => {
    const error = result.step_errors[step]
    if (error) {
      entries.push({ type: 'step_error', step, error })
      return
    }
    if (!value) return
    const stmt = value as {
      cols: unknown[]
      rows: unknown[][]
      affected_row_count: number
      last_insert_rowid: string | null
    }
    entries.push({ type: 'step_begin', step, cols: stmt.cols })
    for (const row of stmt.rows) entries.push({ type: 'row', row })
    entries.push({
      type: 'step_end',
      affected_row_count: stmt.affected_row_count,
      last_insert_rowid: stmt.last_insert_rowid,
    })
  })
  return entries
}
