import {
  contentOf,
  currentActor,
  type Executor,
  fsError,
  isDirMode,
  isFsError,
  isLinkMode,
  isRegMode,
  normalizePath,
  readChunks,
  resolveAt,
  type SnapInode,
  walkAt,
  withMessage,
} from '@agentfs/core'
import type { FileSystem } from '../types.js'

/** What `fs.undelete` brought back. */
export interface Undeleted {
  readonly path: string
  readonly kind: 'file' | 'directory' | 'symlink'
  /** Where the content came from: kept versions, a snapshot, or both (a tree). */
  readonly from: ReadonlyArray<'version' | 'snapshot'>
  /** The snapshot read, when one was. */
  readonly snapshot: string | null
  /** The change (feed `seq`) that deleted it. */
  readonly deletedBy: number
  readonly files: number
  readonly directories: number
  readonly bytes: number
}

/** One deleted path `fs.deleted(dir)` lists. */
export interface DeletedEntry {
  readonly path: string
  /** The change that deleted it. */
  readonly seq: number
  /** When, ms since the epoch. */
  readonly at: number
  readonly op: 'unlink' | 'rm' | 'rmdir'
  readonly sessionId: string | null
  readonly toolCallId: number | null
  /** Where `undelete` would take it from; null when nothing kept it. */
  readonly recoverable: 'version' | 'snapshot' | null
}

/** One path an undelete writes, in order (parents first). */
export interface PlannedEntry {
  readonly path: string
  readonly type: 'directory' | 'file' | 'symlink'
  readonly mode: number | null
  readonly content?: Buffer
  readonly target?: string
}

export interface UndeletePlan {
  readonly kind: Undeleted['kind']
  readonly entries: PlannedEntry[]
  readonly from: Set<'version' | 'snapshot'>
  readonly snapshot: string | null
  readonly deletedBy: number
}

/** What one undelete may bring back. */
export const UNDELETE_LIMITS = { entries: 100_000, bytes: 256 * 1024 * 1024 }

const DELETES = "('unlink', 'rm', 'rmdir')"

interface Deletion {
  seq: number
  op: 'unlink' | 'rm' | 'rmdir'
  ino: number | null
  at_us: number
}

interface VersionRow {
  ino: number
  path: string | null
  at_us: number
  size: number
  chunks: Uint8Array
}

const escapeLike = (path: string) => `${path.replace(/[\\%_]/g, (c) => `\\${c}`)}/%`

/** The newest snapshot taken before change `seq` in which `path` resolves (not following it). */
async function snapshotBefore(
  q: Executor,
  seq: number,
  path: string,
): Promise<{ id: number; name: string; created_us: number; node: SnapInode } | undefined> {
  const { rows } = await q.execute<{ id: number; name: string; created_us: number }>({
    sql: 'SELECT id, name, created_us FROM agentfs_snapshot WHERE seq < ? ORDER BY id DESC LIMIT 20',
    params: [seq],
  })
  for (const s of rows) {
    const node = await resolveAt(q, s.id, path, false, 'undelete').catch(() => undefined)
    if (node) return { ...s, node }
  }
  return undefined
}

/** The newest kept version of inode `ino`. */
async function newestVersion(q: Executor, ino: number): Promise<VersionRow | undefined> {
  const { rows } = await q.execute<VersionRow>({
    sql: 'SELECT ino, path, at_us, size, chunks FROM agentfs_file_version WHERE ino = ? ORDER BY id DESC LIMIT 1',
    params: [ino],
  })
  return rows[0]
}

/**
 * What undeleting `path` would write: its last deletion in the feed, then the content from the
 * newest kept version of the deleted file or, older or without one, the newest snapshot taken
 * before the deletion. A directory is the snapshot's tree under it, each file of it brought up
 * to a newer kept version of the same file, plus the files kept as versions under the path that
 * lived there when it was deleted (a file renamed inside the tree after its last version comes
 * back under its new name; empty directories only from a snapshot). Reads only.
 */
