import {
  DEFAULT_CHUNK_SIZE,
  ROOT_INO,
  S_IFDIR,
  S_IFMT,
  S_IFREG,
  SPEC_INDEXES,
  SPEC_TABLES,
} from '@agentfs/core'
import Database from 'better-sqlite3'
import type { KeptRows } from './raw-sql-kept.js'

/** Seconds and nanoseconds of the wall clock, as the spec's timestamp columns take them. */
function clock(): [sec: number, nsec: number] {
  const ms = Date.now()
  const sec = Math.floor(ms / 1000)
  return [sec, (ms - sec * 1000) * 1_000_000]
}

/** A created inode, and what the kept rows of its creation need. */
interface Created {
  readonly parent: number
  readonly ino: number
  readonly sec: number
  readonly nsec: number
}

/**
 * The baseline: the fastest correct implementation of the spec's operations on its tables that
 * we can write on better-sqlite3, so that a ratio against it is a ratio against what SQLite can
 * do with this schema. Every operation is one transaction (reads too, so a path resolves in one
 * snapshot); paths resolve one component at a time with the spec's lookup; reading a file
 * updates its access time, as the spec's "Reading a File" says; WAL, `synchronous=NORMAL`.
 *
 * What makes it fast, each measured: statements prepared once, `pluck`/`raw` rows (no objects
 * built per row), BEGIN/COMMIT as prepared statements (not the `transaction()` wrapper), the
 * chunk size read once, a file of one chunk returned without a copy and a larger one copied
 * into one buffer of its known size, a range read copied straight into its result, and the
 * values of a join, a range or a sort bound through subqueries (on SQLite 3.54, better-sqlite3
 * 13's, the plain form is prepared again on every run: 6.6–10.8 µs against 3.7–3.9; the same on
 * SQLite 3.51; ARCHITECTURE.md, "Statement shapes").
 */
export class RawSqlFs {
  readonly #db: Database.Database
  readonly #chunk = DEFAULT_CHUNK_SIZE
  readonly #begin: Database.Statement
  readonly #beginWrite: Database.Statement
  readonly #commit: Database.Statement
  readonly #rollback: Database.Statement
  readonly #child: Database.Statement<[number, string], number>
  readonly #stat: Database.Statement<[number], unknown[]>
  readonly #range: Database.Statement<[number, number, number], Buffer>
  readonly #names: Database.Statement<[number], string>
  readonly #touch: Database.Statement<[number, number, number]>
  readonly #entryTimes: Database.Statement<
    [number, string],
    [number, number, number, number, number, number, number, number]
  >
  readonly #chunks: Database.Statement<[number], Buffer>
  readonly #insertInode: Database.Statement<
    [number, number, number, number, number, number, number, number]
  >
  readonly #insertDentry: Database.Statement<[string, number, number]>
  readonly #insertChunk: Database.Statement<[number, number, Buffer]>
  readonly #deleteChunks: Database.Statement<[number]>
  readonly #setSize: Database.Statement<[number, number, number, number, number, number]>
  readonly #link: Database.Statement<[number]>
  readonly #move: Database.Statement<[number, string, number, string]>
  readonly #unlinkEntry: Database.Statement<[number, string]>
  readonly #dropLink: Database.Statement<[number], number>
  readonly #dropInode: Database.Statement<[number]>
  readonly #changed: Database.Statement<[number, number, number]>
  readonly #kvSet: Database.Statement<[string, string]>
  readonly #kvGet: Database.Statement<[string], string>
  readonly #tool: Database.Statement<[string, string, string, number, number, number]>
  readonly #kept: KeptRows | undefined

