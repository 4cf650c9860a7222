/**
 * The hostile-database corpus: small databases crafted the way an attacker (or a disk fault)
 * would, each made from a clean one ({@link HOSTILE_BASE}) by raw SQL. Every read path, walker
 * and host writer must answer each with a typed error or a correct result — never a hang,
 * never a write outside. `writeHostileCorpus(dir)` writes it out as SQL scripts.
 */
export interface HostileCase {
  readonly name: string
  /** SQL run on a database holding /dir/sub/file.txt (ino 4), /dir/notes.md and /top.txt. */
  readonly sql: string
  /** fsck rules the damage must be reported under. */
  readonly rules: readonly string[]
}

export const HOSTILE_CASES: readonly HostileCase[] = [
  {
    name: 'dentry ../victim.txt',
    sql: "UPDATE fs_dentry SET name = '../victim.txt' WHERE name = 'top.txt'",
    rules: ['dentry-name'],
  },
  {
    name: 'dentry with a slash',
    sql: "UPDATE fs_dentry SET name = 'a/../../victim.txt' WHERE name = 'top.txt'",
    rules: ['dentry-name'],
  },
  {
    name: 'dentry named .',
    sql: "UPDATE fs_dentry SET name = '.' WHERE name = 'notes.md'",
    rules: ['dentry-name'],
  },
  {
    name: 'dentry named ..',
    sql: "UPDATE fs_dentry SET name = '..' WHERE name = 'notes.md'",
    rules: ['dentry-name'],
  },
  {
    name: 'empty dentry name',
    sql: "UPDATE fs_dentry SET name = '' WHERE name = 'notes.md'",
    rules: ['dentry-name'],
  },
  {
    name: 'dentry with NUL',
    sql: "UPDATE fs_dentry SET name = 'a' || char(0) || 'b' WHERE name = 'notes.md'",
    rules: ['dentry-name'],
  },
  {
    name: 'dentry name stored as a BLOB',
    sql: "UPDATE fs_dentry SET name = CAST(name AS BLOB) WHERE name = 'top.txt'",
    rules: ['dentry-name'],
  },
  {
    name: 'directory inside itself',
    sql: "INSERT INTO fs_dentry (name, parent_ino, ino) SELECT 'loop', ino, ino FROM fs_dentry WHERE name = 'sub'",
    rules: ['dir-hardlink'],
  },
  {
    name: 'two-way cycle',
    sql: `INSERT INTO fs_dentry (name, parent_ino, ino) SELECT 'back', s.ino, d.ino FROM fs_dentry s, fs_dentry d WHERE s.name = 'sub' AND d.name = 'dir';
INSERT INTO fs_dentry (name, parent_ino, ino) SELECT 'back2', s.ino, d.ino FROM fs_dentry s, fs_dentry d WHERE s.name = 'sub' AND d.name = 'dir'`,
    rules: ['dir-hardlink'],
  },
  {
    name: 'directory hard link',
    sql: "INSERT INTO fs_dentry (name, parent_ino, ino) SELECT 'alias', 1, ino FROM fs_dentry WHERE name = 'sub'",
    rules: ['dir-hardlink'],
  },
  {
    name: 'chunk stored as TEXT',
    sql: "UPDATE fs_data SET data = CAST(data AS TEXT) WHERE ino = (SELECT ino FROM fs_dentry WHERE name = 'file.txt')",
    rules: ['chunk-type'],
  },
  {
    name: 'chunks past EOF',
    sql: "UPDATE fs_inode SET size = 3 WHERE ino = (SELECT ino FROM fs_dentry WHERE name = 'file.txt')",
    rules: ['chunk-past-eof'],
  },
  {
    name: 'huge size without chunks',
    sql: "UPDATE fs_inode SET size = 1125899906842624 WHERE ino = (SELECT ino FROM fs_dentry WHERE name = 'top.txt')",
    rules: ['size'],
  },
  {
    name: 'negative nlink',
    sql: "UPDATE fs_inode SET nlink = -5 WHERE ino = (SELECT ino FROM fs_dentry WHERE name = 'top.txt')",
    rules: ['nlink'],
  },
  {
    name: 'unreachable island',
    sql: `INSERT INTO fs_inode (ino, mode, nlink, uid, gid, size, atime, mtime, ctime) VALUES (900, 16877, 1, 0, 0, 0, 0, 0, 0), (901, 16877, 1, 0, 0, 0, 0, 0, 0);
INSERT INTO fs_dentry (name, parent_ino, ino) VALUES ('x', 900, 901), ('y', 901, 900)`,
    rules: ['unreachable'],
  },
  {
    // A zip bomb: one stored 4 KiB chunk (32 bytes of 'A' as its hash) referred to 20,000
    // times by one file of a snapshot, so restoring or branching it would write 80 MB.
    name: 'snapshot expanding one chunk 20,000 times',
    sql: `INSERT INTO agentfs_blob (hash, data, refs) VALUES (CAST('${'A'.repeat(32)}' AS BLOB), CAST(replace(hex(zeroblob(2048)), '00', 'AA') AS BLOB), 20000);
INSERT INTO agentfs_snapshot (name, created_us, seq, kind) VALUES ('bomb', 0, 0, 'manual');
INSERT INTO agentfs_snap_inode (ino, since, until, mode, nlink, uid, gid, size, atime, mtime, ctime, rdev, atime_nsec, mtime_nsec, ctime_nsec, target, chunks) SELECT 4242, id, NULL, 33188, 1, 0, 0, 81920000, 0, 0, 0, 0, 0, 0, 0, NULL, CAST(replace(hex(zeroblob(20000)), '00', '${'A'.repeat(32)}') AS BLOB) FROM agentfs_snapshot WHERE name = 'bomb'`,
    rules: ['snapshot-expansion'],
  },
]