export async function planUndelete(q: Executor, path: string, read = true): Promise<UndeletePlan> {
  // Without `read`, only where each content would come from (fs.deleted lists that).
  const load = async (fn: () => Promise<Buffer>) => (read ? fn() : Buffer.alloc(0))
  const target = normalizePath(path, 'undelete')
  if (target === '/')
    throw fsError('EINVAL', 'undelete', path, { hint: 'the root is never deleted' })
  const { rows } = await q.execute<Deletion>({
    sql: `SELECT seq, op, ino, at_us FROM agentfs_change WHERE path = ? AND op IN ${DELETES} ORDER BY seq DESC LIMIT 1`,
    params: [target],
  })
  const deletion = rows[0]
  if (!deletion)
    throw fsError('ENOENT', 'undelete', path, {
      hint: 'no deletion of this path is in the change feed; list what can be undeleted with fs.deleted(dir)',
    })
  const snap = await snapshotBefore(q, deletion.seq, target)
  const version = deletion.ino === null ? undefined : await newestVersion(q, deletion.ino)
  const from = new Set<'version' | 'snapshot'>()
  const entries: PlannedEntry[] = []
  let bytes = 0
  const add = (entry: PlannedEntry) => {
    bytes += entry.content?.byteLength ?? 0
    if (entries.length >= UNDELETE_LIMITS.entries || bytes > UNDELETE_LIMITS.bytes)
      throw fsError('EFBIG', 'undelete', path, {
        hint: `more than ${UNDELETE_LIMITS.entries} entries or ${UNDELETE_LIMITS.bytes} bytes; restore a snapshot instead`,
      })
    entries.push(entry)
  }
  const directory =
    deletion.op === 'rmdir' || (snap ? isDirMode(snap.node.mode) : !version && deletion.op === 'rm')
  const base = { deletedBy: deletion.seq, from, entries }
  if (!directory) {
    // A file (or a link): the newer of its last kept version and the snapshot's copy.
    if (version && (!snap || !isRegMode(snap.node.mode) || version.at_us >= snap.created_us)) {
      from.add('version')
      add({
        path: target,
        type: 'file',
        mode: snap && isRegMode(snap.node.mode) ? snap.node.mode & 0o7777 : null,
        content: await load(() => readChunks(q, version.chunks, version.size)),
      })
      return { ...base, kind: 'file', snapshot: null }
    }
    if (snap && isLinkMode(snap.node.mode)) {
      from.add('snapshot')
      add({ path: target, type: 'symlink', mode: null, target: snap.node.target ?? '' })
      return { ...base, kind: 'symlink', snapshot: snap.name }
    }
    if (snap && isRegMode(snap.node.mode)) {
      from.add('snapshot')
      add({
        path: target,
        type: 'file',
        mode: snap.node.mode & 0o7777,
        content: await load(() => contentOf(q, snap.node, target)),
      })
      return { ...base, kind: 'file', snapshot: snap.name }
    }
    throw fsError('ENOENT', 'undelete', path, {
      hint: `deleted by change #${deletion.seq}, but no kept version or snapshot holds its content (open with versions on, or take snapshots, to keep deleted files)`,
    })
  }
  // A tree: the snapshot's, then files kept as versions that lived under it when it went.
  const byPath = new Map<string, PlannedEntry>()
  const snapInos = new Map<number, string>()
  if (snap && isDirMode(snap.node.mode)) {
    from.add('snapshot')
    for await (const { path: p, node } of walkAt(q, snap.id, target, UNDELETE_LIMITS.entries)) {
      if (isDirMode(node.mode))
        byPath.set(p, { path: p, type: 'directory', mode: node.mode & 0o7777 })
      else if (isLinkMode(node.mode))
        byPath.set(p, { path: p, type: 'symlink', mode: null, target: node.target ?? '' })
      else if (isRegMode(node.mode)) {
        const newer = await newestVersion(q, node.ino)
        const fromVersion = newer !== undefined && newer.at_us >= snap.created_us
        if (fromVersion) from.add('version')
        byPath.set(p, {
          path: p,
          type: 'file',
          mode: node.mode & 0o7777,
          content: await load(() =>
            fromVersion ? readChunks(q, newer.chunks, newer.size) : contentOf(q, node, p),
          ),
        })
        snapInos.set(node.ino, p)
      }
      if (byPath.size > UNDELETE_LIMITS.entries) break
    }
  }
  const { rows: kept } = await q.execute<VersionRow & { renamed: string | null }>({
    sql: `SELECT v.ino, v.path, v.at_us, v.size, v.chunks,
  (SELECT c.path2 FROM agentfs_change c WHERE c.ino = v.ino AND c.op = 'rename' AND c.seq < ? AND c.at_us >= v.at_us ORDER BY c.seq DESC LIMIT 1) AS renamed
FROM agentfs_file_version v
WHERE v.path LIKE ? ESCAPE '\\' AND v.at_us <= ?
  AND v.id = (SELECT max(w.id) FROM agentfs_file_version w WHERE w.ino = v.ino)
  AND NOT EXISTS (SELECT 1 FROM fs_inode i WHERE i.ino = v.ino)
  AND NOT EXISTS (SELECT 1 FROM agentfs_change c WHERE c.ino = v.ino AND c.op IN ('unlink', 'rm') AND c.seq < ?)
ORDER BY v.id LIMIT ?`,
    params: [
      deletion.seq,
      escapeLike(target),
      deletion.at_us,
      deletion.seq,
      UNDELETE_LIMITS.entries + 1,
    ],
  })
  for (const v of kept) {
    if (snapInos.has(v.ino)) continue
    const p = v.renamed ?? v.path!
    if (!p.startsWith(`${target}/`)) continue
    from.add('version')
    byPath.set(p, {
      path: p,
      type: 'file',
      mode: null,
      content: await load(() => readChunks(q, v.chunks, v.size)),
    })
  }
  if (from.size === 0)
    throw fsError('ENOENT', 'undelete', path, {
      hint: `deleted by change #${deletion.seq}, but no snapshot holds the directory and no file under it was kept as a version`,
    })
  // Every directory between the tree's root and a file kept only as a version.
  for (const p of [...byPath.keys()])
    for (let at = p.lastIndexOf('/'); at > target.length; at = p.lastIndexOf('/', at - 1)) {
      const dir = p.slice(0, at)
      if (byPath.has(dir)) break
      byPath.set(dir, { path: dir, type: 'directory', mode: null })
    }
  if (!byPath.has(target)) add({ path: target, type: 'directory', mode: null })
  // Parents before children: by path depth, then name.
  const sorted = [...byPath.values()].sort(
    (a, b) => a.path.split('/').length - b.path.split('/').length || (a.path < b.path ? -1 : 1),
  )
  for (const e of sorted) add(e)
  return { ...base, kind: 'directory', snapshot: snap?.name ?? null }
}

