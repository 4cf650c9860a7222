import { FIXTURE_LAYOUTS, fixtureScript } from '../../fixtures/layouts.js'
import type { Scenario } from '../../harness.js'
import { referenceSdkScript } from '../../reference-fixture.js'

const describeMigration: Scenario['run'] = async ({ db }) => ({
  from: db.migration.from,
  referenceToolCalls: db.migration.referenceToolCalls,
  steps: db.migration.steps.map((s) => `${s.kind} ${s.target}`),
})

/** One scenario per older layout: the dump after migration is the golden. */
export const migrationScenarios: readonly Scenario[] = [
  ...FIXTURE_LAYOUTS.map(
    (layout): Scenario => ({
      id: `migrations/from-${layout}`,
      description: `open a ${layout} database`,
      setupScript: fixtureScript(layout),
      run: describeMigration,
    }),
  ),
  {
    id: 'migrations/from-agentfs-sdk-0.6.4',
    description: 'open a database written by the reference SDK',
    get setupScript() {
      return referenceSdkScript()
    },
    run: describeMigration,
  },
]