/** Ids per sync slot (core's `SLOT_SPAN`): a slot's ids are `slot · 2^32 + n`. */
const SLOT_SPAN = 2 ** 32

/**
 * Rows a hostile sync peer (slot `peer`) can push as raw SQL against a victim (slot `victim`)
 * whose tree holds the directory `/<dir>`: the last id of the victim's slot (it could create
 * nothing more), a name no entry can have, a loop (the directory inside itself), and the root
 * made a file. A victim's pull must refuse them all (see the sync package's reconciliation).
 */
export function hostilePeerRows(victim: number, peer: number, dir: string): string[] {
  const last = victim * SLOT_SPAN + SLOT_SPAN - 1
  const own = peer * SLOT_SPAN
  return [
    `INSERT INTO fs_inode (ino, mode, nlink, uid, gid, size, atime, mtime, ctime) VALUES (${last}, 33188, 1, 0, 0, 0, 0, 0, 0)`,
    `INSERT INTO fs_dentry (id, name, parent_ino, ino) VALUES (${last}, 'last', 1, ${last})`,
    `INSERT INTO fs_inode (ino, mode, nlink, uid, gid, size, atime, mtime, ctime) VALUES (${own + 900}, 33188, 1, 0, 0, 0, 0, 0, 0)`,
    `INSERT INTO fs_dentry (id, name, parent_ino, ino) VALUES (${own + 900}, '../x', 1, ${own + 900})`,
    `INSERT INTO fs_dentry (id, name, parent_ino, ino) SELECT ${own + 901}, 'loop', ino, ino FROM fs_dentry WHERE name = '${dir}' AND parent_ino = 1`,
    'UPDATE fs_inode SET mode = 33188 WHERE ino = 1',
  ]
}

/**
 * What {@link HOSTILE_OPERATIONS} call: the read APIs and walkers of a `node:fs/promises`-shaped
 * filesystem (`@agentfs/fs`'s `FileSystem` has every one).
 */