/**
 * Undeletes `target` (normalized `path`) through `fs`, the transaction's filesystem (so the
 * policy applies and a failure rolls everything back), reading the plan through `q`: refused
 * (EEXIST) when it exists; the changes carry `message`, else the tool call's, else
 * `undelete <path> (deleted by change #N)`.
 */
export async function undeleteInto(
  fs: Pick<FileSystem, 'lstat' | 'mkdir' | 'symlink' | 'writeFile'>,
  q: Executor,
  path: string,
  target: string,
  given: string | undefined,
): Promise<Undeleted> {
  if (
    await fs.lstat(target).then(
      () => true,
      (error: unknown) => (isFsError(error, 'ENOENT') ? false : Promise.reject(error)),
    )
  )
    throw fsError('EEXIST', 'undelete', path, {
      hint: 'it exists now; restore an earlier content with readFile(path, { version }) instead',
    })
  const plan = await planUndelete(q, target)
  // The caller's message (given, or of the tool call it runs in), else where it came from.
  const message =
    given ?? currentActor()?.message ?? `undelete ${target} (deleted by change #${plan.deletedBy})`
  let files = 0
  let directories = 0
  let bytes = 0
  await withMessage(message, async () => {
    const parent = target.slice(0, target.lastIndexOf('/')) || '/'
    if (parent !== '/') await fs.mkdir(parent, { recursive: true })
    for (const e of plan.entries) {
      if (e.type === 'directory') {
        await fs.mkdir(e.path, e.mode === null ? {} : { mode: e.mode })
        directories++
      } else if (e.type === 'symlink') await fs.symlink(e.target!, e.path)
      else {
        await fs.writeFile(e.path, e.content!, {
          flag: 'wx',
          ...(e.mode === null ? {} : { mode: e.mode }),
        })
        files++
        bytes += e.content!.byteLength
      }
    }
  })
  return {
    path: target,
    kind: plan.kind,
    from: [...plan.from],
    snapshot: plan.snapshot,
    deletedBy: plan.deletedBy,
    files,
    directories,
    bytes,
  }
}

