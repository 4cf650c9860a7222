import {
  badEntryName,
  type Executor,
  explicitId,
  ID_TABLES,
  type IdTable,
  idColumn,
  placeholders,
  type Queryable,
  ROOT_INO,
  SLOT_SPAN,
  type SlotAllocator,
  unreachableInodes,
} from '@agentfs/core'
import { mergeSwap } from './merge-swap.js'
import { conflictName, idLabel, type ReplacedContent } from './rules.js'
import type { PendingSwap, PushedKv } from './state.js'

/** One conflict the sync layer resolved (also a row of `agentfs_sync_conflict`, for everyone). */
export interface SyncConflict {
  /** The client that resolved it (its slot) and when (ms since the epoch). */
  readonly slot: number
  readonly atMs: number
  /**
   * `name`: two entries took one name, this client's became a conflict copy. `write`: another
   * client replaced a file this client replaced too; this client's bytes are a conflict copy
   * (the detail names the regions both changed). `merged`: the same, for a text file both
   * changed in different places: the two were merged line by line, the last synced version
   * as the ancestor (a `write` change with a message records it).
   * `parent-gone`: an entry's directory was removed elsewhere; the entry moved to `/`. `kv`:
   * another client's later write of a key won. `kv-deleted`: a key this client wrote is gone
   * (deleted later by another client, or refused by the server). `target-gone`: a link this client made to a file another client deleted
   * first was removed. `cycle`: directories moved into each other on different clients; one
   * moved to `/`. `orphan-dropped`: an inode no entry names any more was removed.
   * `push-failed`: a push failed part-way; the pull and this reconciliation followed.
   * `refused`: rows a peer sent that no honest client makes (ids in this client's slot, a
   * root that is not a directory, a name no entry can have, a second entry of a directory)
   * were removed or repaired, as fsck would.
   */
  readonly kind:
    | 'refused'
    | 'name'
    | 'write'
    | 'merged'
    | 'parent-gone'
    | 'target-gone'
    | 'cycle'
    | 'kv'
    | 'kv-deleted'
    | 'orphan-dropped'
    | 'push-failed'
  /** The path (or kv key) concerned. */
  readonly path: string
  /** Where this client's version now is, or what won. */
  readonly detail: string
}

/** Created with the schema on a synced database (the conflict log everyone can read). */
export const SYNC_TABLES = `CREATE TABLE IF NOT EXISTS agentfs_sync_conflict (
  slot INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  at_ms INTEGER NOT NULL,
  kind TEXT NOT NULL,
  path TEXT NOT NULL,
  detail TEXT NOT NULL,
  ref INTEGER,
  PRIMARY KEY (slot, seq)
)`

/** Longest directory chain followed when naming a path. */
const MAX_DEPTH = 4096

async function pathOf(q: Executor, parent: number, name: string): Promise<string> {
  const parts = [name]
  let ino = parent
  for (let depth = 0; ino !== ROOT_INO && depth < MAX_DEPTH; depth++) {
    const { rows } = await q.execute<{ parent_ino: number; name: string }>({
      sql: 'SELECT parent_ino, name FROM fs_dentry WHERE ino = ? LIMIT 1',
      params: [ino],
    })
    const up = rows[0]
    if (up === undefined) return `<unreachable>/${parts.reverse().join('/')}`
    parts.push(up.name)
    ino = up.parent_ino
  }
  return `/${parts.reverse().join('/')}`
}

/** Cycles broken in one reconciliation, at most (each repair breaks one). */
const MAX_CYCLES = 1000
const IN_BATCH = 500

interface Entry {
  readonly id: number
  readonly name: string
  readonly parent_ino: number
  readonly ino: number
}

/**
 * An entry on a cycle of directories (moved into each other on different clients), the one
 * with the smallest id on that cycle; undefined when there is none. Entries below a cycle are
 * unreachable too, but moving one of them would not break it: the walk follows parents from an
 * unreachable directory until it comes back to an entry it has seen.
 */