export interface HostileFs {
  readdir(
    path: string,
    options?: { recursive?: boolean; withFileTypes?: boolean },
  ): Promise<unknown>
  opendir(path: string): Promise<AsyncIterable<unknown>>
  stat(path: string): Promise<unknown>
  readFile(path: string): Promise<Uint8Array>
  createReadStream(path: string): AsyncIterable<unknown>
  open(
    path: string,
    flags: string,
  ): Promise<{
    read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<unknown>
    close(): Promise<void>
  }>
  appendFile(path: string, data: string): Promise<void>
  glob(pattern: string): Promise<unknown>
  grep(pattern: string): Promise<unknown>
  cp(from: string, to: string, options: { recursive: boolean }): Promise<void>
  mkdir(path: string): Promise<unknown>
  rename(from: string, to: string): Promise<void>
  rm(path: string, options: { recursive: boolean }): Promise<void>
}

/**
 * Every read API of a filesystem, and the walkers that write, to run on each case: each must
 * answer with a result or a typed error, in time. The names are what the reports print.
 */
export const HOSTILE_OPERATIONS: ReadonlyArray<
  readonly [name: string, run: (fs: HostileFs) => Promise<unknown>]
> = [
  ['readdir /', (fs) => fs.readdir('/')],
  ['readdir -r /', (fs) => fs.readdir('/', { recursive: true, withFileTypes: true })],
  [
    'opendir /dir',
    async (fs) => {
      for await (const _ of await fs.opendir('/dir'));
    },
  ],
  ['stat /top.txt', (fs) => fs.stat('/top.txt')],
  ['readFile /top.txt', (fs) => fs.readFile('/top.txt')],
  ['readFile /dir/sub/file.txt', (fs) => fs.readFile('/dir/sub/file.txt')],
  [
    'read stream /dir/sub/file.txt',
    async (fs) => {
      for await (const _ of fs.createReadStream('/dir/sub/file.txt'));
    },
  ],
  [
    'handle read /dir/sub/file.txt',
    async (fs) => {
      const h = await fs.open('/dir/sub/file.txt', 'r')
      try {
        await h.read(new Uint8Array(64), 0, 64, 0)
      } finally {
        await h.close()
      }
    },
  ],
  ['append /dir/sub/file.txt', (fs) => fs.appendFile('/dir/sub/file.txt', '!')],
  ['glob **/*', (fs) => fs.glob('**/*')],
  ['grep hello', (fs) => fs.grep('hello')],
  ['cp -r /dir /copy', (fs) => fs.cp('/dir', '/copy', { recursive: true })],
  // Into the tree, as an agent would move its work: the inside-check walks up from /dir/sub,
  // through whatever parents the case gave it.
  [
    'rename a directory into /dir/sub',
    async (fs) => {
      await fs.mkdir('/moving')
      await fs.rename('/moving', '/dir/sub/moving')
    },
  ],
  ['rename /dir into /dir/sub', (fs) => fs.rename('/dir', '/dir/sub/inner')],
  ['rm -r /dir', (fs) => fs.rm('/dir', { recursive: true })],
]

/** The clean tree every case starts from: directories, then files with their content. */
export const HOSTILE_BASE = {
  dirs: ['/dir', '/dir/sub'],
  files: {
    '/dir/sub/file.txt': 'hello hostile world',
    '/dir/notes.md': 'notes',
    '/top.txt': 'top',
  } as Record<string, string>,
}

/** Writes the corpus as one SQL script per case into `dir` (for tools outside the tests). */
export async function writeHostileCorpus(dir: string): Promise<string[]> {
  const { mkdir, writeFile } = await import('node:fs/promises')
  await mkdir(dir, { recursive: true })
  const written: string[] = []
  for (const c of HOSTILE_CASES) {
    const file = `${dir}/${c.name.replace(/[^a-z0-9]+/gi, '-')}.sql`
    await writeFile(file, `-- ${c.name}: fsck reports ${c.rules.join(', ')}\n${c.sql};\n`)
    written.push(file)
  }
  return written
}
