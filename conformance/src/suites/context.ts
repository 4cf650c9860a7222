import { test } from 'vitest'
import type { TestResources } from '../harness.js'

/** What each suite gets from `runConformance`. */
export interface SuiteContext {
  /** The current test's resources (temp dirs, drivers), cleaned up after each test. */
  readonly resources: () => TestResources
  /**
   * Registers a test under a stable id (`values/bigints`). A test the driver author skipped is
   * still listed, with the reason in its name.
   */
  readonly it: (
    id: string,
    name: string,
    fn: (skip: (reason: string) => never) => Promise<void>,
    timeoutMs?: number,
  ) => void
  /** Write goldens instead of comparing. */
  readonly updateGoldens: boolean
}

/**
 * Builds the `it` of a {@link SuiteContext} from the skip map; every id it registers is added to
 * `ids`, so a skip naming no test can be reported.
 */
export function makeIt(
  skips: Readonly<Record<string, string>>,
  ids: Set<string>,
): SuiteContext['it'] {
  return (id, name, fn, timeoutMs) => {
    ids.add(id)
    ids.add(id.split('/')[0]!)
    const reason = skips[id] ?? skips[id.split('/')[0]!]
    if (reason !== undefined) test.skip(`${name} [${id}] — skipped: ${reason}`, () => {})
    else
      test(
        `${name} [${id}]`,
        // A test may find out from the driver's capabilities that it cannot apply: it is then
        // reported as skipped, with the reason printed.
        (context) =>
          fn((why) => {
            console.log(`${id} skipped: ${why}`)
            return context.skip(why) as never
          }),
        timeoutMs,
      )
  }
}
