import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, test } from 'vitest'
import { bundleBench } from './bundle.js'

const here = fileURLToPath(new URL('.', import.meta.url))

// The blame bench at a small size: it runs, blames every version, and reports (no timing is
// asserted; `pnpm bench:blame` measures 10,000 lines × 1,000 versions, RESULTS.md).
test('pnpm bench:blame blames a history of kept versions against git blame of the same one', async () => {
  const outdir = join(here, '..', '.tmp', `blame-${process.pid}`)
  await mkdir(outdir, { recursive: true })
  const work = await mkdtemp(join(tmpdir(), 'agentfs-blame-bench-test-'))
  try {
    await bundleBench(['blame-bench.ts'], outdir)
    const out = join(work, 'blame.json')
    const run = spawnSync(
      process.execPath,
      [join(outdir, 'blame-bench.js'), '--lines', '400', '--versions', '40', '--out', out],
      { encoding: 'utf8', timeout: 120_000 },
    )
    expect(run.status, run.stderr).toBe(0)
    expect(run.stdout).toMatch(
      /fs\.blame of 400 lines over 40 versions: \d+ ms .*, 0 lines unattributed/,
    )
    const report = JSON.parse(readFileSync(out, 'utf8')) as { versions: number; blameMs: number }
    expect(report.versions).toBe(40)
    expect(report.blameMs).toBeGreaterThan(0)
  } finally {
    await rm(outdir, { recursive: true, force: true })
    await rm(work, { recursive: true, force: true })
  }
}, 180_000)
