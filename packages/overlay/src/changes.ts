import { randomBytes } from 'node:crypto'
import { pipeline } from 'node:stream/promises'
import {
  AgentFsError,
  joinPath,
  parentPath,
  type Queryable,
  ROOT_INO,
  undefinedIfAbsent,
} from '@agentfs/core'
import type { Dirent, FileSystem, Stats } from '@agentfs/fs'
import { createTwoFilesPatch } from 'diff'
import type { OverlayFs } from './overlay-fs.js'

/** One difference between the overlay and its base. */
export interface OverlayChange {
  readonly path: string
  readonly kind: 'added' | 'modified' | 'deleted'
  readonly type: 'file' | 'directory' | 'symlink' | 'other'
  /** Unified diff, for text files up to 1 MiB. */
  readonly diff?: string
}

/** The base changed since the overlay copied or hid an entry; nothing was committed. */
export class OverlayConflictError extends AgentFsError<'CONFLICT'> {
  readonly conflicts: readonly { path: string; reason: string }[]

  constructor(conflicts: readonly { path: string; reason: string }[]) {
    super(
      'CONFLICT',
      `The base changed under ${conflicts.length} overlay path(s) (${conflicts
        .slice(0, 5)
        .map((c) => `${c.path}: ${c.reason}`)
        .join('; ')}); nothing was committed. Review the base, then discard or redo the changes`,
    )
    this.conflicts = conflicts
  }

  override get name(): string {
    return 'OverlayConflictError'
  }
}

const typeOf = (s: Stats): OverlayChange['type'] =>
  s.isFile() ? 'file' : s.isDirectory() ? 'directory' : s.isSymbolicLink() ? 'symlink' : 'other'

const TEXT_LIMIT = 1024 * 1024
const isText = (bytes: Buffer) => !bytes.subarray(0, 8192).includes(0)

async function sameContent(
  a: FileSystem,
  b: FileSystem,
  path: string,
  size: number,
): Promise<boolean> {
  if (size <= 64 * 1024 * 1024)
    return Buffer.compare(await a.readFile(path), await b.readFile(path)) === 0
  const ha = await a.open(path, 'r')
  const hb = await b.open(path, 'r')
  try {
    const x = Buffer.allocUnsafe(1 << 20)
    const y = Buffer.allocUnsafe(1 << 20)
    for (let position = 0; position < size; position += 1 << 20) {
      const r1 = await ha.read(x, 0, x.length, position)
      const r2 = await hb.read(y, 0, y.length, position)
      if (
        r1.bytesRead !== r2.bytesRead ||
        Buffer.compare(x.subarray(0, r1.bytesRead), y.subarray(0, r2.bytesRead)) !== 0
      )
        return false
    }
    return true
  } finally {
    await ha.close()
    await hb.close()
  }
}

async function textDiff(
  overlay: OverlayFs,
  path: string,
  before: Stats | undefined,
  after: Stats | undefined,
) {
  if (
    (before && (!before.isFile() || before.size > TEXT_LIMIT)) ||
    (after && (!after.isFile() || after.size > TEXT_LIMIT))
  )
    return undefined
  const old = before ? await overlay.base.readFile(path) : Buffer.alloc(0)
  const now = after ? await overlay.delta.readFile(path) : Buffer.alloc(0)
  if (!isText(old) || !isText(now)) return undefined
  return createTwoFilesPatch(
    before ? `a${path}` : '/dev/null',
    after ? `b${path}` : '/dev/null',
    old.toString('utf8'),
    now.toString('utf8'),
  )
}

