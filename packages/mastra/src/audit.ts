import type { Change, ChangePage, ChangeQuery } from '@agentfs/core'
import { normalizePath, isWithin as within } from '@agentfs/core'

/** The change feed to answer from: `agent.changes` (anything with its `since`). */
export interface ChangeSource {
  since(cursor?: number, query?: ChangeQuery): Promise<ChangePage>
}

/** Mastra's `FilesystemAuditEntry` (its optional `WorkspaceFilesystemAudit` interface). */
export interface AuditEntry {
  id: string
  timestamp: Date
  operation: 'read' | 'write' | 'delete' | 'mkdir' | 'rmdir' | 'copy' | 'move'
  path: string
  targetPath?: string
  size?: number
  metadata?: Record<string, unknown>
}

/** Mastra's `FilesystemAuditOptions`. */
export interface AuditOptions {
  operations?: AuditEntry['operation'][]
  pathPrefix?: string
  since?: Date
  until?: Date
  limit?: number
  offset?: number
}

const DEFAULT_LIMIT = 100
const MAX_LIMIT = 10_000
/** Most feed rows one `getHistory` or `count` reads: a bound on any call. */
export const MAX_SCANNED = 1_000_000
const PAGE = 1_000

/**
 * Reads the change feed as Mastra audit entries, newest first: only changes inside the
 * workspace's root and allowed paths (shown as the agent sees them), filtered as asked. The
 * feed records changes, so there are no `read` entries; a metadata change (mode, owner, times)
 * is a `write` with `metadata.op` naming it.
 */
export async function readAudit(
  feed: ChangeSource,
  scope: { root: string; allowed: readonly string[] },
  options: AuditOptions = {},
  counting = false,
): Promise<{ entries: AuditEntry[]; count: number }> {
  const root = normalizePath(scope.root)
  const allowed = scope.allowed.map((a) => normalizePath(a))
  const display = (p: string) => (root === '/' ? p : p === root ? '/' : p.slice(root.length))
  const inside = (p: string | null): p is string =>
    p !== null && within(p, root) && allowed.some((a) => within(display(p), a))
  const prefix = options.pathPrefix === undefined ? undefined : normalizePath(options.pathPrefix)
  const offset = Math.max(0, Math.floor(options.offset ?? 0))
  const limit = Math.min(MAX_LIMIT, Math.max(0, Math.floor(options.limit ?? DEFAULT_LIMIT)))
  const untilUs = options.until ? options.until.getTime() * 1000 : undefined
  const wanted = options.operations ? new Set(options.operations) : undefined
  const query: ChangeQuery = {
    store: 'fs',
    reverse: true,
    limit: PAGE,
    // Filtered in the database where it can be: the workspace (and prefix) and the start time.
    path: prefix === undefined ? root : root === '/' ? prefix : normalizePath(`${root}${prefix}`),
    recursive: true,
    ...(options.since ? { since: options.since } : {}),
  }
  const entries: AuditEntry[] = []
  let count = 0
  let cursor = 0
  for (let scanned = 0; scanned < MAX_SCANNED; ) {
    const page = await feed.since(cursor, query)
    scanned += page.changes.length
    for (const change of page.changes) {
      if (untilUs !== undefined && change.atUs > untilUs) continue
      const entry = toEntry(change, inside, display)
      if (!entry || (wanted && !wanted.has(entry.operation))) continue
      if (
        prefix !== undefined &&
        !within(entry.path, prefix) &&
        !within(entry.targetPath ?? '', prefix)
      )
        continue
      count++
      if (!counting && count > offset) entries.push(entry)
      if (!counting && entries.length >= limit) return { entries, count }
    }
    if (!page.more) break
    cursor = page.cursor
  }
  return { entries, count }
}

function toEntry(
  c: Change,
  inside: (p: string | null) => p is string,
  display: (p: string) => string,
): AuditEntry | undefined {
  const base = { id: String(c.seq), timestamp: new Date(Math.floor(c.atUs / 1000)) }
  const meta: Record<string, unknown> = { op: c.op, seq: c.seq }
  if (c.sessionId !== null) meta.sessionId = c.sessionId
  if (c.toolCallId !== null) meta.toolCallId = c.toolCallId
  const size = c.size === null ? {} : { size: c.size }
  switch (c.op) {
    case 'rename':
      // Shown when either end is in the workspace; the other end only when it is too.
      if (!inside(c.path) && !inside(c.path2)) return undefined
      return {
        ...base,
        operation: 'move',
        path: inside(c.path) ? display(c.path) : '(outside the workspace)',
        ...(inside(c.path2) ? { targetPath: display(c.path2) } : {}),
        metadata: meta,
      }
    case 'create':
    case 'write':
      if (!inside(c.path)) return undefined
      // A copy records its source as path2 (shown when it is in the workspace too).
      if (c.path2 !== null)
        return {
          ...base,
          operation: 'copy',
          path: inside(c.path2) ? display(c.path2) : '(outside the workspace)',
          targetPath: display(c.path),
          ...size,
          metadata: meta,
        }
      return { ...base, operation: 'write', path: display(c.path), ...size, metadata: meta }
    case 'link':
      if (!inside(c.path2)) return undefined
      return { ...base, operation: 'write', path: display(c.path2), metadata: meta }
    case 'unlink':
    case 'rm':
      if (!inside(c.path)) return undefined
      return { ...base, operation: 'delete', path: display(c.path), metadata: meta }
    case 'mkdir':
    case 'rmdir':
      if (!inside(c.path)) return undefined
      return { ...base, operation: c.op, path: display(c.path), metadata: meta }
    default:
      if (!inside(c.path)) return undefined
      return { ...base, operation: 'write', path: display(c.path), ...size, metadata: meta }
  }
}
