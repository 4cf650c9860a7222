import { randomBytes } from 'node:crypto'
import { pipeline } from 'node:stream/promises'
import {
  AgentFsError,
  corruptError,
  type Executor,
  joinPath,
  parentPath,
  type Queryable,
  undefinedIfAbsent,
} from '@agentfs/core'
import { compareCodePoints, type Dirent, type FileSystem } from '@agentfs/fs'
import { typeOf } from './diff.js'
import { strictTarget } from './host-fs.js'

/**
 * What a commit replaced on the host, kept so the commit can be taken back: for every path the
 * commit changes, the host's entry before it (a file's bytes, a link's target, a directory's
 * mode, or nothing) and, once the commit finished, the host's version token after it.
 */
const COMMITS = 'agentfs_overlay_undo_commit'
const ENTRIES = 'agentfs_overlay_undo_entry'
const DATA = 'agentfs_overlay_undo_data'
/** Paths the commit merged: the host had changed them, so undo leaves their base state stale. */
const MERGED = 'agentfs_overlay_undo_merged'
const DDL = [
  `CREATE TABLE IF NOT EXISTS ${COMMITS} (
    id TEXT PRIMARY KEY,
    sealed INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS ${ENTRIES} (
    id TEXT NOT NULL,
    path TEXT NOT NULL,
    top INTEGER NOT NULL,
    type TEXT NOT NULL,
    mode INTEGER,
    atime REAL,
    mtime REAL,
    target TEXT,
    after_type TEXT,
    after_token TEXT,
    PRIMARY KEY (id, path)
  )`,
  `CREATE TABLE IF NOT EXISTS ${DATA} (
    id TEXT NOT NULL,
    path TEXT NOT NULL,
    idx INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (id, path, idx)
  )`,
  `CREATE TABLE IF NOT EXISTS ${MERGED} (
    id TEXT NOT NULL,
    path TEXT NOT NULL,
    PRIMARY KEY (id, path)
  )`,
]
const TYPES = ['absent', 'file', 'directory', 'symlink'] as const
type EntryType = (typeof TYPES)[number]
const CHUNK = 256 * 1024
const TEMP_PREFIX = '.agentfs-undo-'

interface Entry {
  readonly path: string
  readonly top: number
  readonly type: EntryType
  readonly mode: number | null
  readonly atime: number | null
  readonly mtime: number | null
  readonly target: string | null
  readonly after_type: EntryType | null
  readonly after_token: string | null
}

/** The host changed since the commit under paths undo would overwrite; nothing was undone. */
export class UndoConflictError extends AgentFsError<'CONFLICT'> {
  readonly conflicts: readonly { path: string; reason: string }[]

  constructor(conflicts: readonly { path: string; reason: string }[]) {
    super(
      'CONFLICT',
      `The host changed since the commit under ${conflicts.length} path(s) (${conflicts
        .slice(0, 5)
        .map((c) => `${c.path}: ${c.reason}`)
        .join(
          '; ',
        )}); nothing was undone. Move those changes aside (or keep the commit and restore files by hand)`,
    )
    this.conflicts = conflicts
  }

  override get name(): string {
    return 'UndoConflictError'
  }
}

/** What `undoCommit` did. */
export interface UndoCommitResult {
  /** Paths the host has again as before the commit (removed, rewritten or remade). */
  readonly restored: readonly string[]
  /**
   * The host's version token of each path undo remade: the overlay's base state moves to it.
   * Not for paths the commit merged: the host had changed those since the overlay copied them,
   * so the next commit sees that change again (and merges it, or refuses).
   */
  readonly tokens: ReadonlyMap<string, string>
}

async function tableExists(q: Executor, name: string): Promise<boolean> {
  const { rows } = await q.execute({
    sql: "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?",
    params: [name],
  })
  return rows.length > 0
}

/**
 * Records, in the commit's journal transaction and before the first host change, what the host
 * has at each path the plan touches (and below each directory the plan removes or replaces).
 */
