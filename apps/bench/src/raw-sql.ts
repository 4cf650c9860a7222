import { DEFAULT_CHUNK_SIZE, ROOT_INO, SPEC_INDEXES, SPEC_TABLES } from '@agentfs/core'
import Database from 'better-sqlite3'

/**
 * The baseline: the smallest correct implementation of the v0.4 tables on better-sqlite3 —
 * prepared statements, one transaction per operation, WAL, `synchronous=NORMAL`. It is "what
 * SQLite can do" with the spec's layout; AgentFS is measured against it.
 */
export class RawSqlFs {
  readonly #db: Database.Database
  readonly #chunk = DEFAULT_CHUNK_SIZE
  readonly #child: Database.Statement<[number, string], { ino: number }>
  readonly #inode: Database.Statement<
    [number],
    { ino: number; mode: number; size: number; nlink: number; mtime: number }
  >
  readonly #chunks: Database.Statement<[number], { data: Buffer }>
  readonly #range: Database.Statement<
    [number, number, number],
    { chunk_index: number; data: Buffer }
  >
  readonly #names: Database.Statement<[number], { name: string }>
  readonly #insertInode: Database.Statement<[number, number, number, number, number]>
  readonly #insertDentry: Database.Statement<[string, number, number]>
  readonly #insertChunk: Database.Statement<[number, number, Buffer]>
  readonly #deleteChunks: Database.Statement<[number]>
  readonly #setSize: Database.Statement<[number, number, number, number]>
  readonly #move: Database.Statement<[number, string, number, string]>
  readonly #kvSet: Database.Statement<[string, string]>
  readonly #kvGet: Database.Statement<[string], { value: string }>
  readonly #tool: Database.Statement<[string, string, string, number, number, number]>

