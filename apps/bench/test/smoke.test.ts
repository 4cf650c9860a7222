import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, test } from 'vitest'
import { buildFloor } from '../src/fuse-workload.js'
import { bundleBench } from './bundle.js'

const here = fileURLToPath(new URL('.', import.meta.url))

const ALL_IMPLS = ['raw-sql', 'raw-sql-kept', 'agentfs', 'agentfs-sdk-0.6.4', 'node-fs']
/**
 * The implementations run: all of them, or those `AGENTFS_BENCH_IMPLS` names (`.ci/run`'s
 * Node 22 and 24 legs run AgentFS and the raw-SQL baseline; leg 1 runs all).
 */
const IMPLS = (process.env.AGENTFS_BENCH_IMPLS ?? ALL_IMPLS.join(','))
  .split(',')
  .filter((impl) => ALL_IMPLS.includes(impl))
const runs = (impl: string) => IMPLS.includes(impl)

// A smoke test of the harness at --scale small: it runs, verifies every read, and reports.
// No timing is asserted (this machine is shared); the numbers live in RESULTS.md.
test('pnpm bench --scale small runs every workload on each implementation and writes a report', async () => {
  const outdir = join(here, '..', '.tmp', `bench-${process.pid}`)
  await mkdir(outdir, { recursive: true })
  const work = await mkdtemp(join(tmpdir(), 'agentfs-bench-test-'))
  try {
    await bundleBench(['main.ts', 'child.ts', 'reader-child.ts'], outdir)
    const out = join(work, 'report.json')
    const run = spawnSync(
      process.execPath,
      [join(outdir, 'main.js'), '--scale', 'small', '--impl', IMPLS.join(','), '--out', out],
      // The harness runs every workload, with FUSE mounts for W12: 150-220 s on a loaded
      // two-core machine. Bounded here (spawnSync holds the event loop, so vitest's own timeout
      // only notices after it returns).
      { encoding: 'utf8', timeout: 540_000 },
    )
    expect(run.error, 'the bench harness did not finish within 9 minutes').toBeUndefined()
    expect(run.status, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/agentfs +W10 stat a file 32 directories deep/)
    if (runs('raw-sql')) expect(run.stdout).toMatch(/geomean × raw-sql/)
    if (runs('raw-sql') && runs('raw-sql-kept'))
      expect(run.stdout).toMatch(
        /W9 renames across directories +ceiling ×\d\.\d\d {2}agentfs ÷ kept ×\d/,
      )
    const report = JSON.parse(readFileSync(out, 'utf8')) as {
      scale: string
      reports: {
        impl: string
        peakRssMiB: number
        results: { workload: string; opsPerSec: number }[]
      }[]
      summary: Record<string, { vsRaw?: number; vsReference?: number }>
      w12?: { command: string; ratio: number; floorSeconds?: number }[] | { skipped: string }
    }
    expect(report.scale).toBe('small')
    const ids = (impl: string) =>
      report.reports.find((r) => r.impl === impl)!.results.map((r) => r.workload)
    const all = ['W1', 'W2', 'W3', 'W4', 'W5', 'W6', 'W7', 'W8', 'W9', 'W10']
    // The agent-session mix (W11) runs through the agent tools where they exist (AgentFS, and
    // node:fs through HostFileSystem) and on the primitives elsewhere; the import (W14) runs
    // everywhere; the package tree (W15) needs `rm -r`, the readers (W16, W17) storage another
    // process can open.
    const agent = ['W14', 'W15', 'W16', 'W17']
    if (runs('raw-sql')) expect(ids('raw-sql')).toEqual([...all, 'W11', ...agent])
    if (runs('raw-sql-kept')) expect(ids('raw-sql-kept')).toEqual([...all, 'W11', ...agent])
    // The stream (W13) runs on AgentFS and, through node streams, on node:fs.
    expect(ids('agentfs')).toEqual([...all, 'W11', 'W13', ...agent])
    if (runs('agentfs-sdk-0.6.4')) expect(ids('agentfs-sdk-0.6.4')).toEqual([...all, 'W11', 'W14'])
    // node:fs has no key-value store or tool-call log.
    if (runs('node-fs'))
      expect(ids('node-fs')).toEqual([
        ...all.filter((w) => w !== 'W7' && w !== 'W8'),
        'W11',
        'W13',
        ...agent,
      ])
    expect(IMPLS, 'AgentFS itself is always run').toContain('agentfs')
    if (runs('raw-sql')) expect(report.summary.agentfs?.vsRaw).toBeGreaterThan(0)
    if (runs('agentfs-sdk-0.6.4')) expect(report.summary.agentfs?.vsReference).toBeGreaterThan(0)
    expect(report.reports.map((r) => r.impl).sort()).toEqual([...IMPLS].sort())
    for (const r of report.reports) expect(r.peakRssMiB).toBeGreaterThan(0)
    // W12 runs where FUSE and a built CLI are available, and says why not elsewhere.
    if (Array.isArray(report.w12)) {
      expect(report.w12.map((r) => r.command)).toEqual([
        'cp -r',
        'ls -lR',
        'grep -r',
        'git add+commit',
        'rm -r',
      ])
      // Where the floor filesystem builds (a C compiler and libfuse 3's headers), every command
      // ran on it too.
      if (!('skip' in buildFloor(work)))
        for (const r of report.w12) expect(r.floorSeconds).toBeGreaterThan(0)
    } else expect(report.w12?.skipped).toMatch(/.+/)
  } finally {
    await rm(outdir, { recursive: true, force: true })
    await rm(work, { recursive: true, force: true })
  }
}, 600_000)