/** What the overlay changed relative to its base: added, modified and deleted entries. */
export async function diffOverlay(overlay: OverlayFs, q: Queryable): Promise<OverlayChange[]> {
  const changes: OverlayChange[] = []
  const entries = (await overlay.delta.readdir('/', {
    recursive: true,
    withFileTypes: true,
  })) as Dirent[]
  for (const entry of entries) {
    const path = joinPath(entry.parentPath, entry.name)
    const now = await overlay.delta.lstat(path)
    const before = await overlay.base.lstat(path).catch(undefinedIfAbsent)
    if (!before) {
      changes.push({
        path,
        kind: 'added',
        type: typeOf(now),
        ...withDiff(await textDiff(overlay, path, undefined, now)),
      })
      continue
    }
    let modified = typeOf(before) !== typeOf(now) || (before.mode & 0o7777) !== (now.mode & 0o7777)
    if (!modified && now.isFile())
      modified =
        before.size !== now.size ||
        !(await sameContent(overlay.base, overlay.delta, path, now.size))
    if (!modified && now.isSymbolicLink())
      modified = (await overlay.base.readlink(path)) !== (await overlay.delta.readlink(path))
    if (modified) {
      changes.push({
        path,
        kind: 'modified',
        type: typeOf(now),
        ...withDiff(await textDiff(overlay, path, before, now)),
      })
    }
  }
  const { rows } = await q.execute<{ path: string }>({
    sql: 'SELECT path FROM fs_whiteout ORDER BY path',
  })
  for (const { path } of rows) {
    if (await overlay.delta.lstat(path).catch(undefinedIfAbsent)) continue
    const before = await overlay.base.lstat(path).catch(undefinedIfAbsent)
    if (before)
      changes.push({
        path,
        kind: 'deleted',
        type: typeOf(before),
        ...withDiff(await textDiff(overlay, path, before, undefined)),
      })
  }
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

const withDiff = (diff: string | undefined) => (diff === undefined ? {} : { diff })

/** Deletes the whole delta filesystem and its overlay bookkeeping, in one transaction. */
export async function discardOverlay(q: Queryable): Promise<void> {
  await q.transaction(async (tx) => {
    for (const sql of [
      'DELETE FROM fs_dentry',
      'DELETE FROM fs_data',
      'DELETE FROM fs_symlink',
      `DELETE FROM fs_inode WHERE ino != ${ROOT_INO}`,
      'DELETE FROM fs_whiteout',
      'DELETE FROM fs_origin',
      'DELETE FROM agentfs_overlay_base_state',
    ]) {
      await tx.execute({ sql })
    }
  })
}

/** Result of a commit. */
export interface CommitResult {
  readonly applied: readonly OverlayChange[]
}

/**
 * Applies the delta to a writable target (by default the base itself): deletions first, then
 * directories, links and files — each file written to a temporary name and renamed into place,
 * so every file is replaced atomically. Refuses everything, applying nothing, when the base
 * changed since an entry was copied up or hidden. Afterwards the delta is discarded.
 */
export async function commitOverlay(
  overlay: OverlayFs,
  q: Queryable,
  target: FileSystem,
): Promise<CommitResult> {
  const changes = await diffOverlay(overlay, q)
  const conflicts: { path: string; reason: string }[] = []
  for (const change of changes) {
    const current = await target.lstat(change.path).catch(undefinedIfAbsent)
    const { rows } = await q.execute<{ token: string }>({
      sql: 'SELECT token FROM agentfs_overlay_base_state WHERE path = ?',
      params: [change.path],
    })
    const recorded = rows[0]?.token
    if (change.kind === 'added') {
      if (current && !(current.isDirectory() && change.type === 'directory'))
        conflicts.push({ path: change.path, reason: 'created in the base meanwhile' })
    } else if (!current) {
      conflicts.push({ path: change.path, reason: 'removed from the base meanwhile' })
    } else if (recorded !== undefined && recorded !== current.version) {
      conflicts.push({ path: change.path, reason: 'changed in the base since it was copied' })
    }
  }
  if (conflicts.length > 0) throw new OverlayConflictError(conflicts)

  const deletions = changes
    .filter((c) => c.kind === 'deleted')
    .sort((a, b) => (a.path < b.path ? 1 : -1))
  for (const change of deletions) await target.rm(change.path, { recursive: true, force: true })
  const writes = changes.filter((c) => c.kind !== 'deleted')
  for (const change of writes) {
    const stats = await overlay.delta.lstat(change.path)
    const existing = await target.lstat(change.path).catch(undefinedIfAbsent)
    if (existing && (typeOf(existing) !== change.type || change.type === 'symlink')) {
      await target.rm(change.path, { recursive: true, force: true })
    }
    if (change.type === 'directory') {
      await target.mkdir(change.path, { recursive: true })
      await target.chmod(change.path, stats.mode & 0o7777)
    } else if (change.type === 'symlink') {
      await target.symlink(await overlay.delta.readlink(change.path), change.path)
    } else if (change.type === 'file') {
      const temporary = joinPath(
        parentPath(change.path),
        `.agentfs-commit-${randomBytes(6).toString('hex')}`,
      )
      await pipeline(
        overlay.delta.createReadStream(change.path),
        target.createWriteStream(temporary, { mode: stats.mode & 0o7777 }),
      )
      await target.chmod(temporary, stats.mode & 0o7777)
      await target.utimes(temporary, Number(stats.atimeNs) / 1e9, Number(stats.mtimeNs) / 1e9)
      await target.rename(temporary, change.path)
    }
  }
  await discardOverlay(q)
  return { applied: changes }
}
