import type { Scenario } from '../../harness.js'

export const freshDatabase: Scenario = {
  id: 'core/fresh-database',
  description: 'a new database: spec tables, fs_config, root directory',
  async run({ db }) {
    return { chunkSize: db.chunkSize, steps: db.migration.steps.map((s) => s.kind) }
  },
}
