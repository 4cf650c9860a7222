import { fixedClock, fsck, groupCommits, openDatabase } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { type DifferentialFs, runDifferential } from '@agentfs/test-kit'
import { describe, expect, test } from 'vitest'
import { createFileSystem } from '../src/index.js'

/**
 * Differential test (harness in @agentfs/test-kit): random operation sequences on AgentFS
 * and on node:fs must agree after every step. CI: 50 × 200 = 10,000 operations per driver.
 * Long run (1,000,000 operations per driver): AGENTFS_FUZZ_RUNS=5000 pnpm --filter @agentfs/fs exec vitest run test/differential.test.ts
 * (AGENTFS_FUZZ_SEED replays a seed; AGENTFS_FUZZ_SHRINK=1 shrinks a failure).
 */
const RUNS = Number(process.env.AGENTFS_FUZZ_RUNS ?? 50)
const OPS = 200
const SEED =
  process.env.AGENTFS_FUZZ_SEED === undefined ? undefined : Number(process.env.AGENTFS_FUZZ_SEED)

describe.each([
  ['better-sqlite3', () => betterSqlite3Driver({ path: ':memory:' }), false],
  ['libsql', () => libsqlDriver({ url: ':memory:' }), false],
  // What a mount runs on: calls grouped into shared commits, each in a savepoint of its own.
  ['better-sqlite3, grouped commits', () => betterSqlite3Driver({ path: ':memory:' }), true],
] as const)('%s', (_name, makeDriver, grouped) => {
  test(
    `differential: AgentFS agrees with node:fs over ${RUNS * OPS} random operations`,
    async () => {
      await runDifferential({
        runs: RUNS,
        opsPerRun: OPS,
        ...(SEED === undefined ? {} : { seed: SEED }),
        shrink: process.env.AGENTFS_FUZZ_SHRINK === '1',
        async create() {
          const opened = await openDatabase({
            driver: makeDriver(),
            clock: fixedClock(),
            chunkSize: 64,
          })
          const db = grouped ? groupCommits(opened) : opened
          const fs = createFileSystem(db, { umask: process.umask() })
          return {
            fs: fs as unknown as DifferentialFs,
            async close() {
              // After every random run the database must pass every consistency rule.
              const report = await fsck(db)
              await db.close()
              expect(report.findings).toEqual([])
            },
          }
        },
      })
    },
    Math.max(600_000, RUNS * 3_000),
  ) // long runs: about a second per 200-operation run
})