export async function recordUndo(
  tx: Executor,
  target: FileSystem,
  id: string,
  paths: readonly string[],
  removes: ReadonlySet<string>,
  merged: ReadonlySet<string> = new Set(),
): Promise<void> {
  for (const sql of DDL) await tx.execute({ sql })
  for (const table of [ENTRIES, DATA, MERGED])
    await tx.execute({ sql: `DELETE FROM ${table} WHERE id = ?`, params: [id] })
  for (const path of merged)
    await tx.execute({ sql: `INSERT INTO ${MERGED} (id, path) VALUES (?, ?)`, params: [id, path] })
  await tx.execute({
    sql: `INSERT OR REPLACE INTO ${COMMITS} (id, sealed, created_at) VALUES (?, 0, ?)`,
    params: [id, Date.now()],
  })
  const seen = new Map<string, EntryType>()
  const keep = async (path: string, top: boolean): Promise<EntryType> => {
    const already = seen.get(path)
    if (already !== undefined) {
      if (top)
        await tx.execute({
          sql: `UPDATE ${ENTRIES} SET top = 1 WHERE id = ? AND path = ?`,
          params: [id, path],
        })
      return already
    }
    const stats = await target.lstat(path).catch(undefinedIfAbsent)
    const type = stats ? typeOf(stats) : 'absent'
    // A FIFO, socket or device the commit replaces cannot be remade: undo leaves its path empty.
    const kept: EntryType = type === 'other' ? 'absent' : type
    seen.set(path, kept)
    await tx.execute({
      sql: `INSERT INTO ${ENTRIES} (id, path, top, type, mode, atime, mtime, target) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      params: [
        id,
        path,
        top ? 1 : 0,
        kept,
        stats && kept !== 'absent' ? stats.mode & 0o7777 : null,
        stats ? Number(stats.atimeNs) / 1e9 : null,
        stats ? Number(stats.mtimeNs) / 1e9 : null,
        kept === 'symlink' ? await target.readlink(path) : null,
      ],
    })
    if (kept === 'file') {
      let idx = 0
      let pending: Buffer[] = []
      let size = 0
      const flush = async () => {
        if (size === 0) return
        await tx.execute({
          sql: `INSERT INTO ${DATA} (id, path, idx, data) VALUES (?, ?, ?, ?)`,
          params: [id, path, idx++, Buffer.concat(pending)],
        })
        pending = []
        size = 0
      }
      for await (const chunk of target.createReadStream(path)) {
        const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string)
        pending.push(bytes)
        size += bytes.length
        if (size >= CHUNK) await flush()
      }
      await flush()
    }
    return kept
  }
  for (const path of paths) {
    const type = await keep(path, true)
    if (type !== 'directory' || !removes.has(path)) continue
    const below = (await target.readdir(path, { recursive: true, withFileTypes: true })) as Dirent[]
    for (const entry of below) await keep(joinPath(entry.parentPath, entry.name), false)
  }
}

/** After the last step: the host's version of every path, so undo can see later changes. */
export async function sealUndo(q: Queryable, target: FileSystem): Promise<void> {
  if (!(await tableExists(q, COMMITS))) return
  const { rows } = await q.execute<{ id: string }>({
    sql: `SELECT id FROM ${COMMITS} WHERE sealed = 0`,
  })
  for (const { id } of rows) {
    const entries = await q.execute<{ path: string }>({
      sql: `SELECT path FROM ${ENTRIES} WHERE id = ? AND top = 1`,
      params: [id],
    })
    const after: [string, EntryType | null, string | null][] = []
    for (const { path } of entries.rows) {
      const stats = await target.lstat(path).catch(undefinedIfAbsent)
      const type = stats ? typeOf(stats) : 'absent'
      after.push([path, type === 'other' ? 'absent' : type, stats?.version ?? null])
    }
    await q.transaction(async (tx) => {
      for (const [path, type, token] of after)
        await tx.execute({
          sql: `UPDATE ${ENTRIES} SET after_type = ?, after_token = ? WHERE id = ? AND path = ?`,
          params: [type, token, id, path],
        })
      await tx.execute({ sql: `UPDATE ${COMMITS} SET sealed = 1 WHERE id = ?`, params: [id] })
    })
  }
}

/** Whether a finished commit recorded under `id` can be taken back on the host. */
export async function commitUndoable(q: Executor, id: string): Promise<boolean> {
  if (!(await tableExists(q, COMMITS))) return false
  const { rows } = await q.execute({
    sql: `SELECT 1 FROM ${COMMITS} WHERE id = ? AND sealed = 1`,
    params: [id],
  })
  return rows.length > 0
}

async function loadEntries(q: Executor, id: string): Promise<Entry[]> {
  const { rows } = await q.execute<Entry>({
    sql: `SELECT path, top, type, mode, atime, mtime, target, after_type, after_token FROM ${ENTRIES} WHERE id = ?`,
    params: [id],
  })
  for (const row of rows) {
    const bad =
      typeof row.path !== 'string' ||
      !row.path.startsWith('/') ||
      row.path === '/' ||
      row.path
        .split('/')
        .slice(1)
        .some((part) => part === '' || part === '.' || part === '..') ||
      !TYPES.includes(row.type) ||
      (row.top === 1 && (row.after_type === null || !TYPES.includes(row.after_type)))
    if (bad)
      throw corruptError('undo', JSON.stringify(row.path), `${ENTRIES} holds a row undo cannot use`)
  }
  return rows
}

/**
 * Takes a finished commit back on the host: every path the commit changed gets the entry it
 * had before (bytes, mode, times, link target) or goes away again. Refused, changing nothing,
 * when the host changed since the commit under any of those paths (`UndoConflictError` lists
 * them). Files are rewritten atomically (a temporary name, then a rename); links are never
 * followed. The record is dropped once the host is restored.
 */
export async function undoCommit(
  q: Queryable,
  baseTarget: FileSystem,
  id: string,
): Promise<UndoCommitResult> {
  const target = strictTarget(baseTarget)
  if (!(await commitUndoable(q, id)))
    throw new AgentFsError(
      'NOT_FOUND',
      `no finished commit ${JSON.stringify(id)} is recorded, so there is nothing of it to take back on the host`,
    )
  const entries = await loadEntries(q, id)
  const top = entries.filter((e) => e.top === 1)
  const known = new Set(top.map((e) => e.path))
  const conflicts: { path: string; reason: string }[] = []
  const reported = new Set<string>()
  for (const entry of top) {
    const now = await target.lstat(entry.path).catch(undefinedIfAbsent)
    let created = 0
    if (now?.isDirectory() && entry.after_type === 'directory' && entry.type !== 'directory') {
      // A directory the commit made goes away again: it must hold only what the commit made.
      const below = (await target.readdir(entry.path, {
        recursive: true,
        withFileTypes: true,
      })) as Dirent[]
      for (const d of below) {
        const path = joinPath(d.parentPath, d.name)
        if (known.has(path)) continue
        created++
        if (reported.has(path)) continue
        reported.add(path)
        conflicts.push({ path, reason: 'created since the commit' })
      }
    }
    // A directory whose only change is what was created in it is named by those paths.
    if ((now?.version ?? null) !== entry.after_token && created === 0)
      conflicts.push({
        path: entry.path,
        reason: !now
          ? 'removed since the commit'
          : entry.after_token
            ? 'changed since the commit'
            : 'created since the commit',
      })
  }
  if (conflicts.length > 0) throw new UndoConflictError(conflicts)

  // What the commit made and the host did not have (or had as another type) goes, deepest first.
  const removals = top
    .filter((e) => e.after_type !== 'absent' && (e.type !== e.after_type || e.type === 'symlink'))
    .sort((a, b) => compareCodePoints(b.path, a.path))
  for (const entry of removals) {
    if (entry.after_type === 'directory') await target.rmdir(entry.path)
    else await target.rm(entry.path, { force: true })
  }
  // Then what the host had comes back, parents before children.
  const restores = entries
    .filter((e) => e.type !== 'absent')
    .sort((a, b) => compareCodePoints(a.path, b.path))
  const tokens = new Map<string, string>()
  // A record made before merges existed has no table of them.
  const mergeTable = await tableExists(q, MERGED)
  const merged = new Set(
    mergeTable
      ? (
          await q.execute<{ path: string }>({
            sql: `SELECT path FROM ${MERGED} WHERE id = ?`,
            params: [id],
          })
        ).rows.map((r) => r.path)
      : [],
  )
  for (const entry of restores) {
    if (entry.type === 'directory') {
      const now = await target.lstat(entry.path).catch(undefinedIfAbsent)
      if (!now) await target.mkdir(entry.path)
      await target.chmod(entry.path, entry.mode ?? 0o755)
    } else if (entry.type === 'symlink') {
      await target.rm(entry.path, { force: true })
      await target.symlink(entry.target ?? '', entry.path)
    } else {
      await restoreFile(q, target, id, entry)
    }
    const after = await target.lstat(entry.path)
    if (!merged.has(entry.path)) tokens.set(entry.path, after.version)
  }
  await q.transaction(async (tx) => {
    for (const table of mergeTable ? [DATA, ENTRIES, MERGED, COMMITS] : [DATA, ENTRIES, COMMITS])
      await tx.execute({ sql: `DELETE FROM ${table} WHERE id = ?`, params: [id] })
  })
  return {
    restored: [...new Set([...removals, ...restores].map((e) => e.path))].sort(compareCodePoints),
    tokens,
  }
}

/** A kept file back at its path: written beside it, then renamed over whatever is there. */
async function restoreFile(q: Executor, target: FileSystem, id: string, entry: Entry) {
  const temporary = joinPath(
    parentPath(entry.path),
    `${TEMP_PREFIX}${randomBytes(6).toString('hex')}`,
  )
  const mode = entry.mode ?? 0o644
  try {
    await pipeline(
      chunksOf(q, id, entry.path),
      target.createWriteStream(temporary, { mode, flags: 'wx' }),
    )
    await target.chmod(temporary, mode)
    await target.utimes(temporary, entry.atime ?? 0, entry.mtime ?? 0)
    await target.rename(temporary, entry.path)
  } catch (error) {
    await target.rm(temporary, { force: true }).catch(() => undefined)
    throw error
  }
}

async function* chunksOf(q: Executor, id: string, path: string): AsyncGenerator<Buffer> {
  for (let idx = 0; ; idx++) {
    const { rows } = await q.execute<{ data: Uint8Array }>({
      sql: `SELECT data FROM ${DATA} WHERE id = ? AND path = ? AND idx = ?`,
      params: [id, path, idx],
    })
    const row = rows[0]
    if (!row) return
    yield Buffer.from(row.data.buffer, row.data.byteOffset, row.data.byteLength)
  }
}

/** Moves the overlay's recorded base versions of the paths undo remade to their new tokens. */
export async function rebaseOverlayTokens(
  q: Queryable,
  tokens: ReadonlyMap<string, string>,
): Promise<void> {
  await q.transaction(async (tx) => {
    for (const [path, token] of tokens) {
      // The bytes undo remade are the ancestor's: it stays the ancestor under the new token.
      await tx.execute({
        sql: 'INSERT OR IGNORE INTO agentfs_overlay_base_content (path, token, data) SELECT c.path, ?, c.data FROM agentfs_overlay_base_content AS c JOIN agentfs_overlay_base_state AS s ON s.path = c.path AND s.token = c.token WHERE c.path = ?',
        params: [token, path],
      })
      await tx.execute({
        sql: 'UPDATE agentfs_overlay_base_state SET token = ? WHERE path = ?',
        params: [token, path],
      })
    }
  })
}
