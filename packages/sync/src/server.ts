import { AgentFsError, type SqlValue } from '@agentfs/core'

/** Where the sync server is and how to authenticate to it. */
export interface SyncRemote {
  /** `http://…`, `https://…` or `libsql://…` (Turso Cloud). */
  readonly url: string
  readonly authToken?: string
}

/** The HTTP base of a remote: `libsql://` is HTTPS. */
export function httpBase(url: string): string {
  const base = url.replace(/^libsql:\/\//, 'https://').replace(/\/+$/, '')
  if (!/^https?:\/\//.test(base))
    throw new AgentFsError(
      'INVALID_ARGUMENT',
      `sync url ${JSON.stringify(url)} is not http://, https:// or libsql://; give the server's address`,
    )
  return base
}

type HranaValue =
  | { type: 'null' }
  | { type: 'integer'; value: string }
  | { type: 'float'; value: number }
  | { type: 'text'; value: string }
  | { type: 'blob'; base64: string }

const toHrana = (value: SqlValue): HranaValue =>
  value === null
    ? { type: 'null' }
    : typeof value === 'bigint' || (typeof value === 'number' && Number.isInteger(value))
      ? { type: 'integer', value: String(value) }
      : typeof value === 'number'
        ? { type: 'float', value }
        : typeof value === 'string'
          ? { type: 'text', value }
          : { type: 'blob', base64: Buffer.from(value).toString('base64') }

const fromHrana = (value: HranaValue): SqlValue =>
  value.type === 'null'
    ? null
    : value.type === 'integer'
      ? Number(value.value)
      : value.type === 'blob'
        ? Buffer.from(value.base64, 'base64')
        : value.value

/** Time allowed for one request to the server (ms). */
const REQUEST_TIMEOUT_MS = 15_000

/**
 * Runs one statement on the server itself (Hrana `/v2/pipeline`, which Turso Cloud and the
 * local `tursodb --sync-server` both serve): for the few writes that must be atomic across
 * clients, such as claiming a slot. Returns the rows as arrays.
 */
export async function serverExecute(
  remote: SyncRemote,
  sql: string,
  args: readonly SqlValue[] = [],
): Promise<SqlValue[][]> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (remote.authToken !== undefined) headers.authorization = `Bearer ${remote.authToken}`
  const endpoint = `${httpBase(remote.url)}/v2/pipeline`
  let response: Response
  try {
    response = await fetch(endpoint, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        requests: [{ type: 'execute', stmt: { sql, args: args.map(toHrana) } }],
      }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    })
  } catch (error) {
    throw new AgentFsError(
      'REMOTE',
      `the sync server at ${remote.url} did not answer (${(error as Error).message}); check the url and that it is running`,
      { cause: error },
    )
  }
  if (!response.ok)
    throw new AgentFsError(
      'REMOTE',
      `the sync server at ${remote.url} answered HTTP ${response.status}${response.status === 401 || response.status === 403 ? '; check the auth token' : ''}`,
    )
  let body: unknown
  try {
    body = await response.json()
  } catch (error) {
    throw new AgentFsError(
      'REMOTE',
      `the sync server at ${remote.url} sent a reply that is not JSON`,
      {
        cause: error,
      },
    )
  }
  const result = (body as { results?: unknown[] } | null)?.results?.[0] as
    | { type: 'ok'; response?: { result?: { rows?: unknown } } }
    | { type: 'error'; error?: { message?: unknown } }
    | undefined
  if (result?.type === 'error')
    throw new AgentFsError(
      'REMOTE',
      `the sync server at ${remote.url} refused "${sql.slice(0, 60)}": ${String(result.error?.message)}`,
    )
  const rows = result?.type === 'ok' ? result.response?.result?.rows : undefined
  if (!Array.isArray(rows) || !rows.every((row) => Array.isArray(row) && row.every(isHrana)))
    throw new AgentFsError(
      'REMOTE',
      `the sync server at ${remote.url} sent a reply that is not a Hrana result; check the url`,
    )
  return (rows as HranaValue[][]).map((row) => row.map(fromHrana))
}

function isHrana(value: unknown): value is HranaValue {
  if (typeof value !== 'object' || value === null) return false
  const v = value as { type?: unknown; value?: unknown; base64?: unknown }
  switch (v.type) {
    case 'null':
      return true
    case 'integer':
      return typeof v.value === 'string' && /^-?\d{1,19}$/.test(v.value)
    case 'float':
      return typeof v.value === 'number'
    case 'text':
      return typeof v.value === 'string'
    case 'blob':
      return typeof v.base64 === 'string'
    default:
      return false
  }
}
