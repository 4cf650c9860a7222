export type {
  DifferentialFs,
  DifferentialHistory,
  DifferentialOp,
  DifferentialOptions,
  InitialTree,
} from './differential.js'
export { runDifferential, snapshotTree, writeTree } from './differential.js'
export type { TestEmbedder } from './embedders.js'
export { bagOfWordsEmbedder } from './embedders.js'
export {
  withoutFts5,
  withoutRecursiveQueries,
  withoutVectors,
  withSlotIds,
} from './engine-limits.js'
export type {
  FileSystemSuiteOptions,
  SuiteFs,
  SuiteHandle,
  SuiteInstance,
  SuiteStats,
} from './filesystem-suite.js'
export { FILESYSTEM_SUITE_IDS, runFileSystemSuite } from './filesystem-suite.js'
export type { HostileCase, HostileFs } from './hostile.js'
export {
  HOSTILE_BASE,
  HOSTILE_CASES,
  HOSTILE_OPERATIONS,
  hostilePeerRows,
  writeHostileCorpus,
} from './hostile.js'
export { pdf, png } from './media-fixtures.js'
export {
  expectMemoryFlow,
  MEMORY_FLOW,
  MEMORY_KEY,
  MEMORY_PROFILE,
  MEMORY_PROFILE_PATH,
  plantMemoryGarden,
} from './memory-flow.js'
export { MOCK_USAGE, mockText, mockToolCall } from './mock-model.js'
export { expectEditedOnce, RETRIED_EDIT, RETRIED_EDIT_BEFORE } from './retried-edit.js'