  /**
   * `kept`, when given, adds the rows AgentFS's guarantees write (see `raw-sql-kept.ts`); the
   * database must then have AgentFS's extension tables.
   */
  constructor(
    path: string,
    synchronous: 'NORMAL' | 'FULL' = 'NORMAL',
    kept?: (db: Database.Database, tx: <T>(body: () => T) => T) => KeptRows,
  ) {
    const db = new Database(path)
    db.pragma('journal_mode = WAL')
    db.pragma(`synchronous = ${synchronous}`)
    // Other processes may hold the write lock (W16, W17): wait for it as a library would.
    db.pragma('busy_timeout = 5000')
    const fresh = !db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'fs_inode'").get()
    if (fresh) {
      db.transaction(() => {
        for (const o of [...SPEC_TABLES, ...SPEC_INDEXES]) db.exec(o.sql)
        db.prepare("INSERT INTO fs_config (key, value) VALUES ('chunk_size', ?)").run(
          String(this.#chunk),
        )
        db.prepare(
          'INSERT INTO fs_inode (ino, mode, nlink, uid, gid, size, atime, mtime, ctime) VALUES (?, ?, 2, 0, 0, 0, unixepoch(), unixepoch(), unixepoch())',
        ).run(ROOT_INO, S_IFDIR | 0o755)
      })()
    }
    this.#db = db
    this.#begin = db.prepare('BEGIN')
    this.#beginWrite = db.prepare('BEGIN IMMEDIATE')
    this.#commit = db.prepare('COMMIT')
    this.#rollback = db.prepare('ROLLBACK')
    this.#child = db
      .prepare<[number, string], number>(
        'SELECT ino FROM fs_dentry WHERE parent_ino = ? AND name = ?',
      )
      .pluck()
    this.#stat = db
      .prepare<[number], unknown[]>(
        'SELECT ino, mode, nlink, uid, gid, size, atime, mtime, ctime, rdev, atime_nsec, mtime_nsec, ctime_nsec FROM fs_inode WHERE ino = ?',
      )
      .raw()
    this.#range = db
      .prepare<[number, number, number], Buffer>(
        'SELECT data FROM fs_data WHERE ino = (SELECT ?) AND chunk_index BETWEEN (SELECT ?) AND (SELECT ?) ORDER BY chunk_index',
      )
      .pluck()
    this.#names = db
      .prepare<[number], string>(
        'SELECT name FROM fs_dentry WHERE parent_ino = (SELECT ?) ORDER BY name',
      )
      .pluck()
    this.#touch = db.prepare('UPDATE fs_inode SET atime = ?, atime_nsec = ? WHERE ino = ?')
    // The last name's entry with its inode's size and times (what relatime needs), in one.
    this.#entryTimes = db
      .prepare<[number, string], [number, number, number, number, number, number, number, number]>(
        'SELECT i.ino, i.size, i.atime, i.atime_nsec, i.mtime, i.mtime_nsec, i.ctime, i.ctime_nsec FROM (SELECT ? AS dir, ? AS name) s JOIN fs_dentry d ON d.parent_ino = s.dir AND d.name = s.name JOIN fs_inode i ON i.ino = d.ino',
      )
      .raw()
    // The chunks alone: a join would repeat the inode's columns on every chunk of a large file.
    this.#chunks = db
      .prepare<[number], Buffer>(
        'SELECT data FROM fs_data WHERE ino = (SELECT ?) ORDER BY chunk_index',
      )
      .pluck()
    this.#insertInode = db.prepare(
      'INSERT INTO fs_inode (mode, nlink, uid, gid, size, atime, mtime, ctime, atime_nsec, mtime_nsec, ctime_nsec) VALUES (?, 1, 0, 0, ?, ?, ?, ?, ?, ?, ?) RETURNING ino',
    )
    this.#insertDentry = db.prepare(
      'INSERT INTO fs_dentry (name, parent_ino, ino) VALUES (?, ?, ?)',
    )
    this.#insertChunk = db.prepare('INSERT INTO fs_data (ino, chunk_index, data) VALUES (?, ?, ?)')
    this.#deleteChunks = db.prepare('DELETE FROM fs_data WHERE ino = ?')
    this.#setSize = db.prepare(
      'UPDATE fs_inode SET size = ?, mtime = ?, ctime = ?, mtime_nsec = ?, ctime_nsec = ? WHERE ino = ?',
    )
    this.#link = db.prepare('UPDATE fs_inode SET nlink = nlink + 1 WHERE ino = ?')
    this.#move = db.prepare(
      'UPDATE fs_dentry SET parent_ino = ?, name = ? WHERE parent_ino = ? AND name = ?',
    )
    this.#unlinkEntry = db.prepare('DELETE FROM fs_dentry WHERE parent_ino = ? AND name = ?')
    this.#dropLink = db
      .prepare<[number], number>(
        'UPDATE fs_inode SET nlink = nlink - 1 WHERE ino = ? RETURNING nlink',
      )
      .pluck()
    this.#dropInode = db.prepare('DELETE FROM fs_inode WHERE ino = ?')
    this.#changed = db.prepare('UPDATE fs_inode SET ctime = ?, ctime_nsec = ? WHERE ino = ?')
    this.#kvSet = db.prepare(
      'INSERT INTO kv_store (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = unixepoch()',
    )
    this.#kvGet = db.prepare<[string], string>('SELECT value FROM kv_store WHERE key = ?').pluck()
    this.#tool = db.prepare(
      'INSERT INTO tool_calls (name, parameters, result, started_at, completed_at, duration_ms) VALUES (?, ?, ?, ?, ?, ?)',
    )
    this.#kept = kept?.(db, (body) => this.#tx(true, body))
  }

  /** Runs `body` in one transaction (IMMEDIATE for writes, so no lock upgrade can fail). */
  #tx<T>(write: boolean, body: () => T): T {
    ;(write ? this.#beginWrite : this.#begin).run()
    try {
      const out = body()
      this.#commit.run()
      return out
    } catch (e) {
      this.#rollback.run()
      throw e
    }
  }

  /** The spec's resolution: one dentry lookup per component; undefined when one is missing. */
  #resolve(path: string): number | undefined {
    let ino = ROOT_INO
    let from = 1
    while (from <= path.length) {
      let to = path.indexOf('/', from)
      if (to === -1) to = path.length
      if (to > from) {
        const next = this.#child.get(ino, path.slice(from, to))
        if (next === undefined) return undefined
        ino = next
      }
      from = to + 1
    }
    return ino
  }

  #must(path: string): number {
    const ino = this.#resolve(path)
    if (ino === undefined) throw new Error(`ENOENT: ${path}`)
    return ino
  }

  #split(path: string): [parent: number, name: string] {
    const at = path.lastIndexOf('/')
    return [this.#must(path.slice(0, at) || '/'), path.slice(at + 1)]
  }

  /** Inserts the inode and its entry; returns what the kept rows of a create need. */
  #create(path: string, mode: number, size: number): Created {
    const [parent, name] = this.#split(path)
    const [sec, nsec] = clock()
    const { ino } = this.#insertInode.get(mode, size, sec, sec, sec, nsec, nsec, nsec) as {
      ino: number
    }
    this.#insertDentry.run(name, parent, ino)
    if ((mode & S_IFMT) === S_IFDIR) this.#link.run(parent)
    return { parent, ino, sec, nsec }
  }

  async mkdir(path: string): Promise<void> {
    this.#tx(true, () => {
      const c = this.#create(path, S_IFDIR | 0o755, 0)
      this.#kept?.created(c.parent, c.ino, path, 0, c.sec, c.nsec, null)
    })
  }

  async writeFile(path: string, data: Buffer): Promise<void> {
    const kept = this.#kept
    if (kept === undefined) {
      this.#tx(true, () => this.#writeRows(path, data))
      return
    }
    // The content's hash for the feed row, as AgentFS writes it: SHA-256 on this thread, or,
    // from 1 MiB, on the thread pool while the chunks go in (the same overlap AgentFS uses).
    const digest = kept.hash(data)
    this.#beginWrite.run()
    try {
      const created = this.#writeRows(path, data)
      const hash = digest instanceof Promise ? await digest : digest
      if (typeof created === 'number') kept.written(created, path, data.byteLength, hash)
      else
        kept.created(
          created.parent,
          created.ino,
          path,
          data.byteLength,
          created.sec,
          created.nsec,
          hash,
        )
      this.#commit.run()
    } catch (e) {
      this.#rollback.run()
      throw e
    }
  }

  /** A whole file's rows: created (its {@link Created}) or replaced (its inode number). */
  #writeRows(path: string, data: Buffer): Created | number {
    let ino = this.#resolve(path)
    let created: Created | undefined
    if (ino === undefined) {
      created = this.#create(path, S_IFREG | 0o644, data.byteLength)
      ino = created.ino
    } else {
      const [sec, nsec] = clock()
      this.#deleteChunks.run(ino)
      this.#setSize.run(data.byteLength, sec, sec, nsec, nsec, ino)
    }
    for (let i = 0, at = 0; at < data.byteLength; i++, at += this.#chunk)
      this.#insertChunk.run(ino, i, data.subarray(at, at + this.#chunk))
    return created ?? ino
  }

  /**
   * A whole file, its access time updated as `relatime` says (only when it is not newer than
   * the modification and change times, or is a day old). The read runs in a read transaction
   * that turns into a write one only for that update; if another process wrote first (BUSY),
   * it runs again as a write transaction.
   */
  async readFile(path: string): Promise<Buffer> {
    try {
      return this.#tx(false, () => this.#readWhole(path))
    } catch (error) {
      if ((error as { code?: string }).code?.startsWith('SQLITE_BUSY') !== true) throw error
      return this.#tx(true, () => this.#readWhole(path))
    }
  }

  #readWhole(path: string): Buffer {
    const entry = this.#entryTimes.get(...this.#split(path))
    if (entry === undefined) throw new Error(`ENOENT: ${path}`)
    const [ino, size, atime, atimeNsec, mtime, mtimeNsec, ctime, ctimeNsec] = entry
    const chunks = this.#chunks.all(ino)
    const [sec, nsec] = clock()
    const a = atime * 1e9 + atimeNsec
    if (a <= mtime * 1e9 + mtimeNsec || a <= ctime * 1e9 + ctimeNsec || sec - atime >= 86_400)
      this.#touch.run(sec, nsec, ino)
    if (chunks.length === 1) return chunks[0]!
    const out = Buffer.allocUnsafe(size)
    let at = 0
    for (const c of chunks) at += c.copy(out, at)
    return out.subarray(0, at)
  }

  /** `open` + `read(buf, 0, length, offset)` + `close`: resolve, read the chunks in range. */
  async pread(path: string, offset: number, length: number): Promise<Buffer> {
    return this.#tx(false, () => {
      return this.#readRange(this.#must(path), offset, length)
    })
  }

  /** `length` bytes of `ino` from `offset`: the chunks in range copied straight into one buffer. */
  #readRange(ino: number, offset: number, length: number): Buffer {
    const first = Math.floor(offset / this.#chunk)
    const last = Math.floor((offset + length - 1) / this.#chunk)
    const out = Buffer.allocUnsafe(length)
    let skip = offset - first * this.#chunk
    let at = 0
    for (const c of this.#range.all(ino, first, last)) {
      at += c.copy(out, at, skip, Math.min(c.byteLength, skip + length - at))
      skip = 0
    }
    return out.subarray(0, at)
  }

  /**
   * W6 as a handle API must do it: `open` resolves the path in a read transaction of its own,
   * `read` checks the inode (it may be gone or have shrunk since) and reads the chunks in a
   * second one. The floor of any library whose open and read are separate calls.
   */
  async preadHandle(path: string, offset: number, length: number): Promise<Buffer> {
    const ino = this.#tx(false, () => this.#must(path))
    return this.#tx(false, () => {
      const row = this.#stat.get(ino)
      if (!row) throw new Error(`EBADF: ${path}`)
      const end = Math.min(row[5] as number, offset + length)
      return end <= offset ? Buffer.alloc(0) : this.#readRange(ino, offset, end - offset)
    })
  }

  async stat(path: string): Promise<{ size: number }> {
    const row = this.#tx(false, () => this.#stat.get(this.#must(path)))
    if (!row) throw new Error(`ENOENT: ${path}`)
    return { size: row[5] as number }
  }

  async readdir(path: string): Promise<string[]> {
    return this.#tx(false, () => {
      const ino = this.#must(path)
      const names = this.#names.all(ino)
      // No names: an empty directory, or not a directory at all (checked only then).
      if (names.length === 0 && ((this.#stat.get(ino)![1] as number) & S_IFMT) !== S_IFDIR)
        throw new Error(`ENOTDIR: ${path}`)
      return names
    })
  }

  /** POSIX rename of a file: an existing target is replaced (and freed at its last link). */
  async rename(from: string, to: string): Promise<void> {
    this.#tx(true, () => {
      const [fromParent, fromName] = this.#split(from)
      const ino = this.#child.get(fromParent, fromName)
      if (ino === undefined) throw new Error(`ENOENT: ${from}`)
      const [toParent, toName] = this.#split(to)
      const old = this.#child.get(toParent, toName)
      if (old === ino) return
      if (old !== undefined) {
        this.#unlinkEntry.run(toParent, toName)
        if (this.#dropLink.get(old) === 0) {
          this.#deleteChunks.run(old)
          this.#dropInode.run(old)
        }
      }
      this.#move.run(toParent, toName, fromParent, fromName)
      const [sec, nsec] = clock()
      this.#changed.run(sec, nsec, ino)
      this.#kept?.renamed(fromParent, toParent, ino, from, to)
    })
  }

  /**
   * `rm -r`: every entry of the subtree listed by one recursive statement (an inode with several
   * links in it counted once per link), then removed set-wise: entries below, the entry itself,
   * link counts, and the chunks, links and inodes no entry names any more; one transaction.
   */
  async rmTree(path: string): Promise<void> {
    const db = this.#db
    this.#tx(true, () => {
      const [parent, name] = this.#split(path)
      const top = this.#child.get(parent, name)
      if (top === undefined) throw new Error(`ENOENT: ${path}`)
      // A directory removed takes its `..` link from the parent.
      if (((this.#stat.get(top)![1] as number) & S_IFMT) === S_IFDIR) this.#dropLink.get(parent)
      db.exec(
        'CREATE TEMP TABLE IF NOT EXISTS rm_set (ino INTEGER PRIMARY KEY, links INTEGER); DELETE FROM rm_set',
      )
      db.prepare(
        'INSERT INTO rm_set (ino, links) WITH RECURSIVE t(ino) AS (SELECT ? UNION ALL SELECT d.ino FROM fs_dentry d JOIN t ON d.parent_ino = t.ino) SELECT ino, COUNT(*) FROM t GROUP BY ino',
      ).run(top)
      db.exec('DELETE FROM fs_dentry WHERE parent_ino IN (SELECT ino FROM rm_set)')
      this.#unlinkEntry.run(parent, name)
      db.exec(
        'UPDATE fs_inode SET nlink = nlink - (SELECT links FROM rm_set r WHERE r.ino = fs_inode.ino) WHERE ino IN (SELECT ino FROM rm_set)',
      )
      // A file still linked from outside the tree stays; directories cannot be.
      db.exec(
        'DELETE FROM rm_set WHERE ino IN (SELECT ino FROM fs_inode WHERE nlink > 0 AND (mode & 61440) <> 16384)',
      )
      db.exec('DELETE FROM fs_data WHERE ino IN (SELECT ino FROM rm_set)')
      db.exec('DELETE FROM fs_symlink WHERE ino IN (SELECT ino FROM rm_set)')
      db.exec('DELETE FROM fs_inode WHERE ino IN (SELECT ino FROM rm_set)')
      const [sec, nsec] = clock()
      this.#changed.run(sec, nsec, parent)
      this.#kept?.removed(parent, top, path)
    })
  }

  async kvSet(key: string, value: unknown): Promise<void> {
    if (this.#kept) this.#kept.kvSet(key, JSON.stringify(value))
    else this.#kvSet.run(key, JSON.stringify(value))
  }

  async kvGet(key: string): Promise<unknown> {
    const value = this.#kvGet.get(key)
    return value === undefined ? undefined : JSON.parse(value)
  }

  async toolRecord(name: string, parameters: unknown, result: unknown): Promise<void> {
    const sec = Math.floor(Date.now() / 1000)
    if (this.#kept)
      this.#kept.toolRecord(name, JSON.stringify(parameters), JSON.stringify(result), sec)
    else this.#tool.run(name, JSON.stringify(parameters), JSON.stringify(result), sec, sec, 0)
  }

  async close(): Promise<void> {
    this.#db.close()
  }
}
