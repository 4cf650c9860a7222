export type {
  DifferentialFs,
  DifferentialOp,
  DifferentialOptions,
  InitialTree,
} from './differential.js'
export { runDifferential, snapshotTree, writeTree } from './differential.js'
export type { HostileCase } from './hostile.js'
export { HOSTILE_BASE, HOSTILE_CASES, writeHostileCorpus } from './hostile.js'