async function cycleEntry(q: Queryable): Promise<Entry | undefined> {
  const lost = new Set(await unreachableInodes(q))
  if (lost.size === 0) return undefined
  const { rows } = await q.execute<Entry>({
    sql: `SELECT d.id AS id, d.name AS name, d.parent_ino AS parent_ino, d.ino AS ino FROM fs_dentry AS d JOIN fs_inode AS i ON i.ino = d.ino
WHERE (i.mode & 61440) = 16384 ORDER BY d.id`,
  })
  // A directory has one entry: its entry by inode number.
  const byIno = new Map(rows.filter((row) => lost.has(row.ino)).map((row) => [row.ino, row]))
  for (const start of byIno.values()) {
    const path: Entry[] = []
    const seen = new Map<number, number>()
    for (let at: Entry | undefined = start; at !== undefined; at = byIno.get(at.parent_ino)) {
      const index = seen.get(at.id)
      if (index !== undefined)
        return path.slice(index).reduce((min, entry) => (entry.id < min.id ? entry : min))
      seen.set(at.id, path.length)
      path.push(at)
    }
  }
  return undefined
}

/** Moves an entry to the root under its conflict name; returns the new path. */
async function moveToRoot(q: Executor, entry: { id: number; name: string }): Promise<string> {
  const name = conflictName(entry.name, entry.id)
  await q.execute({
    sql: 'UPDATE fs_dentry SET parent_ino = ?, name = ? WHERE id = ?',
    params: [ROOT_INO, name, entry.id],
  })
  return `/${name}`
}

/**
 * Appends conflicts to `agentfs_sync_conflict` under `slot`, numbered after its last entry (no
 * other client writes that slot's rows). Run it inside a transaction.
 */
export async function logConflicts(
  q: Executor,
  slot: number,
  entries: ReadonlyArray<SyncConflict & { ref?: number | undefined }>,
): Promise<void> {
  const { rows } = await q.execute<{ top: number | null }>({
    sql: 'SELECT max(seq) AS top FROM agentfs_sync_conflict WHERE slot = ?',
    params: [slot],
  })
  let seq = rows[0]?.top ?? 0
  for (const entry of entries)
    await q.execute({
      sql: 'INSERT INTO agentfs_sync_conflict (slot, seq, at_ms, kind, path, detail, ref) VALUES (?, ?, ?, ?, ?, ?, ?)',
      params: [slot, ++seq, entry.atMs, entry.kind, entry.path, entry.detail, entry.ref ?? null],
    })
}

/** What one reconciliation found and did. */
export interface Reconciliation {
  readonly conflicts: SyncConflict[]
  /** True when it changed the database (the changes are pushed next). */
  readonly changed: boolean
}

/**
 * After a pull: turns what the conflict rules left behind into visible, consistent state, in
 * one transaction. Each client repairs only its own rows (its slot), so clients never fight
 * over a repair; counts that anyone may repair (nlink) are absolute and agree.
 */
