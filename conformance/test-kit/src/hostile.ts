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
