import { isAgentFsError } from '@agentfs/core'
import { expect, test } from 'vitest'
import { nodeSqliteDriver, nodeSqliteProblem } from '../src/index.js'

test('the Node.js versions it runs on: 22.16 and newer', () => {
  expect(nodeSqliteProblem('22.15.1')).toMatch(/needs Node\.js 22\.16 or newer.*22\.15\.1/)
  expect(nodeSqliteProblem('20.20.2')).toMatch(/driver-better-sqlite3/)
  expect(nodeSqliteProblem('22.16.0')).toBeUndefined()
  expect(nodeSqliteProblem('24.21.0')).toBeUndefined()
})

test('exactly one of path and database', () => {
  expect(() => nodeSqliteDriver({})).toThrow(/exactly one of `path` and `database`/)
})

test('on a Node.js without what it needs, opening fails with CANT_OPEN naming the version', async () => {
  if (nodeSqliteProblem() === undefined) return // covered by the conformance suite instead
  const driver = nodeSqliteDriver({ path: ':memory:' })
  const error = await driver.execute({ sql: 'SELECT 1' }).catch((e: unknown) => e)
  expect(isAgentFsError(error) && error.code).toBe('CANT_OPEN')
  expect((error as Error).message).toMatch(/Node\.js 22\.16/)
})

test.skipIf(nodeSqliteProblem() !== undefined)(
  'opening prints no ExperimentalWarning for node:sqlite (Node 22 warns on its first load)',
  async () => {
    const warnings: string[] = []
    const listen = (w: Error) => warnings.push(w.message)
    process.on('warning', listen)
    try {
      const driver = nodeSqliteDriver({ path: ':memory:' })
      await driver.execute({ sql: 'SELECT 1' })
      await driver.close()
      await new Promise((resolve) => setTimeout(resolve, 10))
      expect(warnings.filter((w) => /SQLite is an experimental/.test(w))).toEqual([])
    } finally {
      process.off('warning', listen)
    }
  },
)
