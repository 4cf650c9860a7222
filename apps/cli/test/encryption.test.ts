import { execFileSync, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { openDatabase } from '@agentfs/core'
import { tursoDriver } from '@agentfs/driver-turso'
import { createFileSystem } from '@agentfs/fs'
import { describe, expect, test } from 'vitest'
import { fuseTests, runCli, useCliSandbox } from './helpers.js'

let cli: string
let cwd: string
useCliSandbox('agentfs-encryption-', (sandbox) => {
  ;({ cli, cwd } = sandbox)
})

const MARKER = 'MARKER-c41d-the-agent-wrote-this'
const run = (args: string[], env: NodeJS.ProcessEnv = {}, input?: string) =>
  runCli(cli, args, {
    cwd,
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, AGENTFS_KEY: '', AGENTFS_KEY_FILE: '', ...env },
    ...(input === undefined ? {} : { input }),
  })
const ok = (args: string[], env: NodeJS.ProcessEnv = {}, input?: string) => {
  const r = run(args, env, input)
  if (r.code !== 0) throw new Error(`agentfs ${args.join(' ')} failed (${r.code}): ${r.err}`)
  return r
}
async function keyFile(name: string, content: string, mode = 0o600): Promise<string> {
  const path = join(cwd, name)
  await writeFile(path, `${content}\n`, { mode })
  return path
}
const onDisk = (db: string) =>
  [db, `${db}-wal`].filter((f) => existsSync(f)).some((f) => readFileSync(f).includes(MARKER))
// What the program an agent runs was given (sh expands the variables).
const SHOW_ENV = [
  'echo "key=$' + '{AGENTFS_KEY:-none} file=$' + '{AGENTFS_KEY_FILE:-none}',
  'audit=$' +
    '{AGENTFS_AUDIT_KEY_FILE:-none} token=$' +
    '{AGENTFS_SYNC_TOKEN:-none}"; echo hi > made.txt',
].join(' ')
const oneLine = (err: string) => expect(err.trim().split('\n')).toHaveLength(1)

/** The plain sqlite3 shell's answer to reading the file. */
function plainShell(db: string): string {
  try {
    return execFileSync('sqlite3', [db, 'SELECT count(*) FROM fs_inode'], {
      encoding: 'utf8',
      stdio: 'pipe',
    })
  } catch (error) {
    return String((error as { stderr?: unknown }).stderr)
  }
}

