// pnpm bench:blame [--lines N] [--versions N] [--no-git] [--out FILE]
// Blame to the change: a file of N lines (default 10,000) written N versions over (default
// 1,000; each replaces one to three lines, every tenth also inserts one and deletes one, as an
// agent's edits do), kept as versions in a database file. Reports the median of five
// `fs.blame(path)` runs (target: under 1 s), and as a baseline `git blame` of the same history
// committed to a git repository (fast-import, one commit per version), when git is installed.
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { AgentFS } from '@agentfs/sdk'

const { values } = parseArgs({
  options: {
    lines: { type: 'string', default: '10000' },
    versions: { type: 'string', default: '1000' },
    'no-git': { type: 'boolean', default: false },
    out: { type: 'string' },
  },
})
const lineCount = Number(values.lines)
const versionCount = Number(values.versions)
if (!Number.isSafeInteger(lineCount) || lineCount < 10) throw new Error('--lines must be ≥ 10')
if (!Number.isSafeInteger(versionCount) || versionCount < 2 || versionCount > 10_000)
  throw new Error('--versions must be 2 … 10000')

// A deterministic history: xorshift, so every run blames the same edits.
let seed = 0x9e3779b9
const random = (n: number) => {
  seed ^= seed << 13
  seed ^= seed >>> 17
  seed ^= seed << 5
  return (seed >>> 0) % n
}
const dir = mkdtempSync(join(tmpdir(), 'agentfs-blame-bench-'))
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const timed = (fn: () => unknown) => {
  const start = process.hrtime.bigint()
  const value = fn()
  return { value, ms: Number(process.hrtime.bigint() - start) / 1e6 }
}

try {
  const agent = await AgentFS.open({
    path: join(dir, 'agent.db'),
    versions: { maxCount: versionCount, maxBytes: 2 ** 40 },
  })
  await agent.fs.mkdir('/src')
  const lines = Array.from(
    { length: lineCount },
    (_, i) => `  const line${i} = compute(${i}) // v0`,
  )
  const history: string[] = []
  for (let v = 0; v < versionCount; v++) {
    if (v > 0) {
      const edits = 1 + random(3)
      for (let e = 0; e < edits; e++)
        lines[random(lines.length)] = `  const edited = ${random(1e9)} // v${v}`
      if (v % 10 === 0) {
        lines.splice(random(lines.length), 0, `  // inserted in v${v}`)
        lines.splice(random(lines.length), 1)
      }
    }
    const text = `${lines.join('\n')}\n`
    history.push(text)
    await agent.fs.writeFile('/src/big.ts', text, { message: `version ${v}` })
  }
  // What the kept versions cost: distinct chunk bytes against the versions' total size.
  const stored = await agent.db.execute<{ bytes: number; kept: number }>({
    sql: 'SELECT (SELECT sum(length(data)) FROM agentfs_blob) AS bytes, (SELECT sum(size) FROM agentfs_file_version) AS kept',
  })
  const { bytes, kept } = stored.rows[0]!
  console.log(
    `${versionCount} kept versions: ${(kept / 2 ** 20).toFixed(1)} MiB of content stored in ${(bytes / 2 ** 20).toFixed(1)} MiB of chunks (${(kept / bytes).toFixed(1)}× dedup)`,
  )
  const runs: number[] = []
  let blamed = 0
  let unattributed = 0
  for (let i = 0; i < 5; i++) {
    const start = process.hrtime.bigint()
    const b = await agent.fs.blame('/src/big.ts', { maxVersions: versionCount, timeoutMs: 60_000 })
    runs.push(Number(process.hrtime.bigint() - start) / 1e6)
    blamed = b.walked
    unattributed = b.unattributed
  }
  await agent.close()
  const ours = median(runs)
  console.log(
    `fs.blame of ${lineCount} lines over ${blamed} versions: ${ours.toFixed(0)} ms (median of 5; target < 1000 ms), ${unattributed} lines unattributed`,
  )

  let git: number | undefined
  if (!values['no-git'] && spawnSync('git', ['--version']).status === 0) {
    const repo = join(dir, 'repo')
    execFileSync('git', ['init', '-q', repo])
    const chunks: Buffer[] = []
    for (const [v, text] of history.entries()) {
      const body = Buffer.from(text)
      chunks.push(
        Buffer.from(
          `commit refs/heads/main\ncommitter bench <bench@example.com> ${1_700_000_000 + v} +0000\ndata ${`version ${v}`.length}\nversion ${v}\nM 100644 inline big.ts\ndata ${body.length}\n`,
        ),
        body,
        Buffer.from('\n'),
      )
    }
    execFileSync('git', ['-C', repo, 'fast-import', '--quiet'], {
      input: Buffer.concat(chunks),
      maxBuffer: 2 ** 30,
    })
    execFileSync('git', ['-C', repo, 'checkout', '-q', 'main'])
    const gitRuns: number[] = []
    for (let i = 0; i < 3; i++)
      gitRuns.push(
        timed(() =>
          execFileSync('git', ['-C', repo, 'blame', '--porcelain', 'big.ts'], {
            maxBuffer: 2 ** 30,
          }),
        ).ms,
      )
    git = median(gitRuns)
    console.log(
      `git blame of the same history: ${git.toFixed(0)} ms (median of 3); fs.blame ÷ git blame: ${(ours / git).toFixed(2)}`,
    )
  }
  if (values.out)
    writeFileSync(
      values.out,
      `${JSON.stringify({ lines: lineCount, versions: blamed, blameMs: ours, runs, gitBlameMs: git ?? null, versionBytes: kept, storedBytes: bytes }, null, 2)}\n`,
    )
} finally {
  if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true })
  else console.log(dir)
}
