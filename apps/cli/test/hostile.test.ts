import { spawnSync } from 'node:child_process'
import { mkdir, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { HOSTILE_CASES } from '@agentfs/test-kit'
import { describe, expect, test } from 'vitest'
import { useCliSandbox } from './helpers.js'

// Every CLI reader and walker on every crafted database, each in a child process with a time
// limit: a typed error (exit 1 with an E… code) or a correct result; never a hang, never a
// write outside the export target.

let cli: string
let cwd: string
useCliSandbox('agentfs-hostile-', (sandbox) => {
  ;({ cli, cwd } = sandbox)
})

const LIMIT_MS = 20_000

function run(args: string[]) {
  const result = spawnSync(process.execPath, [cli, ...args], {
    cwd,
    encoding: 'utf8',
    timeout: LIMIT_MS,
  })
  return {
    code: result.status,
    timedOut: result.error !== undefined || result.signal !== null,
    out: String(result.stdout),
    err: String(result.stderr),
  }
}

describe('hostile databases', () => {
  test.each(HOSTILE_CASES.map((c, i) => [c.name, c, i] as const))(
    '%s: every command answers in time with a result or a typed error',
    async (_name, hostile, index) => {
      const db = `hostile-${index}.db`
      expect(run(['init', db]).code).toBe(0)
      expect(run(['fs', 'mkdir', '-p', db, '/dir/sub']).code).toBe(0)
      expect(run(['fs', 'write', db, '/dir/sub/file.txt', 'hello hostile world']).code).toBe(0)
      expect(run(['fs', 'write', db, '/dir/notes.md', 'notes']).code).toBe(0)
      expect(run(['fs', 'write', db, '/top.txt', 'top']).code).toBe(0)
      const { default: Database } = await import('better-sqlite3')
      const raw = new Database(join(cwd, db))
      raw.exec(hostile.sql)
      raw.close()
      // Opening flags damaged names at once.
      const listing = run(['fs', 'ls', db, '/'])
      if (hostile.rules.includes('dentry-name'))
        expect(listing.err).toMatch(/warning: .* cannot be a path component/)
      else expect(listing.err).not.toMatch(/warning/)
      const fsck = run(['fsck', '--json', db])
      expect(fsck.timedOut).toBe(false)
      const rules = JSON.parse(fsck.out).findings.map((f: { rule: string }) => f.rule)
      for (const rule of hostile.rules) expect(rules).toContain(rule)
      const out = join(cwd, `export-${index}`, 'inner')
      await mkdir(out, { recursive: true })
      for (const args of [
        ['export', db, out],
        ['fs', 'tree', db],
        ['fs', 'ls', db, '/dir'],
        ['fs', 'cat', db, '/dir/sub/file.txt'],
        ['fs', 'cat', db, '/top.txt'],
        ['fs', 'cp', db, '/dir', '/copy'],
        ['fs', 'rm', '-r', db, '/dir'],
      ]) {
        const result = run(args)
        expect(result.timedOut, `${args.join(' ')} hung`).toBe(false)
        expect([0, 1], `${args.join(' ')}: ${result.err}`).toContain(result.code)
        if (result.code === 1) expect(result.err).toMatch(/E[A-Z]+|CORRUPT|damaged/)
        expect(result.err).not.toMatch(/TypeError|RangeError|at .*\.js:\d+/)
      }
      // Nothing was written beside the export target.
      expect(await readdir(join(cwd, `export-${index}`))).toEqual(['inner'])
    },
    LIMIT_MS * 12,
  )
})
