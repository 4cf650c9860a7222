import { spawnSync } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, test } from 'vitest'
import { runCli, useCliSandbox } from './helpers.js'

let cli: string
let cwd: string
useCliSandbox('agentfs-cli-', (sandbox) => {
  ;({ cli, cwd } = sandbox)
})

const agentfs = (args: string[], input?: string) =>
  runCli(cli, args, { cwd, ...(input === undefined ? {} : { input }) })

describe('agentfs on damaged and foreign files', () => {
  test('fsck reports injected damage with exit code 1 and repairs the safe part', async () => {
    agentfs(['init', 'check.db'])
    agentfs(['fs', 'write', 'check.db', '/a.txt', 'hello'])
    expect(agentfs(['fsck', 'check.db'])).toMatchObject({ code: 0, out: 'clean\n' })
    const { default: Database } = await import('better-sqlite3')
    const raw = new Database(join(cwd, 'check.db'))
    raw.exec(
      "UPDATE fs_inode SET nlink = 3 WHERE ino = 2; INSERT INTO kv_store (key, value) VALUES ('bad', 'not json')",
    )
    raw.close()
    const damaged = agentfs(['fsck', 'check.db'])
    expect(damaged.code).toBe(1)
    expect(damaged.out).toContain('fixable   nlink: inode 2: nlink 3 recorded, 1 entries')
    expect(damaged.out).toContain("problem   kv-json: kv value of 'bad' is not valid JSON")
    const repaired = agentfs(['fsck', '--repair', 'check.db'])
    expect(repaired.out).toContain('repaired  nlink')
    expect(repaired.code).toBe(1)
    expect(
      JSON.parse(agentfs(['fsck', '--json', 'check.db']).out).findings.map(
        (f: { rule: string }) => f.rule,
      ),
    ).toEqual(['kv-json'])
  })

  test('a reader that closes the pipe early ends the command quietly (EPIPE)', async () => {
    const source = join(cwd, 'pipe-source')
    await mkdir(source)
    for (let i = 0; i < 800; i++) await writeFile(join(source, `f${i}.txt`), 'x')
    await writeFile(join(source, 'big.txt'), 'y'.repeat(4 << 20))
    expect(agentfs(['import', source, 'pipe.db']).code).toBe(0)
    for (const args of ['fs ls -l pipe.db /', 'fs cat pipe.db /big.txt', 'fs tree pipe.db']) {
      const result = spawnSync('bash', ['-c', `set -o pipefail; node ${cli} ${args} | head -c 1`], {
        cwd,
        encoding: 'utf8',
      })
      expect(result.stderr, args).not.toMatch(/EPIPE|Error|at /)
      expect(result.status, args).toBe(0)
    }
  }, 120_000)

  test('commands leave a SQLite file that is not an AgentFS database unchanged; only migrate converts it', async () => {
    const { default: Database } = await import('better-sqlite3')
    const path = join(cwd, 'other.db')
    const raw = new Database(path)
    raw.exec(
      "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada')",
    )
    raw.close()
    const before = await readFile(path)
    for (const args of [
      ['fs', 'ls', 'other.db', '/'],
      ['info', 'other.db'],
      ['kv', 'ls', 'other.db'],
    ]) {
      const result = agentfs(args)
      expect(result.code, args.join(' ')).toBe(1)
      expect(result.err).toMatch(/is not an AgentFS database \(it holds users\).*agentfs migrate/)
      expect(result.err.trim().split('\n')).toHaveLength(1)
    }
    expect(Buffer.compare(await readFile(path), before)).toBe(0)
    expect(existsSync(`${path}-wal`)).toBe(false)
    expect(agentfs(['migrate', 'other.db']).code).toBe(0)
    expect(agentfs(['fs', 'ls', 'other.db', '/']).code).toBe(0)
  })

  test('a damaged or non-SQLite file: fsck reports a finding (text and JSON), other commands one error line', async () => {
    await writeFile(join(cwd, 'noise.db'), Buffer.alloc(8192, 0x5a))
    const text = agentfs(['fsck', 'noise.db'])
    expect(text.code).toBe(1)
    expect(text.out).toMatch(
      /^problem {3}sqlite-integrity: .*noise\.db is damaged, encrypted or not a SQLite database.*restore it from a backup\n1 problem\(s\)\n$/,
    )
    const report = JSON.parse(agentfs(['fsck', '--json', 'noise.db']).out)
    expect(report).toMatchObject({ ok: false, repaired: [] })
    expect(report.findings).toEqual([
      expect.objectContaining({ rule: 'sqlite-integrity', repairable: false }),
    ])
    const info = agentfs(['info', 'noise.db'])
    expect(info.code).toBe(1)
    expect(info.err).toMatch(/^agentfs: .*noise\.db is damaged, encrypted or not a SQLite database/)
    expect(info.err.trim().split('\n')).toHaveLength(1)
    expect(JSON.parse(agentfs(['info', '--json', 'noise.db']).out).error.code).toBe('CORRUPT')
  })

  // Permissions bind only another user: as root the CLI runs as nobody (uid 65534) here, which
  // needs every folder above the CLI bundle to be searchable by others.
  const unreachable = (() => {
    if (process.getuid?.() !== 0) return 'not running as root'
    for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== '/'; dir = dirname(dir))
      if ((statSync(dir).mode & 0o001) === 0) return `${dir} is not searchable by other users`
    return undefined
  })()
  if (unreachable) console.log(`read-only permission test skipped: ${unreachable}`)
  test.skipIf(unreachable !== undefined)(
    'a read-only file is named with the fix in file terms; a read-only folder too; reads still work',
    async () => {
      const nobody = { uid: 65534, gid: 65534 }
      const dir = join(cwd, 'perm')
      await mkdir(dir)
      await chmod(cwd, 0o755)
      expect(agentfs(['init', 'perm/ro.db']).code).toBe(0)
      expect(agentfs(['fs', 'write', 'perm/ro.db', '/a.txt', 'a']).code).toBe(0)
      await chmod(join(dir, 'ro.db'), 0o444)
      await chmod(dir, 0o777)
      const write = runCli(cli, ['fs', 'write', 'perm/ro.db', '/b.txt', 'b'], { cwd, ...nobody })
      expect(write.code).toBe(1)
      expect(write.err).toMatch(
        /^agentfs: \S+perm\/ro\.db is read-only for this user \(file permissions\); make it writable \(chmod u\+w \S+\) or run as its owner/,
      )
      expect(write.err).not.toMatch(/readonly option|--read-only/)
      const read = runCli(cli, ['fs', 'cat', 'perm/ro.db', '/a.txt'], { cwd, ...nobody })
      expect(read).toMatchObject({ code: 0, out: 'a' })
      // A folder SQLite cannot create ro.db-shm in.
      await rm(join(dir, 'ro.db-shm'), { force: true })
      await rm(join(dir, 'ro.db-wal'), { force: true })
      await chmod(dir, 0o755)
      const locked = runCli(cli, ['fs', 'ls', 'perm/ro.db', '/'], { cwd, ...nobody })
      expect(locked.code).toBe(1)
      expect(locked.err).toMatch(
        /the folder \S+perm is not writable for this user; make the folder writable/,
      )
      expect(locked.err.trim().split('\n')).toHaveLength(1)
    },
  )
})