  constructor(path: string, synchronous: 'NORMAL' | 'FULL' = 'NORMAL') {
    const db = new Database(path)
    db.pragma('journal_mode = WAL')
    db.pragma(`synchronous = ${synchronous}`)
    const fresh = !db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'fs_inode'").get()
    if (fresh) {
      db.transaction(() => {
        for (const o of [...SPEC_TABLES, ...SPEC_INDEXES]) db.exec(o.sql)
        db.prepare("INSERT INTO fs_config (key, value) VALUES ('chunk_size', ?)").run(
          String(this.#chunk),
        )
        const now = Math.floor(Date.now() / 1000)
        db.prepare(
          'INSERT INTO fs_inode (ino, mode, nlink, uid, gid, size, atime, mtime, ctime) VALUES (?, ?, 1, 0, 0, 0, ?, ?, ?)',
        ).run(ROOT_INO, 0o040755, now, now, now)
      })()
    }
    this.#db = db
    this.#child = db.prepare('SELECT ino FROM fs_dentry WHERE parent_ino = ? AND name = ?')
    this.#inode = db.prepare('SELECT ino, mode, size, nlink, mtime FROM fs_inode WHERE ino = ?')
    this.#chunks = db.prepare('SELECT data FROM fs_data WHERE ino = ? ORDER BY chunk_index')
    this.#range = db.prepare(
      'SELECT chunk_index, data FROM fs_data WHERE ino = ? AND chunk_index BETWEEN ? AND ? ORDER BY chunk_index',
    )
    this.#names = db.prepare('SELECT name FROM fs_dentry WHERE parent_ino = ? ORDER BY name')
    this.#insertInode = db.prepare(
      'INSERT INTO fs_inode (mode, nlink, uid, gid, size, atime, mtime, ctime) VALUES (?, 1, 0, 0, ?, ?, ?, ?)',
    )
    this.#insertDentry = db.prepare(
      'INSERT INTO fs_dentry (name, parent_ino, ino) VALUES (?, ?, ?)',
    )
    this.#insertChunk = db.prepare('INSERT INTO fs_data (ino, chunk_index, data) VALUES (?, ?, ?)')
    this.#deleteChunks = db.prepare('DELETE FROM fs_data WHERE ino = ?')
    this.#setSize = db.prepare('UPDATE fs_inode SET size = ?, mtime = ?, ctime = ? WHERE ino = ?')
    this.#move = db.prepare(
      'UPDATE fs_dentry SET parent_ino = ?, name = ? WHERE parent_ino = (SELECT parent_ino FROM fs_dentry WHERE ino = ? LIMIT 1) AND name = ?',
    )
    this.#kvSet = db.prepare(
      'INSERT INTO kv_store (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = unixepoch()',
    )
    this.#kvGet = db.prepare('SELECT value FROM kv_store WHERE key = ?')
    this.#tool = db.prepare(
      'INSERT INTO tool_calls (name, parameters, result, started_at, completed_at, duration_ms) VALUES (?, ?, ?, ?, ?, ?)',
    )
  }

  /** Walks the path one dentry at a time; undefined when a component is missing. */
  #resolve(path: string): number | undefined {
    let ino = ROOT_INO
    for (const part of path.split('/')) {
      if (part === '') continue
      const row = this.#child.get(ino, part)
      if (!row) return undefined
      ino = row.ino
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

  #create(path: string, mode: number, size: number): number {
    const [parent, name] = this.#split(path)
    const now = Math.floor(Date.now() / 1000)
    const ino = Number(this.#insertInode.run(mode, size, now, now, now).lastInsertRowid)
    this.#insertDentry.run(name, parent, ino)
    return ino
  }

  async mkdir(path: string): Promise<void> {
    this.#db.transaction(() => this.#create(path, 0o040755, 0))()
  }

  async writeFile(path: string, data: Buffer): Promise<void> {
    this.#db.transaction(() => {
      let ino = this.#resolve(path)
      const now = Math.floor(Date.now() / 1000)
      if (ino === undefined) ino = this.#create(path, 0o100644, data.byteLength)
      else {
        this.#deleteChunks.run(ino)
        this.#setSize.run(data.byteLength, now, now, ino)
      }
      for (let i = 0, at = 0; at < data.byteLength; i++, at += this.#chunk)
        this.#insertChunk.run(ino, i, data.subarray(at, at + this.#chunk))
    })()
  }

  async readFile(path: string): Promise<Buffer> {
    const ino = this.#must(path)
    return Buffer.concat(this.#chunks.all(ino).map((r) => r.data))
  }

  async pread(path: string, offset: number, length: number): Promise<Buffer> {
    const ino = this.#must(path)
    const first = Math.floor(offset / this.#chunk)
    const last = Math.floor((offset + length - 1) / this.#chunk)
    const joined = Buffer.concat(this.#range.all(ino, first, last).map((r) => r.data))
    const start = offset - first * this.#chunk
    return joined.subarray(start, start + length)
  }

  async stat(path: string): Promise<{ size: number }> {
    const row = this.#inode.get(this.#must(path))
    if (!row) throw new Error(`ENOENT: ${path}`)
    return row
  }

  async readdir(path: string): Promise<string[]> {
    return this.#names.all(this.#must(path)).map((r) => r.name)
  }

  async rename(from: string, to: string): Promise<void> {
    this.#db.transaction(() => {
      const ino = this.#must(from)
      const [parent, name] = this.#split(to)
      this.#move.run(parent, name, ino, from.slice(from.lastIndexOf('/') + 1))
    })()
  }

  async kvSet(key: string, value: unknown): Promise<void> {
    this.#kvSet.run(key, JSON.stringify(value))
  }

  async kvGet(key: string): Promise<unknown> {
    const row = this.#kvGet.get(key)
    return row ? JSON.parse(row.value) : undefined
  }

  async toolRecord(name: string, parameters: unknown, result: unknown): Promise<void> {
    const now = Date.now()
    this.#tool.run(
      name,
      JSON.stringify(parameters),
      JSON.stringify(result),
      Math.floor(now / 1000),
      Math.floor(now / 1000),
      0,
    )
  }

  async close(): Promise<void> {
    this.#db.close()
  }
}
