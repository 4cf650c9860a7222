import type { Scenario } from '../harness.js'
import { customChunkSize } from './core/custom-chunk-size.js'
import { freshDatabase } from './core/fresh-database.js'
import { fsFiles } from './fs/files.js'
import { fsHandles } from './fs/handles.js'
import { fsLinks } from './fs/links.js'
import { migrationScenarios } from './migrations/from-layouts.js'

/** Every scenario, grouped by the first part of its id. */
export const SCENARIOS: readonly Scenario[] = [
  freshDatabase,
  customChunkSize,
  ...migrationScenarios,
  fsFiles,
  fsLinks,
  fsHandles,
]
