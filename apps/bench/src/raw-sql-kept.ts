import { hash as sha256Of, webcrypto } from 'node:crypto'
import type Database from 'better-sqlite3'

/**
 * The rows AgentFS's guarantees add to a change, written by the baseline in plain SQL (the
 * `raw-sql-kept` implementation): the parent directory's mtime and ctime on a create, rename or
 * remove (POSIX), a change-feed row per change (`agentfs_change`: history), a version row per kv
 * write (`agentfs_kv_version`: compare-and-set), the SHA-256 of a file's new content in its feed
 * row (the audit's content hashes) and a metadata row per tool call
 * (`agentfs_tool_call_meta`). Each is the cheapest statement that writes the same row, in the
 * same transaction as the change. Its ratio to raw-sql is the most AgentFS can reach on a
 * workload while keeping those guarantees; AgentFS's ratio to it is the cost of everything else.
 */
export interface KeptRows {
  /**
   * The SHA-256 of a file's new content for its feed row: computed here for small contents,
   * started on the thread pool from 1 MiB (await it after writing the chunks).
   */
  hash(data: Uint8Array): Uint8Array | Promise<Uint8Array>
  /** A file (with its content's hash) or directory (`hash` null) was created under `parent`. */
  created(
    parent: number,
    ino: number,
    path: string,
    size: number,
    sec: number,
    nsec: number,
    hash: Uint8Array | null,
  ): void
  /** A file's content was replaced. */
  written(ino: number, path: string, size: number, hash: Uint8Array): void
  /** An entry moved from `fromParent` to `toParent`. */
  renamed(fromParent: number, toParent: number, ino: number, from: string, to: string): void
  /** A subtree was removed from `parent`. */
  removed(parent: number, ino: number, path: string): void
  /** A kv write: the version row, the value, the feed row, in one transaction. */
  kvSet(key: string, json: string): number
  /** A tool call with its metadata row, in one transaction. */
  toolRecord(name: string, parameters: string, result: string, sec: number): void
}

/** From this size a content is hashed on the thread pool, as AgentFS does. */
const OFF_THREAD = 1024 * 1024

/** Microseconds since the epoch, and the wall clock as seconds and nanoseconds. */
function now(): { us: number; sec: number; nsec: number } {
  const ms = Date.now()
  const sec = Math.floor(ms / 1000)
  return { us: ms * 1000, sec, nsec: (ms - sec * 1000) * 1_000_000 }
}

/**
 * Prepares the statements of {@link KeptRows} on `db` (a database with AgentFS's extension
 * tables); `tx` runs a body in one write transaction.
 */
export function keptRows(db: Database.Database, tx: <T>(body: () => T) => T): KeptRows {
  const feed = db.prepare(
    'INSERT INTO agentfs_change (at_us, op, path, path2, ino, dir_ino, dir2_ino, version, size, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  )
  const dirTimes = db.prepare(
    'UPDATE fs_inode SET mtime = ?, mtime_nsec = ?, ctime = ?, ctime_nsec = ? WHERE ino = ?',
  )
  const version = db
    .prepare<[string, number], number>(
      'INSERT INTO agentfs_kv_version (key, version, updated_us) VALUES (?, 1, ?) ON CONFLICT(key) DO UPDATE SET version = version + 1, updated_us = excluded.updated_us RETURNING version',
    )
    .pluck()
  const value = db.prepare(
    'INSERT INTO kv_store (key, value, created_at, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
  )
  const tool = db.prepare(
    'INSERT INTO tool_calls (name, parameters, result, started_at, completed_at, duration_ms) VALUES (?, ?, ?, ?, ?, ?)',
  )
  const meta = db.prepare(
    'INSERT INTO agentfs_tool_call_meta (id, started_at_ns, completed_at_ns) VALUES (?, ?, ?)',
  )
  const token = (sec: number, nsec: number) => `${sec}${String(nsec).padStart(9, '0')}`
  return {
    hash(data) {
      return data.byteLength >= OFF_THREAD
        ? webcrypto.subtle.digest('SHA-256', data).then((d) => new Uint8Array(d))
        : sha256Of('sha256', data, 'buffer')
    },
    created(parent, ino, path, size, sec, nsec, hash) {
      dirTimes.run(sec, nsec, sec, nsec, parent)
      feed.run(now().us, 'create', path, null, ino, parent, null, token(sec, nsec), size, hash)
    },
    written(ino, path, size, hash) {
      const t = now()
      feed.run(t.us, 'write', path, null, ino, null, null, token(t.sec, t.nsec), size, hash)
    },
    renamed(fromParent, toParent, ino, from, to) {
      const t = now()
      dirTimes.run(t.sec, t.nsec, t.sec, t.nsec, fromParent)
      if (toParent !== fromParent) dirTimes.run(t.sec, t.nsec, t.sec, t.nsec, toParent)
      feed.run(
        t.us,
        'rename',
        from,
        to,
        ino,
        fromParent,
        toParent,
        token(t.sec, t.nsec),
        null,
        null,
      )
    },
    removed(parent, ino, path) {
      const t = now()
      dirTimes.run(t.sec, t.nsec, t.sec, t.nsec, parent)
      feed.run(t.us, 'remove', path, null, ino, parent, null, null, null, null)
    },
    kvSet(key, json) {
      return tx(() => {
        const t = now()
        const v = version.get(key, t.us)!
        value.run(key, json, t.sec, t.sec)
        feed.run(t.us, 'kv-set', key, null, null, null, null, null, null, null)
        return v
      })
    },
    toolRecord(name, parameters, result, sec) {
      tx(() => {
        const { lastInsertRowid } = tool.run(name, parameters, result, sec, sec, 0)
        const ns = BigInt(sec) * 1_000_000_000n
        meta.run(lastInsertRowid, ns, ns)
      })
    },
  }
}
