import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterEach, expect, test } from 'vitest'

const repo = join(import.meta.dirname, '..', '..', '..')
const temps: string[] = []
afterEach(() => {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** The manifests changesets and the release scripts read, copied out of the repository. */
function manifests(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agentfs-release-'))
  temps.push(dir)
  const files = execFileSync('git', ['ls-files', 'package.json', '*/package.json', '.changeset'], {
    cwd: repo,
    encoding: 'utf8',
  })
    .trim()
    .split('\n')
  for (const file of [...files, 'pnpm-workspace.yaml']) {
    mkdirSync(join(dir, dirname(file)), { recursive: true })
    cpSync(join(repo, file), join(dir, file))
  }
  return dir
}

const published = (dir: string) =>
  execFileSync('git', ['ls-files', '*/package.json'], { cwd: repo, encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((file) => JSON.parse(readFileSync(join(dir, file), 'utf8')))
    .filter((pkg) => !pkg.private && pkg.name?.startsWith('@agentfs/'))

test('changeset version succeeds and moves every published package to one new 0.x version (no accidental 1.0)', () => {
  const dir = manifests()
  const before = published(dir)
  const result = spawnSync(join(repo, 'node_modules', '.bin', 'changeset'), ['version'], {
    cwd: dir,
    encoding: 'utf8',
  })
  expect(result.status, `${result.stdout}${result.stderr}`).toBe(0)
  const after = published(dir)
  expect(after.length).toBe(before.length)
  const versions = new Set(after.map((pkg) => pkg.version))
  expect(versions.size).toBe(1)
  const [version] = [...versions] as [string]
  expect(version).toMatch(/^0\.\d+\.\d+$/)
  expect(version).not.toBe(before[0].version)
})

test('release:metadata writes repository, homepage, bugs and public access from one URL; --check says what is missing', () => {
  const dir = manifests()
  const script = join(repo, 'scripts', 'release-metadata.mjs')
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [script, '--root', dir, ...args], { encoding: 'utf8' })
  const missing = run('--check', 'https://github.com/agentfs/agentfs-ts')
  expect(missing.status).toBe(1)
  expect(missing.stderr).toMatch(/published package\(s\) lack .*@agentfs\/sdk/)
  expect(run('ftp://example.com/x').stderr).toMatch(/is not a GitHub or GitLab repository URL/)
  expect(run('git@github.com:agentfs/agentfs-ts.git').status).toBe(0)
  const ok = run('--check')
  expect(ok.stdout + ok.stderr).toMatch(
    /published packages carry https:\/\/github.com\/agentfs\/agentfs-ts/,
  )
  expect(ok.status).toBe(0)
  const sdk = published(dir).find((pkg) => pkg.name === '@agentfs/sdk')
  expect(sdk).toMatchObject({
    license: 'MIT',
    repository: {
      type: 'git',
      url: 'git+https://github.com/agentfs/agentfs-ts.git',
      directory: 'packages/sdk',
    },
    homepage: 'https://github.com/agentfs/agentfs-ts/tree/main/packages/sdk#readme',
    bugs: { url: 'https://github.com/agentfs/agentfs-ts/issues' },
    publishConfig: { access: 'public' },
  })
})
