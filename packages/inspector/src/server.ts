import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { createInspectorApp } from './app.js'
import type { InspectedAgent, InspectorAppOptions } from './context.js'

/** Options of {@link serveInspector}. */
export interface InspectorServeOptions extends InspectorAppOptions {
  /**
   * The address to listen on (default 127.0.0.1). Any other than a loopback address needs an
   * explicit `token`: the inspector shows everything an agent did.
   */
  readonly host?: string
  /** The port (default 0: a free one, in the URL). */
  readonly port?: number
}

/** A running inspector. */
export interface InspectorServer {
  /** The address to open: it carries the token once, then a cookie does. */
  readonly url: string
  /** The address without the token (for scripts sending `Authorization: Bearer TOKEN`). */
  readonly origin: string
  readonly token: string
  readonly port: number
  /** Stops listening, ends live views and open connections. */
  close(): Promise<void>
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1'])

/**
 * Serves the inspector over `agent` on 127.0.0.1 (a free port unless `port` is given):
 * read-only unless `allowWrites`, every request needing the token.
 *
 * @example
 * const inspector = await serveInspector(agent)
 * console.log(`open ${inspector.url}`)
 * // … later
 * await inspector.close()
 */
export async function serveInspector(
  agent: InspectedAgent,
  options: InspectorServeOptions = {},
): Promise<InspectorServer> {
  const host = options.host ?? '127.0.0.1'
  if (!LOOPBACK.has(host) && options.token === undefined)
    throw new TypeError(
      `listening on ${host} (not a loopback address) needs an explicit token (--token): anyone who can reach it sees everything the agent did`,
    )
  const port = options.port ?? 0
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new TypeError(`port must be 0 … 65535, got ${port}`)
  const hosts = LOOPBACK.has(host) ? (options.hosts ?? []) : [host, ...(options.hosts ?? [])]
  const inspector = createInspectorApp(agent, { ...options, hosts })
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: inspector.app.fetch, hostname: host, port }, () => resolve(s))
    s.once('error', reject)
  })
  const address = server.address() as AddressInfo
  const shown = host.includes(':') ? `[${host}]` : host
  const origin = `http://${shown}:${address.port}`
  let closed: Promise<void> | undefined
  return {
    url: `${origin}/?token=${encodeURIComponent(inspector.token)}`,
    origin,
    token: inspector.token,
    port: address.port,
    close() {
      closed ??= new Promise<void>((resolve) => {
        inspector.close()
        server.close(() => resolve())
        const s = server as { closeAllConnections?: () => void }
        s.closeAllConnections?.()
      })
      return closed
    },
  }
}
