import type { Compression } from '@agentfs/core'
import { afterEach, describe, expect, test } from 'vitest'
import { readGolden, updatingGoldens, writeGolden } from './golden.js'
import { type CreateDriver, runScenario, TestResources } from './harness.js'
import { SCENARIOS } from './scenarios/index.js'
import { makeIt, type SuiteContext } from './suites/context.js'
import { errorsSuite } from './suites/errors.js'
import { migrationsSuite } from './suites/migrations.js'
import { transactionsSuite } from './suites/transactions.js'
import { valuesSuite } from './suites/values.js'

/** Options of {@link runConformance}. */
export interface ConformanceOptions {
  /**
   * Creates a driver on a fresh database. Called for every test with a new empty `tempDir`;
   * called twice with the same `tempDir` and `slot` when a test needs two connections to one
   * database (file-based drivers only).
   */
  readonly createDriver: CreateDriver
  /** Shown in the suite name (default: the driver's own name). */
  readonly name?: string
  /**
   * Tests or whole suites to skip, by id (`errors/busy`, `values`, `scenarios/fs`), with the
   * reason. Skipped tests are listed with their reason.
   */
  readonly skip?: Readonly<Record<string, string>>
  /**
   * Rewrite golden files instead of comparing (only with `AGENTFS_UPDATE_GOLDENS=1`). Set by the
   * reference driver's own test; third-party drivers never need it.
   */
  readonly reference?: boolean
  /**
   * Create every database with this compression of file content (`AgentFS.open({ compression })`).
   * The goldens stay the same: dumps show chunks decoded and leave out the compression marker.
   */
  readonly compression?: Compression
}

/**
 * Registers the whole conformance suite with vitest: driver suites (values, transactions,
 * errors, migrations) and every scenario, whose observations and canonical dump must equal the
 * committed golden file.
 *
 * @example
 * import { runConformance } from '@agentfs/conformance'
 * import { acmeDriver } from '../src/index.js'
 * runConformance({ createDriver: ({ tempDir }) => acmeDriver({ path: `${tempDir}/db.sqlite` }) })
 */
export function runConformance(options: ConformanceOptions): void {
  const skips = options.skip ?? {}
  const updateGoldens = options.reference === true && updatingGoldens()
  let current: TestResources | undefined
  const resources = () => {
    current ??= new TestResources(options.createDriver, options.compression)
    return current
  }
  const ids = new Set<string>(['scenarios'])
  const context: SuiteContext = { resources, it: makeIt(skips, ids), updateGoldens }

  describe(`AgentFS conformance${options.name ? `: ${options.name}` : ''}`, () => {
    // A misspelled skip would silently skip nothing: every id must name a test or a suite.
    test('every skip id names a test or suite', () => {
      const unknown = Object.keys(skips).filter((id) => !ids.has(id))
      if (unknown.length > 0)
        throw new Error(
          `runConformance: skip ${unknown.map((id) => `'${id}'`).join(', ')} names no test or suite; valid ids: ${[...ids].sort().join(', ')}`,
        )
    })
    afterEach(async () => {
      await current?.cleanup()
      current = undefined
    })
    describe('values', () => valuesSuite(context))
    describe('transactions', () => transactionsSuite(context))
    describe('errors', () => errorsSuite(context))
    describe('migrations', () => migrationsSuite(context))
    describe('scenarios', () => {
      for (const scenario of SCENARIOS) {
        const group = `scenarios/${scenario.id.split('/')[0]}`
        ids.add(group)
        ids.add(`scenarios/${scenario.id}`)
        const reason = skips[`scenarios/${scenario.id}`] ?? skips[group] ?? skips.scenarios
        if (reason !== undefined) {
          test.skip(`${scenario.id} — skipped: ${reason}`, () => {})
          continue
        }
        test(`${scenario.id}: ${scenario.description}`, async () => {
          const outcome = await runScenario(scenario, resources())
          if (updateGoldens) {
            writeGolden(scenario.id, outcome.text)
            return
          }
          const golden = readGolden(scenario.id)
          expect(
            golden,
            `no golden file for ${scenario.id}; run "pnpm goldens" with the reference driver and review the diff`,
          ).toBeDefined()
          expect(outcome.text).toBe(golden)
        })
      }
    })
  })
}
