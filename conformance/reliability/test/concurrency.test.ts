import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fsck } from '@agentfs/core'
import { AgentFS } from '@agentfs/sdk'
import { build } from 'esbuild'
import { expect, test } from 'vitest'

/**
 * N processes × M read-modify-write edits of 3 shared files with version tokens: no update is
 * lost (every acknowledged edit is in the final text exactly once), refusals happen and are
 * retried, and no SQLITE_BUSY reaches a caller. Long: AGENTFS_LONG=1 (8 × 300).
 */
const LONG = process.env.AGENTFS_LONG === '1'
const CHILDREN = LONG ? 8 : 4
const EDITS = LONG ? 300 : 60
const FILES = 3
const here = fileURLToPath(new URL('.', import.meta.url))

function run(script: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
    })
    child.stderr.on('data', (d) => {
      out += d
    })
    child.on('close', (code) => resolve({ code, out }))
  })
}

test(`${CHILDREN} processes × ${EDITS} edits with ifMatch: no lost update, no BUSY`, async () => {
  const outDir = join(here, '..', '.tmp')
  await mkdir(outDir, { recursive: true })
  const script = join(outDir, `editor-child-${process.pid}.mjs`)
  await build({
    entryPoints: [join(here, 'fixtures', 'editor-child.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: script,
    conditions: ['@agentfs/source'],
    external: ['better-sqlite3', '@libsql/client'],
    logLevel: 'silent',
  })
  const dir = await mkdtemp(join(tmpdir(), 'agentfs-edits-'))
  const path = join(dir, 'shared.db')
  try {
    const setup = await AgentFS.open({ path })
    await setup.fs.mkdir('/shared')
    for (let f = 0; f < FILES; f++) await setup.fs.writeFile(`/shared/f${f}.txt`, '')
    await setup.close()

    const startAt = String(Date.now() + 1500)
    const results = await Promise.all(
      Array.from({ length: CHILDREN }, (_, i) =>
        run(script, [path, String(i), String(EDITS), String(FILES), startAt]),
      ),
    )
    let conflicts = 0
    for (const r of results) {
      expect(r, r.out).toMatchObject({ code: 0 })
      conflicts += (JSON.parse(r.out) as { conflicts: number }).conflicts
    }

    const agent = await AgentFS.open({ path })
    const lines: string[] = []
    for (let f = 0; f < FILES; f++)
      lines.push(
        ...(await agent.fs.readFile(`/shared/f${f}.txt`, 'utf8')).split('\n').filter(Boolean),
      )
    const expected = Array.from({ length: CHILDREN }, (_, c) =>
      Array.from({ length: EDITS }, (_, k) => `child-${c} edit-${k}`),
    ).flat()
    expect(lines.sort()).toEqual(expected.sort())
    expect((await fsck(agent.db)).findings).toEqual([])
    await agent.close()
    console.log(
      `concurrent edits: ${CHILDREN * EDITS} edits landed, ${conflicts} stale writes refused and retried`,
    )
    // The processes really contended: some writes were refused as stale.
    expect(conflicts).toBeGreaterThan(0)
  } finally {
    await rm(script, { force: true })
    await rm(dir, { recursive: true, force: true })
  }
}, 600_000)
