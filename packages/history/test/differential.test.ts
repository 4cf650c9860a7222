import { fixedClock, fsck, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { createFileSystem } from '@agentfs/fs'
import { type DifferentialFs, runDifferential } from '@agentfs/test-kit'
import { expect, test } from 'vitest'
import { History } from '../src/index.js'

/**
 * Random operations with snapshots and restores interleaved, on AgentFS and on node:fs (which
 * keeps a `cp -a` copy of its directory per snapshot and copies one back to restore): the
 * visible trees must agree after every step. CI: 30 × 150 steps; more with
 * AGENTFS_HISTORY_FUZZ_RUNS (AGENTFS_FUZZ_SEED replays a seed).
 */
const RUNS = Number(process.env.AGENTFS_HISTORY_FUZZ_RUNS ?? 30)
const OPS = 150
const SEED =
  process.env.AGENTFS_FUZZ_SEED === undefined ? undefined : Number(process.env.AGENTFS_FUZZ_SEED)

test(`snapshots and restores agree with copies of a node:fs tree over ${RUNS * OPS} random steps`, async () => {
  await runDifferential({
    runs: RUNS,
    opsPerRun: OPS,
    history: true,
    ...(SEED === undefined ? {} : { seed: SEED }),
    async create() {
      const db = await openDatabase({
        driver: betterSqlite3Driver({ path: ':memory:' }),
        clock: fixedClock(),
        chunkSize: 64,
      })
      const fs = createFileSystem(db, { umask: process.umask() })
      const history = new History(db, { clock: db.clock, chunks: db.chunks })
      return {
        fs: fs as unknown as DifferentialFs,
        history: {
          snapshot: async (name) => {
            await history.snapshot(name)
          },
          restore: async (name) => {
            await history.restore(name)
          },
        },
        async close() {
          const report = await fsck(db)
          await db.close()
          expect(report.findings).toEqual([])
        },
      }
    },
  })
}, 600_000)
