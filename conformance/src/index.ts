export type { DumpOptions } from './dump.js'
export { canonicalDump, normalizeDdl, stableReplacer } from './dump.js'
export type { FixtureLayout } from './fixtures/layouts.js'
export {
  FIXTURE_CONTENT,
  FIXTURE_LAYOUTS,
  fixtureScript,
  patternBytes,
  unmigratableScript,
} from './fixtures/layouts.js'
export { GOLDEN_DIR, goldenPath, readGolden } from './golden.js'
export type {
  CreateDriver,
  DriverContext,
  Scenario,
  ScenarioContext,
  ScenarioOutcome,
} from './harness.js'
export { formatObservations, runScenario, TestResources } from './harness.js'
export { REFERENCE_CONTENT, referenceSdkScript } from './reference-fixture.js'
export type { ConformanceOptions } from './run-conformance.js'
export { runConformance } from './run-conformance.js'
export { SCENARIOS } from './scenarios/index.js'
export { countRows, inoBySql, readFileBySql } from './sql-read.js'
