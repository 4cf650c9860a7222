// The setup ZenFS's suite loads (SETUP=…): it exports the filesystem under test and the flags
// of what it does not support. Its test data is copied in as ZenFS's own setups do.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { AgentFS } from '@agentfs/sdk'

// The package root (its `exports` do not list package.json or the tests).
const zenfs = dirname(dirname(fileURLToPath(import.meta.resolve('@zenfs/core'))))
const { copySync, data } = await import(join(zenfs, 'tests', 'setup.ts'))

// ZenFS runs with no umask (its tests expect `mkdir(p, { mode: 0o777 })` to give 0777); AgentFS
// defaults to Node's 0o022, so the setup says what the environment is.
const dir = mkdtempSync(join(tmpdir(), 'agentfs-zenfs-'))
process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
const agent = await AgentFS.open({
  path: join(dir, 'zenfs.db'),
  fs: { umask: 0 },
})
export const fs = agent.nodeFs()
copySync(data, fs)

// What neither AgentFS nor Node's fs on Linux has (see known.mjs for every test that does not pass).
export const flags = { xattr: false, lchmod: false }