describe('encrypted databases from the CLI', () => {
  test('--key-file and $AGENTFS_KEY open an encrypted database on every command; without or with a wrong key, one clear line', async () => {
    const key = await keyFile('db.key', 'a passphrase only I know')
    ok(['init', '--key-file', key, 'secret'])
    const db = join(cwd, '.agentfs', 'secret.db')
    ok(['fs', 'write', '--key-file', key, 'secret', '/notes.md'], {}, `${MARKER}\n`)
    ok(['kv', 'set', 'secret', 'k', JSON.stringify(MARKER)], {
      AGENTFS_KEY: 'a passphrase only I know',
    })
    expect(onDisk(db)).toBe(false)
    expect(plainShell(db)).toMatch(/file is not a database/)

    expect(ok(['fs', 'cat', '--key-file', key, 'secret', '/notes.md']).out).toBe(`${MARKER}\n`)
    expect(ok(['fs', 'cat', 'secret', '/notes.md'], { AGENTFS_KEY_FILE: key }).out).toBe(
      `${MARKER}\n`,
    )
    expect(ok(['search', 'secret', 'marker'], { AGENTFS_KEY_FILE: key }).out).toContain('/notes.md')
    expect(ok(['fsck', 'secret'], { AGENTFS_KEY_FILE: key }).code).toBe(0)

    const none = run(['fs', 'cat', 'secret', '/notes.md'])
    expect(none.code).toBe(1)
    expect(none.err).toMatch(
      /secret\.db is damaged, encrypted or not a SQLite database: if it is encrypted, give its key \(--key-file FILE or AGENTFS_KEY\)/,
    )
    oneLine(none.err)
    const wrong = run(['fs', 'ls', 'secret', '/'], { AGENTFS_KEY: 'a guess' })
    expect(wrong.code).toBe(1)
    expect(wrong.err).toMatch(/does not open with this key/)
    oneLine(wrong.err)
    expect(run(['info', '--json', 'secret'], { AGENTFS_KEY: 'a guess' }).out).toContain(
      '"WRONG_KEY"',
    )
  })

  test('bad key options are refused before anything opens', async () => {
    ok(['init', 'plain'])
    const loose = await keyFile('loose.key', 'k', 0o644)
    const both = run(['fs', 'ls', '--key', 'k', '--key-file', loose, 'plain', '/'])
    expect(both.err).toMatch(/give the key once: --key or --key-file, not both/)
    expect(run(['fs', 'ls', '--cipher', 'chacha20', 'plain', '/']).err).toMatch(
      /--cipher needs a key/,
    )
    expect(run(['fs', 'ls', '--cipher', 'rot13', '--key', 'k', 'plain', '/']).err).toMatch(
      /unknown cipher "rot13"/,
    )
    const keyed = run(['fs', 'ls', '--key-file', loose, 'plain', '/'])
    expect(keyed.err).toMatch(
      /warning: the key file .*loose\.key can be read by other users \(mode 644\); chmod 600/,
    )
    expect(keyed.err).toMatch(/is not encrypted, and a key was given/)
    expect(run(['fs', 'ls', '--key-file', join(cwd, 'missing.key'), 'plain', '/']).err).toMatch(
      /the key file .*missing\.key cannot be read/,
    )
  })

  test('encrypt, rekey (with a new cipher) and decrypt: the content stays, the old key stops working', async () => {
    const one = await keyFile('one.key', 'first key')
    const two = await keyFile('two.key', 'second key')
    ok(['init', 'rotating'])
    const db = join(cwd, '.agentfs', 'rotating.db')
    ok(['fs', 'write', 'rotating', '/a.txt'], {}, MARKER)
    expect(onDisk(db)).toBe(true)

    expect(ok(['encrypt', '--key-file', one, 'rotating']).out).toMatch(
      /^encrypted .*rotating\.db \(sqlcipher\)/,
    )
    expect(onDisk(db)).toBe(false)
    expect(ok(['fs', 'cat', '--key-file', one, 'rotating', '/a.txt']).out).toBe(MARKER)
    expect(run(['encrypt', '--key-file', one, 'rotating']).err).toMatch(/already encrypted/)

    const bad = run(['rekey', '--key-file', two, '--new-key-file', one, 'rotating'])
    expect(bad.code).toBe(1)
    expect(bad.err).toMatch(/does not open with this key/)
    ok(['rekey', '--key-file', one, '--new-key-file', two, '--new-cipher', 'chacha20', 'rotating'])
    expect(run(['fs', 'cat', '--key-file', one, 'rotating', '/a.txt']).code).toBe(1)
    expect(
      ok(['fs', 'cat', '--key-file', two, '--cipher', 'chacha20', 'rotating', '/a.txt']).out,
    ).toBe(MARKER)
    expect(onDisk(db)).toBe(false)

    ok(['decrypt', 'rotating'], { AGENTFS_KEY_FILE: two, AGENTFS_CIPHER: 'chacha20' })
    expect(onDisk(db)).toBe(true)
    expect(ok(['fs', 'cat', 'rotating', '/a.txt']).out).toBe(MARKER)
    expect(plainShell(db).trim()).toMatch(/^\d+$/)
  })

  test('a rekey killed at any moment leaves the old database or the new one, whole', async () => {
    const old = await keyFile('old.key', 'old key')
    const next = await keyFile('new.key', 'new key')
    ok(['init', '--key-file', old, 'killed'])
    const db = join(cwd, '.agentfs', 'killed.db')
    // About 24 MiB, so a rekey takes long enough to be killed inside.
    const block = `${MARKER} ${'0123456789abcdef'.repeat(4096)}\n`
    for (let i = 0; i < 4; i++)
      ok(['fs', 'write', '--key-file', old, 'killed', `/big-${i}.txt`], {}, block.repeat(90))
    const expected = ok(['fs', 'cat', '--key-file', old, 'killed', '/big-3.txt']).out
    const started = Date.now()
    ok(['rekey', '--key-file', old, '--new-key-file', next, 'killed'])
    const full = Date.now() - started
    ok(['rekey', '--key-file', next, '--new-key-file', old, 'killed'])
    const outcomes = { old: 0, new: 0 }
    for (let round = 0; round < 8; round++) {
      const child = spawn(
        process.execPath,
        [cli, 'rekey', '--key-file', old, '--new-key-file', next, 'killed'],
        {
          cwd,
          stdio: 'ignore',
        },
      )
      // Listened for from the start: a rekey that ends before its kill (this run faster than
      // the timed one) has emitted 'exit' already, and a listener added then would wait forever.
      const exited = new Promise((done) => child.once('exit', done))
      await new Promise((done) => setTimeout(done, ((round + 0.5) / 8) * full))
      child.kill('SIGKILL')
      await exited
      const withOld = run(['fs', 'cat', '--key-file', old, 'killed', '/big-3.txt'])
      const withNew = run(['fs', 'cat', '--key-file', next, 'killed', '/big-3.txt'])
      const opened = withOld.code === 0 ? withOld : withNew
      expect(
        withOld.code === 0 || withNew.code === 0,
        `round ${round}: ${withOld.err} ${withNew.err}`,
      ).toBe(true)
      expect(opened.out === expected, `round ${round}`).toBe(true)
      outcomes[withOld.code === 0 ? 'old' : 'new']++
      // Back to the old key for the next round.
      if (withNew.code === 0) ok(['rekey', '--key-file', next, '--new-key-file', old, 'killed'])
      expect(ok(['fsck', '--key-file', old, 'killed']).code).toBe(0)
    }
    expect(onDisk(db)).toBe(false)
    expect(outcomes.old + outcomes.new).toBe(8)
    // About 55 CLI processes on a 24 MiB database: 17-28 s alone on this machine kind.
  }, 300_000)
})

