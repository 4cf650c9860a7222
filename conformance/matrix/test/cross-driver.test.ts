import { canonicalDump, runScenario, SCENARIOS, TestResources } from '@agentfs/conformance'
import type { Driver } from '@agentfs/core'
import { betterSqlite3Driver } from '@agentfs/driver-better-sqlite3'
import { libsqlDriver } from '@agentfs/driver-libsql'
import { tursoDriver } from '@agentfs/driver-turso'
import { afterEach, describe, expect, test } from 'vitest'

/** Every first-party driver, each opening a database file at `path`. */
const DRIVERS: Record<string, (path: string) => Driver> = {
  'better-sqlite3': (path) => betterSqlite3Driver({ path }),
  libsql: (path) => libsqlDriver({ url: `file:${path}` }),
  turso: (path) => tursoDriver({ path }),
}
const NAMES = Object.keys(DRIVERS)
const PAIRS = NAMES.flatMap((a, i) => NAMES.slice(i + 1).map((b) => [a, b] as const))

let resources: TestResources[] = []
const fresh = (name: string) => {
  const r = new TestResources(({ tempDir, slot }) => DRIVERS[name]!(`${tempDir}/db-${slot}.sqlite`))
  resources.push(r)
  return r
}
afterEach(async () => {
  for (const r of resources) await r.cleanup()
  resources = []
})

describe('cross-driver: every scenario leaves equal dumps on every driver', () => {
  for (const scenario of SCENARIOS) {
    for (const [a, b] of PAIRS) {
      test(`${scenario.id}: ${a} = ${b}`, async () => {
        const left = await runScenario(scenario, fresh(a))
        const right = await runScenario(scenario, fresh(b))
        expect(right.text).toBe(left.text)
      })
    }
  }
})

describe('cross-reading: a file written by one driver dumps identically through another', () => {
  for (const scenario of SCENARIOS) {
    for (const writer of NAMES) {
      for (const reader of NAMES.filter((n) => n !== writer)) {
        test(`${scenario.id}: written by ${writer}, read by ${reader}`, async () => {
          const res = fresh(writer)
          const dir = await res.tempDir()
          const path = `${dir}/shared.sqlite`
          const writerDriver = DRIVERS[writer]!(path)
          const written = await runScenario(scenario, res, writerDriver)
          await writerDriver.close()
          const readerRes = fresh(reader)
          const db = await readerRes.open({ driver: DRIVERS[reader]!(path) })
          expect(db.migration.steps).toEqual([])
          expect(await canonicalDump(db)).toBe(written.dump)
        })
      }
    }
  }
})
