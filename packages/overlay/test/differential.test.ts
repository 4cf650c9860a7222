import * as nodeFs from 'node:fs/promises'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fixedClock, fsck, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { tursoDriver } from '@agentfs/driver-turso'
import { createFileSystem } from '@agentfs/fs'
import { serverBacked } from '@agentfs/hrana-server'
import {
  type DifferentialFs,
  type InitialTree,
  runDifferential,
  snapshotTree,
  writeTree,
} from '@agentfs/test-kit'
import { describe, expect, test } from 'vitest'
import { createOverlay, HostFileSystem } from '../src/index.js'

/**
 * The fs differential test over the overlay: the base (a host directory, pre-populated) and
 * node:fs on a copy of it must agree after every step, and the base must never change.
 * Long run: AGENTFS_FUZZ_RUNS=2000 pnpm --filter @agentfs/overlay exec vitest run test/differential.test.ts
 */
const RUNS = Number(process.env.AGENTFS_FUZZ_RUNS ?? 25)
const OPS = 200
const SEED =
  process.env.AGENTFS_FUZZ_SEED === undefined ? undefined : Number(process.env.AGENTFS_FUZZ_SEED)

const TREE: InitialTree = {
  '/a': { dir: true },
  '/a/b': 'base file a/b',
  '/a/c': { dir: true },
  '/a/c/a': 'deep base file',
  '/b': 'base file b',
  '/c': { symlink: 'a' },
}

describe.each([
  ['better-sqlite3', () => betterSqlite3Driver({ path: ':memory:' }), RUNS],
  ['libsql', () => libsqlDriver({ url: ':memory:' }), RUNS],
  // An engine without WITH RECURSIVE: the overlay on the filesystem's loop paths (each
  // statement costs more on this engine: a quarter of the runs).
  ['turso', () => tursoDriver({ path: ':memory:' }), Math.max(1, Math.round(RUNS / 4))],
  // Every call is an HTTP round trip to a server on loopback (about 25 statements per
  // operation, 2-6 ms each: a 200-operation run takes 20 s alone): one run in 25.
  [
    'libsql remote',
    () => serverBacked((url) => libsqlDriver({ url, busyTimeoutMs: 2000 })),
    Math.max(1, Math.round(RUNS / 25)),
  ],
] as const)('%s', (_name, makeDriver, runs) => {
  test(
    `differential over an overlay: agrees with node:fs over ${runs * OPS} operations, base untouched`,
    async () => {
      await runDifferential({
        runs,
        opsPerRun: OPS,
        ...(SEED === undefined ? {} : { seed: SEED }),
        shrink: process.env.AGENTFS_FUZZ_SHRINK === '1',
        initialTree: TREE,
        async create(tree) {
          const dir = await mkdtemp(join(tmpdir(), 'agentfs-overlay-diff-'))
          await writeTree(dir, tree)
          const pristine = await snapshotTree(nodeFs as unknown as DifferentialFs, dir)
          const db = await openDatabase({
            driver: makeDriver(),
            clock: fixedClock(),
            chunkSize: 64,
          })
          const overlay = await createOverlay({
            base: new HostFileSystem({ root: dir }),
            delta: createFileSystem(db, { umask: process.umask() }),
          })
          return {
            fs: overlay as unknown as DifferentialFs,
            async close() {
              const report = await fsck(db)
              await db.close()
              expect(report.findings, 'the delta database is consistent').toEqual([])
              const after = await snapshotTree(nodeFs as unknown as DifferentialFs, dir)
              await rm(dir, { recursive: true, force: true })
              expect(after, 'the host base changed').toEqual(pristine)
            },
          }
        },
      })
    },
    Math.max(600_000, RUNS * 3_000),
  ) // long runs: about a second per 200-operation run
})
