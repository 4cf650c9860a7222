// `pnpm release:metadata <repository-url>`: writes the registry metadata of every published
// package from the one URL of the project's public Git repository — `repository` (with the
// package's `directory`, which npm provenance checks against the build), `homepage` (the
// package's folder) and `bugs` (the issue tracker) — so the first publish is one command away:
//
//   pnpm release:metadata https://github.com/OWNER/REPO && pnpm build && pnpm changeset publish
//
// `--check` changes nothing and exits 1 naming every published package whose metadata is
// missing or differs from the URL's (or from the URL already recorded, without one).
// `--root DIR` works on another checkout (the tests use a copy).
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'

const args = process.argv.slice(2)
const flag = (name) => {
  const i = args.indexOf(name)
  if (i === -1) return undefined
  const value = args[i + 1]
  args.splice(i, 2)
  return value
}
const check = args.includes('--check')
if (check) args.splice(args.indexOf('--check'), 1)
const root = flag('--root') ?? new URL('..', import.meta.url).pathname

function fail(message) {
  process.stderr.write(`release-metadata: ${message}\n`)
  process.exit(1)
}

/** `https://github.com/OWNER/REPO` from the forms people paste (git+, .git, ssh). */
function normalize(url) {
  const m =
    /^(?:git\+)?(?:https:\/\/|ssh:\/\/git@|git@)(github\.com|gitlab\.com)[/:]([\w.-]+)\/([\w.-]+?)(?:\.git)?\/?$/.exec(
      url,
    )
  if (!m)
    fail(
      `${JSON.stringify(url)} is not a GitHub or GitLab repository URL; pass one like https://github.com/OWNER/REPO`,
    )
  return `https://${m[1]}/${m[2]}/${m[3]}`
}

const packageDirs = [
  ...['packages', 'apps'].flatMap((group) =>
    existsSync(join(root, group))
      ? readdirSync(join(root, group)).map((d) => join(root, group, d))
      : [],
  ),
  join(root, 'conformance'),
].filter((dir) => existsSync(join(dir, 'package.json')))

const published = packageDirs
  .map((dir) => ({ dir, file: join(dir, 'package.json') }))
  .map((p) => ({ ...p, pkg: JSON.parse(readFileSync(p.file, 'utf8')) }))
  .filter((p) => !p.pkg.private)

const rootPkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const given = args[0]
const recorded =
  typeof rootPkg.repository === 'string' ? rootPkg.repository : rootPkg.repository?.url
if (!given && !check)
  fail('pass the repository URL: pnpm release:metadata https://github.com/OWNER/REPO')
if (!given && !recorded)
  fail('no repository URL is recorded yet: run pnpm release:metadata https://github.com/OWNER/REPO')
const base = normalize(given ?? recorded)

const expected = (dir) => {
  const directory = relative(root, dir).split('\\').join('/')
  return {
    repository: { type: 'git', url: `git+${base}.git`, directory },
    homepage: `${base}/tree/main/${directory}#readme`,
    bugs: { url: `${base}/issues` },
  }
}

const wrong = []
for (const { dir, file, pkg } of published) {
  const want = expected(dir)
  const same = Object.entries(want).every(
    ([key, value]) => JSON.stringify(pkg[key]) === JSON.stringify(value),
  )
  const publishConfigOk = pkg.publishConfig?.access === 'public'
  if (same && publishConfigOk && pkg.license) continue
  if (check) {
    wrong.push(pkg.name)
    continue
  }
  // Inserted after `license`, in a stable order, keeping every other field where it was.
  const out = {}
  for (const [key, value] of Object.entries(pkg)) {
    if (key in want || key === 'publishConfig') continue
    out[key] = value
    if (key === 'license') Object.assign(out, want)
  }
  if (!('repository' in out)) Object.assign(out, want)
  out.publishConfig = { ...pkg.publishConfig, access: 'public' }
  writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`)
  console.log(`${pkg.name}: ${want.homepage}`)
}
if (check) {
  if (wrong.length > 0)
    fail(
      `${wrong.length} published package(s) lack the repository, homepage, bugs, license or public access of ${base}: ${wrong.join(', ')}`,
    )
  console.log(`${published.length} published packages carry ${base}'s metadata`)
} else {
  rootPkg.repository = { type: 'git', url: `git+${base}.git` }
  writeFileSync(join(root, 'package.json'), `${JSON.stringify(rootPkg, null, 2)}\n`)
}
