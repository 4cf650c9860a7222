import { type ChangeOp, fsError, normalizePath, readChunks } from '@agentfs/core'
import type { FsContext } from '../sql/context.js'
import { readAll } from '../storage/chunks.js'
import { versionOf } from '../storage/inode.js'
import { lookup } from '../storage/resolver.js'

/** One version of a file, as `fs.history(path)` lists it (newest first). */
export interface FileVersion {
  /** The version token (what `stat().version` returned right after the change). */
  readonly version: string | null
  /** When, ms since the epoch. */
  readonly at: number
  readonly op: ChangeOp
  /** The path the change was made through. */
  readonly path: string | null
  readonly size: number | null
  readonly sessionId: string | null
  readonly toolCallId: number | null
  /** Why, when the change was given a message (`writeFile(…, { message })`, `withMessage`). */
  readonly message: string | null
  /** The change feed's sequence number. */
  readonly seq: number
  /** `readFile(path, { version })` can read it: kept as a version, or the current content. */
  readonly readable: boolean
}

/** Options of `fs.history`. */
export interface HistoryOptions {
  /** At most this many (default 100, at most 10,000). */
  readonly limit?: number
}

interface Row {
  seq: number
  at_us: number
  op: ChangeOp
  path: string | null
  size: number | null
  version: string | null
  session_id: string | null
  tool_call_id: number | null
  message: string | null
  kept: number | null
}

/**
 * The changes of a file, newest first, with who made each: of the file at `path` now, by its
 * inode (renames keep its history); of a path with no file, the changes that named it.
 */
export async function fileHistory(
  ctx: FsContext,
  path: string,
  options: HistoryOptions = {},
): Promise<FileVersion[]> {
  const limit = options.limit ?? 100
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 10_000)
    throw fsError('EINVAL', 'history', path, { hint: `limit must be 1 … 10000, got ${limit}` })
  const target = normalizePath(path, 'history')
  return ctx.q.transaction(async (tx) => {
    const found = await lookup(tx, target, {
      followLast: true,
      syscall: 'history',
      allowMissing: true,
    })
    const ino = found.node?.ino ?? -1
    const current = found.node ? versionOf(found.node) : undefined
    const columns = `c.seq, c.at_us, c.op, c.path, c.size, c.version, c.session_id, c.message,
  (SELECT m.id FROM agentfs_tool_call_meta m WHERE m.call_token = c.call_token) AS tool_call_id,
  (SELECT 1 FROM agentfs_file_version v WHERE v.ino = c.ino AND v.version = c.version) AS kept`
    // The file there now: by its inode, so renames keep its history. No file: the changes that
    // named the path. Newest first, a scan of the feed that stops at the limit.
    const { rows } = await tx.execute<Row>(
      found.node
        ? {
            sql: `SELECT ${columns} FROM agentfs_change c WHERE c.ino = (SELECT ?) AND c.op NOT LIKE 'kv-%' ORDER BY c.seq DESC LIMIT (SELECT ?)`,
            params: [ino, limit],
          }
        : {
            sql: `SELECT ${columns} FROM agentfs_change c WHERE c.op NOT LIKE 'kv-%' AND (c.path = (SELECT ?) OR c.path2 = (SELECT ?)) ORDER BY c.seq DESC LIMIT (SELECT ?)`,
            params: [target, target, limit],
          },
    )
    if (rows.length === 0 && !found.node) throw fsError('ENOENT', 'history', path)
    return rows.map(
      (r): FileVersion => ({
        version: r.version,
        at: Math.floor(r.at_us / 1000),
        op: r.op,
        path: r.path,
        size: r.size,
        sessionId: r.session_id,
        toolCallId: r.tool_call_id,
        message: r.message ?? null,
        seq: r.seq,
        readable: r.kept === 1 || (r.version !== null && r.version === current),
      }),
    )
  })
}

/** The content of `path` at version token `version` (kept versions, or the current one). */
export async function readVersion(ctx: FsContext, path: string, version: string): Promise<Buffer> {
  const target = normalizePath(path, 'open')
  return ctx.q.transaction(async (tx) => {
    const found = await lookup(tx, target, {
      followLast: true,
      syscall: 'open',
      allowMissing: true,
    })
    const node = found.node
    if (node && versionOf(node) === version)
      return Buffer.from(await readAll(tx, node.ino, node.size, ctx.chunks, 'open', target))
    const { rows } = await tx.execute<{ size: number; chunks: Uint8Array }>({
      sql: `SELECT size, chunks FROM agentfs_file_version
WHERE version = ? AND (ino = ? OR path = ?) ORDER BY id DESC LIMIT 1`,
      params: [version, found.node?.ino ?? -1, target],
    })
    const row = rows[0]
    if (!row)
      throw fsError('ENOENT', 'open', path, {
        hint: `version ${version} of this file is not kept (versions off, or dropped by retention); list versions with fs.history(path)`,
      })
    return readChunks(tx, row.chunks, row.size)
  })
}
