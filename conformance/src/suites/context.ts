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
  readonly it: (id: string, name: string, fn: () => Promise<void>, timeoutMs?: number) => void
  /** Write goldens instead of comparing. */
  readonly updateGoldens: boolean
}

/** Builds the `it` of a {@link SuiteContext} from the skip map. */
export function makeIt(skips: Readonly<Record<string, string>>): SuiteContext['it'] {
  return (id, name, fn, timeoutMs) => {
    const reason = skips[id] ?? skips[id.split('/')[0]!]
    if (reason !== undefined) test.skip(`${name} [${id}] — skipped: ${reason}`, fn)
    else test(`${name} [${id}]`, fn, timeoutMs)
  }
}