/**
 * Where an undelete of `path`, deleted by `deletion`, would take it from — the source
 * `planUndelete` picks, found without walking a tree or reading content: a snapshot lookup
 * of the path and at most two index probes.
 */
async function recoverableFrom(
  q: Executor,
  path: string,
  deletion: Deletion,
): Promise<'version' | 'snapshot' | null> {
  const snap = await snapshotBefore(q, deletion.seq, path)
  const { rows } =
    deletion.ino === null
      ? { rows: [] }
      : await q.execute<{ at_us: number }>({
          sql: 'SELECT at_us FROM agentfs_file_version WHERE ino = ? ORDER BY id DESC LIMIT 1',
          params: [deletion.ino],
        })
  const version = rows[0]
  const directory =
    deletion.op === 'rmdir' || (snap ? isDirMode(snap.node.mode) : !version && deletion.op === 'rm')
  if (!directory) {
    if (version && (!snap || !isRegMode(snap.node.mode) || version.at_us >= snap.created_us))
      return 'version'
    return snap && (isRegMode(snap.node.mode) || isLinkMode(snap.node.mode)) ? 'snapshot' : null
  }
  if (snap && isDirMode(snap.node.mode)) return 'snapshot'
  // A tree no snapshot holds: any file kept as a version that lived under it when it went.
  const { rows: kept } = await q.execute({
    sql: `SELECT 1 FROM agentfs_file_version v
WHERE v.path LIKE ? ESCAPE '\\' AND v.at_us <= ?
  AND NOT EXISTS (SELECT 1 FROM fs_inode i WHERE i.ino = v.ino)
  AND NOT EXISTS (SELECT 1 FROM agentfs_change c WHERE c.ino = v.ino AND c.op IN ('unlink', 'rm') AND c.seq < ?)
LIMIT 1`,
    params: [escapeLike(path), deletion.at_us, deletion.seq],
  })
  return kept.length > 0 ? 'version' : null
}

/**
 * Paths deleted at or under `dir` that do not exist now and `visible` shows, newest deletion
 * first, each with where an undelete would take it from. Scans at most 10,000 deletions of the
 * feed; hidden paths take no place in `limit`.
 */
export async function listDeleted(
  q: Executor,
  dir: string,
  limit: number,
  exists: (path: string) => Promise<boolean>,
  visible: (path: string) => boolean = () => true,
): Promise<DeletedEntry[]> {
  const target = normalizePath(dir, 'deleted')
  const { rows } = await q.execute<
    Deletion & { path: string; session_id: string | null; tool_call_id: number | null }
  >({
    sql: `SELECT c.seq, c.op, c.ino, c.at_us, c.path, c.session_id,
  (SELECT m.id FROM agentfs_tool_call_meta m WHERE m.call_token = c.call_token) AS tool_call_id
FROM agentfs_change c
WHERE c.op IN ${DELETES} AND ${target === '/' ? 'c.path IS NOT NULL' : "(c.path = ? OR c.path LIKE ? ESCAPE '\\')"}
ORDER BY c.seq DESC LIMIT 10000`,
    params: target === '/' ? [] : [target, escapeLike(target)],
  })
  const out: DeletedEntry[] = []
  const seen = new Set<string>()
  for (const r of rows) {
    if (out.length >= limit) break
    if (seen.has(r.path)) continue
    seen.add(r.path)
    if (!visible(r.path) || (await exists(r.path))) continue
    out.push({
      path: r.path,
      seq: r.seq,
      at: Math.floor(r.at_us / 1000),
      op: r.op,
      sessionId: r.session_id,
      toolCallId: r.tool_call_id,
      recoverable: await recoverableFrom(q, r.path, r),
    })
  }
  return out
}