export async function reconcile(
  db: Queryable,
  slot: number,
  pushed: {
    swaps: readonly PendingSwap[]
    kv: readonly PushedKv[]
    /** What each write in `swaps` started from, when the push saw it (see `ancestorsOf`). */
    ancestors?: ReadonlyMap<number, ReplacedContent>
  },
  now: () => number = Date.now,
  allocator?: Pick<SlotAllocator, 'issued'>,
): Promise<Reconciliation> {
  const low = slot * SLOT_SPAN
  const high = low + SLOT_SPAN - 1
  return db.transaction(async (q) => {
    let changed = false
    const logged = new Set(
      (
        await q.execute<{ ref: number }>({
          sql: 'SELECT ref FROM agentfs_sync_conflict WHERE slot = ? AND ref IS NOT NULL',
          params: [slot],
        })
      ).rows.map((row) => row.ref),
    )
    /** The conflicts found, with the entry (or inode) each is about, for the log. */
    const notes: Array<SyncConflict & { ref?: number | undefined }> = []
    const note = (kind: SyncConflict['kind'], path: string, detail: string, ref?: number) => {
      notes.push({ slot, atMs: now(), kind, path, detail, ref })
    }

    // 0. What a hostile (or broken) peer can send that no honest client makes: validated like a
    //    hostile database, before anything else reads the tree.
    if (await refuseHostileRows(q, low, high, allocator, note)) changed = true

    // 1. Entries the server renamed because another client's entry held the name.
    const renamed = await q.execute<{ id: number; parent_ino: number; name: string }>({
      sql: "SELECT id, parent_ino, name FROM fs_dentry WHERE id BETWEEN ? AND ? AND name LIKE '% (conflict %)'",
      params: [low, high],
    })
    for (const row of renamed.rows) {
      if (logged.has(row.id) || !row.name.endsWith(` (conflict ${idLabel(row.id)})`)) continue
      const path = await pathOf(q, row.parent_ino, row.name)
      note('name', path, `another client's entry holds the name; this one is ${path}`, row.id)
    }

    // 2. Entries whose directory another client removed: moved to the root.
    const stranded = await q.execute<{ id: number; name: string }>({
      sql: 'SELECT id, name FROM fs_dentry AS d WHERE id BETWEEN ? AND ? AND NOT EXISTS (SELECT 1 FROM fs_inode AS i WHERE i.ino = d.parent_ino)',
      params: [low, high],
    })
    for (const row of stranded.rows) {
      const path = await moveToRoot(q, row)
      changed = true
      note(
        'parent-gone',
        path,
        `its directory was removed by another client; moved to ${path}`,
        row.id,
      )
    }

    // 3. Directories moved into each other on two clients form a cycle no path reaches. Any
    //    client breaks it the same way (the entry with the smallest id moves to /), so clients
    //    that repair it concurrently write the same values.
    for (let guard = 0; guard < MAX_CYCLES; guard++) {
      const loop = await cycleEntry(q)
      if (loop === undefined) break
      const path = await moveToRoot(q, loop)
      changed = true
      note(
        'cycle',
        path,
        `directories were moved into each other on different clients; this one moved to ${path}`,
        loop.id,
      )
    }

    // 4. This client's links to inodes another client deleted before the links arrived.
    const dangling = await q.execute<{ id: number; parent_ino: number; name: string }>({
      sql: 'SELECT id, parent_ino, name FROM fs_dentry AS d WHERE id BETWEEN ? AND ? AND NOT EXISTS (SELECT 1 FROM fs_inode AS i WHERE i.ino = d.ino)',
      params: [low, high],
    })
    for (const row of dangling.rows) {
      const path = await pathOf(q, row.parent_ino, row.name)
      await q.execute({ sql: 'DELETE FROM fs_dentry WHERE id = ?', params: [row.id] })
      changed = true
      note(
        'target-gone',
        path,
        'another client deleted the file before this link to it arrived; the link is removed',
        row.id,
      )
    }

    // 5. This client's replaced files that lost to another client's replacement.
    const swapped = pushed.swaps.map((swap) => swap.ino)
    const alive = new Set<number>()
    const named = new Set<number>()
    for (let i = 0; i < swapped.length; i += IN_BATCH) {
      const ids = swapped.slice(i, i + IN_BATCH)
      const marks = placeholders(ids.length)
      for (const { ino } of (
        await q.execute<{ ino: number }>({
          sql: `SELECT ino FROM fs_inode WHERE ino IN (${marks})`,
          params: ids,
        })
      ).rows)
        alive.add(ino)
      for (const { ino } of (
        await q.execute<{ ino: number }>({
          sql: `SELECT DISTINCT ino FROM fs_dentry WHERE ino IN (${marks})`,
          params: ids,
        })
      ).rows)
        named.add(ino)
    }
    for (const swap of pushed.swaps) {
      if (!alive.has(swap.ino) || named.has(swap.ino)) continue
      named.add(swap.ino)
      // Text both clients rewrote: merged against the last synced version where they changed
      // different lines.
      const where = await pathOf(q, swap.parent, swap.name)
      const merge = await mergeSwap(q, swap, pushed.ancestors?.get(swap.ino), where, now())
      if (merge.merged) {
        changed = true
        note(
          'merged',
          where,
          "another client rewrote the file too; both clients' changes were merged line by line (the ancestor: the last synced version)",
        )
        continue
      }
      const parent =
        (
          await q.execute<{ n: number }>({
            sql: 'SELECT count(*) AS n FROM fs_inode WHERE ino = ?',
            params: [swap.parent],
          })
        ).rows[0]!.n > 0
          ? swap.parent
          : ROOT_INO
      const id = (await explicitId(q, 'fs_dentry'))!
      const name = conflictName(swap.name, id)
      await q.execute({
        sql: 'INSERT INTO fs_dentry (id, name, parent_ino, ino) VALUES (?, ?, ?, ?)',
        params: [id, name, parent, swap.ino],
      })
      changed = true
      const path = await pathOf(q, parent, name)
      const regions = merge.conflicts?.length
        ? `; ${merge.conflicts.length} region(s) changed on both sides (this client's lines ${merge.conflicts
            .slice(0, 5)
            .map((h) => h.oursLine)
            .join(', ')}${merge.conflicts.length > 5 ? ', …' : ''})`
        : merge.why
          ? `; not merged: ${merge.why}`
          : ''
      note(
        'write',
        where,
        `another client replaced the file first; this client's version is ${path}${regions}`,
        id,
      )
    }

    // 6. Chunks and targets of inodes that no longer exist; this client's unnamed inodes.
    for (const table of ['fs_data', 'fs_symlink']) {
      const gone = await q.execute({
        sql: `DELETE FROM ${table} WHERE ino NOT IN (SELECT ino FROM fs_inode)`,
      })
      if (gone.changes > 0) changed = true
    }
    const unnamed = await q.execute<{ ino: number }>({
      sql: 'SELECT ino FROM fs_inode WHERE ino BETWEEN ? AND ? AND ino NOT IN (SELECT ino FROM fs_dentry)',
      params: [low, high],
    })
    for (const { ino } of unnamed.rows) {
      for (const table of ['fs_data', 'fs_symlink', 'fs_inode'])
        await q.execute({ sql: `DELETE FROM ${table} WHERE ino = ?`, params: [ino] })
      changed = true
      note(
        'orphan-dropped',
        `inode ${ino}`,
        'every name of it was removed (on different clients); dropped',
      )
    }

    // 7. Link counts, from the entries (replays of absolute counts lose increments).
    // One pass over the entries (grouped), not a count per inode: fs_dentry has no index on ino.
    const wrong = await q.execute<{ ino: number; n: number }>({
      sql: `SELECT i.ino AS ino, c.n AS n FROM fs_inode AS i JOIN (SELECT ino, count(*) AS n FROM fs_dentry GROUP BY ino) AS c ON c.ino = i.ino
WHERE i.ino <> ${ROOT_INO} AND i.nlink <> c.n`,
    })
    for (const { ino, n } of wrong.rows) {
      await q.execute({ sql: 'UPDATE fs_inode SET nlink = ? WHERE ino = ?', params: [n, ino] })
      changed = true
    }

    // 8. kv writes of this client that another client's write or delete overrode.
    const lastWrites = new Map(pushed.kv.map((write) => [write.key, write]))
    for (const write of lastWrites.values()) {
      const { rows } = await q.execute<{ value: string; updated_at: number }>({
        sql: 'SELECT value, updated_at FROM kv_store WHERE key = ?',
        params: [write.key],
      })
      const now = rows[0]
      if (now === undefined)
        note(
          'kv-deleted',
          write.key,
          'the key is gone: another client deleted it later, or the server refused this write',
        )
      else if (now.value !== write.value)
        note(
          'kv',
          write.key,
          `another client's write (updated_at ${now.updated_at}) won over this client's (updated_at ${write.updatedAt})`,
        )
    }

    if (notes.length > 0) {
      await logConflicts(q, slot, notes)
      changed = true
    }
    return { conflicts: notes.map(({ ref: _ref, ...conflict }) => conflict), changed }
  })
}

