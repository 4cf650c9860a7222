import type { Scenario } from '../harness.js'
import { crossDomainTransaction } from './agent/cross-domain-transaction.js'
import { auditChain } from './audit/chain.js'
import { customChunkSize } from './core/custom-chunk-size.js'
import { freshDatabase } from './core/fresh-database.js'
import { overlayFs } from './fs/factory.js'
import { fsFiles } from './fs/files.js'
import { fsHandles } from './fs/handles.js'
import { fsLinks } from './fs/links.js'
import { fsSearch } from './fs/search.js'
import { fsSemanticSearch } from './fs/semantic-search.js'
import { historySnapshots } from './history/snapshots.js'
import { kvStore } from './kv/store.js'
import { migrationScenarios } from './migrations/from-layouts.js'
import { overlayCopyOnWrite } from './overlay/copy-on-write.js'
import { toolCallLog } from './tool-calls/log.js'

/** Every scenario, grouped by the first part of its id. */
export const SCENARIOS: readonly Scenario[] = [
  freshDatabase,
  customChunkSize,
  ...migrationScenarios,
  fsFiles(),
  fsLinks(),
  fsHandles(),
  fsSearch,
  fsSemanticSearch,
  kvStore,
  toolCallLog,
  crossDomainTransaction,
  historySnapshots,
  auditChain,
  overlayCopyOnWrite,
  // The fs scenarios again, over an overlay with a pre-populated base.
  fsFiles(overlayFs, 'overlay'),
  fsLinks(overlayFs, 'overlay'),
  fsHandles(overlayFs, 'overlay'),
]
