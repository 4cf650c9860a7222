import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AgentFS } from '@agentfs/sdk'
import { HOSTILE_BASE, HOSTILE_CASES, HOSTILE_OPERATIONS } from '@agentfs/test-kit'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { bundleChild } from './helpers.js'

// Every SDK read API and walker on every crafted database, in a child process with a time
// limit: each answers with a result or a typed error — never a hang, never an untyped error.

const LIMIT_MS = 20_000
let dir: string
let child: { script: string; dispose(): Promise<void> }

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentfs-hostile-'))
  child = await bundleChild('hostile-child')
}, 60_000)

afterAll(async () => {
  await child?.dispose()
  await rm(dir, { recursive: true, force: true })
})

function runChild(db: string): Promise<{ out: string; timedOut: boolean; code: number | null }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [child.script, db], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    proc.stdout.on('data', (d) => {
      out += d
    })
    proc.stderr.on('data', (d) => {
      out += d
    })
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      proc.kill('SIGKILL')
    }, LIMIT_MS)
    proc.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ out, timedOut, code })
    })
  })
}

describe('hostile databases through the SDK', () => {
  test.each(HOSTILE_CASES.map((c, i) => [c.name, c, i] as const))(
    '%s: every read API and walker answers in time, typed',
    async (_name, hostile, index) => {
      const path = join(dir, `case-${index}.db`)
      const agent = await AgentFS.open({ path })
      for (const d of HOSTILE_BASE.dirs) await agent.fs.mkdir(d)
      for (const [file, content] of Object.entries(HOSTILE_BASE.files))
        await agent.fs.writeFile(file, content)
      await agent.kv.set('k', 1)
      for (const sql of hostile.sql.split(';\n')) await agent.db.execute({ sql })
      await agent.close()
      const result = await runChild(path)
      expect(result.timedOut, `${hostile.name} hung:\n${result.out}`).toBe(false)
      expect(result.code, result.out).toBe(0)
      const lines = result.out.trim().split('\n')
      // Every operation of the corpus, and the kv listing.
      expect(lines).toHaveLength(HOSTILE_OPERATIONS.length + 1)
      for (const line of lines) expect(line, hostile.name).toMatch(/^(ok|error) /)
      // Reads agree with the size: 3 bytes when the size says 3, whatever the chunks hold.
      if (hostile.name === 'chunks past EOF')
        expect(lines).toContain('ok readFile /dir/sub/file.txt 3')
      // A name that is not text is reported as damage, not as the engine's JSON error.
      if (hostile.name === 'dentry name stored as a BLOB')
        expect(lines.find((l) => l.startsWith('error readdir / '))).toMatch(
          /EIO .*cannot be a path component/,
        )
      // So is a name holding a slash, however the names are handed over.
      if (hostile.name === 'dentry with a slash')
        expect(lines.find((l) => l.startsWith('error readdir / '))).toMatch(
          /EIO .*cannot be a path component: it contains "\/"/,
        )
      if (hostile.name === 'huge size without chunks')
        expect(lines.find((l) => l.includes('readFile /top.txt'))).toMatch(/^error .* EIO/)
    },
    LIMIT_MS + 10_000,
  )
})