/** Deletes the rows of `table` with ids from `from` to `to`; their dependents go with them. */
async function dropIds(q: Executor, table: IdTable, from: number, to: number): Promise<number> {
  const range = `${idColumn(table)} BETWEEN ? AND ?`
  const params = [from, to]
  if (table === 'fs_inode') {
    for (const dependent of ['fs_data', 'fs_symlink'])
      await q.execute({ sql: `DELETE FROM ${dependent} WHERE ino BETWEEN ? AND ?`, params })
    await q.execute({ sql: 'DELETE FROM fs_dentry WHERE ino BETWEEN ? AND ?', params })
  }
  if (table === 'tool_calls')
    await q.execute({
      sql: 'DELETE FROM agentfs_tool_call_meta WHERE id BETWEEN ? AND ?',
      params,
    })
  return (await q.execute({ sql: `DELETE FROM ${table} WHERE ${range}`, params })).changes
}

/** Most entries with impossible names repaired in one reconciliation (the rest: the next). */
const MAX_BAD_NAMES = 10_000

/**
 * Step 0 of {@link reconcile}: rows of this client's slot it never handed out (a peer taking
 * its last id would exhaust it; its next id, collide with it) are deleted; a root that is not a
 * directory becomes one again; names no entry can have are renamed; a directory named by more
 * than one entry (a loop, a hard link) keeps one. Each repair is noted as `refused`, and is the
 * same on every client, so clients that repair concurrently agree.
 */