describe("files of the Turso engine (tursodb, the Turso project's agentfs CLI)", () => {
  test('open with --cipher aegis256 and the raw key: read, write, search; the wrong key is one line', async () => {
    const hex = '7c'.repeat(32)
    const key = await keyFile('turso.key', hex)
    const path = join(cwd, 'turso.db')
    // Made as the Turso engine makes it: its own encryption, outside this CLI.
    const made = await openDatabase({ driver: tursoDriver({ path, key: hex, cipher: 'aegis256' }) })
    await createFileSystem(made).writeFile('/notes.md', `${MARKER}\n`)
    await made.close()
    expect(readFileSync(path).includes(MARKER)).toBe(false)
    const env = { AGENTFS_KEY_FILE: key, AGENTFS_CIPHER: 'aegis256' }
    const with_ = (args: string[], input?: string) => ok(args, env, input)
    expect(with_(['fs', 'cat', 'turso.db', '/notes.md']).out).toBe(`${MARKER}\n`)
    with_(['fs', 'write', 'turso.db', '/more.md'], 'more\n')
    expect(with_(['fs', 'cat', 'turso.db', '/more.md']).out).toBe('more\n')
    expect(
      ok(['fs', 'ls', '--key-file', key, '--cipher', 'aegis256', 'turso.db', '/']).out,
    ).toContain('notes.md')
    expect(with_(['search', 'turso.db', 'marker']).out).toContain('/notes.md')
    expect(with_(['fsck', 'turso.db']).code).toBe(0)
    const wrong = run(['fs', 'cat', '--cipher', 'aegis256', 'turso.db', '/notes.md'], {
      AGENTFS_KEY: '00'.repeat(32),
    })
    expect(wrong.code).toBe(1)
    expect(wrong.err).toMatch(/does not open with this key/)
    oneLine(wrong.err)
    // Re-keying is tursodb's job for these files: refused with what to use.
    const rekey = run(['rekey', '--new-key-file', key, 'turso.db'], {
      AGENTFS_KEY_FILE: key,
      AGENTFS_CIPHER: 'aegis256',
    })
    expect(rekey.code).toBe(1)
    expect(rekey.err).toMatch(/re-keyed with tursodb/)
  })
})

describe.runIf(fuseTests('encryption keys and agents'))('what the agent sees', () => {
  test('exec gives the program neither the database key nor the audit key file nor the sync token', async () => {
    const key = await keyFile('exec.key', 'exec key')
    const audit = await keyFile('audit.key', 'ab'.repeat(32))
    ok(['init', '--key-file', key, 'agentdb'])
    const out = ok(['exec', 'agentdb', '--', 'sh', '-c', SHOW_ENV], {
      AGENTFS_KEY_FILE: key,
      AGENTFS_SYNC_TOKEN: 'tok',
      AGENTFS_AUDIT_KEY_FILE: audit,
    }).out
    expect(out).toContain('key=none file=none audit=none token=none')
    expect(ok(['fs', 'cat', 'agentdb', '/made.txt'], { AGENTFS_KEY_FILE: key }).out).toBe('hi\n')
  })
})
