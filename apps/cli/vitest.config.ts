import { defineConfig, mergeConfig } from 'vitest/config'
import { BaseSequencer, type TestSpecification } from 'vitest/node'
import shared from '../../vitest.shared.js'

/**
 * The CLI's longest files, longest first (measured in CI: examples 160–280 s, hostile 117–136,
 * fuse 54–83, encryption 60, history 55–63, cli 47–65; the rest under 20 s each). Started first,
 * the two workers end together; met last (a fresh clone has no timings to sort by), the run
 * spent its final minutes on one of them.
 */
const LONGEST = ['examples', 'hostile', 'fuse', 'cli', 'history', 'encryption']

function rank(spec: TestSpecification): number {
  const i = LONGEST.findIndex((name) => spec.moduleId.endsWith(`/test/${name}.test.ts`))
  return i < 0 ? LONGEST.length : i
}

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    return sorted
      .map((spec, i) => ({ spec, i }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.i - b.i)
      .map(({ spec }) => spec)
  }
}

export default mergeConfig(
  shared,
  defineConfig({ test: { sequence: { sequencer: LongestFirst } } }),
)