async function refuseHostileRows(
  q: Executor,
  low: number,
  high: number,
  allocator: Pick<SlotAllocator, 'issued'> | undefined,
  note: (kind: SyncConflict['kind'], path: string, detail: string, ref?: number) => void,
): Promise<boolean> {
  let changed = false
  for (const table of ID_TABLES) {
    const issued = allocator?.issued(table)
    if (issued === undefined || issued >= high) continue
    const dropped = await dropIds(q, table, Math.max(issued, low) + 1, high)
    if (dropped > 0) {
      changed = true
      note(
        'refused',
        table,
        `a peer sent ${dropped} row(s) of ${table} with ids of this client's slot (above ${issued}, the last it made); removed`,
      )
    }
  }
  const root = await q.execute<{ mode: number }>({
    sql: 'SELECT mode FROM fs_inode WHERE ino = ?',
    params: [ROOT_INO],
  })
  const rootMode = root.rows[0]?.mode
  if (rootMode === undefined) {
    const t = Math.floor(Date.now() / 1000)
    await q.execute({
      sql: 'INSERT INTO fs_inode (ino, mode, nlink, uid, gid, size, atime, mtime, ctime) VALUES (?, ?, 1, 0, 0, 0, ?, ?, ?)',
      params: [ROOT_INO, 0o040755, t, t, t],
    })
  } else if ((rootMode & 0o170000) !== 0o040000) {
    await q.execute({
      sql: 'UPDATE fs_inode SET mode = ?, size = 0 WHERE ino = ?',
      params: [0o040000 | (rootMode & 0o7777), ROOT_INO],
    })
    for (const table of ['fs_data', 'fs_symlink'])
      await q.execute({ sql: `DELETE FROM ${table} WHERE ino = ?`, params: [ROOT_INO] })
  }
  if (rootMode === undefined || (rootMode & 0o170000) !== 0o040000) {
    changed = true
    note(
      'refused',
      '/',
      'a peer removed the root or made it another kind of file; it is a directory again',
    )
  }
  // The root is no one's entry.
  const rootNamed = await q.execute({
    sql: 'DELETE FROM fs_dentry WHERE ino = ?',
    params: [ROOT_INO],
  })
  if (rootNamed.changes > 0) {
    changed = true
    note('refused', '/', `a peer gave the root ${rootNamed.changes} entry(ies); removed`)
  }
  const bad = await q.execute<{ id: number; name: unknown }>({
    sql: `SELECT id, name FROM fs_dentry WHERE typeof(name) <> 'text' OR name IN ('', '.', '..') OR instr(name, '/') > 0 OR instr(name, char(0)) > 0 OR length(CAST(name AS BLOB)) > 255 ORDER BY id LIMIT ${MAX_BAD_NAMES}`,
  })
  for (const { id, name } of bad.rows) {
    const why = badEntryName(typeof name === 'string' ? name : String(name)) ?? 'it is not text'
    const renamed = conflictName('refused-name', id)
    await q.execute({ sql: 'UPDATE fs_dentry SET name = ? WHERE id = ?', params: [renamed, id] })
    changed = true
    note(
      'refused',
      renamed,
      `a peer sent an entry whose name cannot be a path component (${why}); renamed`,
      id,
    )
  }
  // A directory has one entry: the one its creator made (same slot as the inode), else the
  // oldest; the others (loops, hard links to directories) are removed.
  const shared = await q.execute<{ ino: number }>({
    sql: `SELECT d.ino AS ino FROM fs_dentry AS d JOIN fs_inode AS i ON i.ino = d.ino
WHERE (i.mode & 61440) = 16384 GROUP BY d.ino HAVING count(*) > 1`,
  })
  for (const { ino } of shared.rows) {
    const { rows } = await q.execute<{ id: number }>({
      sql: 'SELECT id FROM fs_dentry WHERE ino = ? ORDER BY id',
      params: [ino],
    })
    const slotOf = (id: number) => Math.floor(id / SLOT_SPAN)
    const keep = rows.find((r) => slotOf(r.id) === slotOf(ino)) ?? rows[0]!
    for (const { id } of rows) {
      if (id === keep.id) continue
      await q.execute({ sql: 'DELETE FROM fs_dentry WHERE id = ?', params: [id] })
      changed = true
      note(
        'refused',
        `inode ${ino}`,
        'a peer gave a directory a second entry (a loop or a hard link); removed',
        id,
      )
    }
  }
  return changed
}
