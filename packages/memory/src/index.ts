export type { MemoryErrorCode } from './errors.js'
export { MemoryError } from './errors.js'
export { AgentFsEventStore, verifyEvents } from './events/agentfs-store.js'
export type { EventInput, EventStatus, MemoryEvent, StoredEvent } from './events/event.js'
export {
  canonicalHash,
  eventHmac,
  eventVerifies,
  lineHash,
  SEALED_COLUMNS,
} from './events/event.js'
export type { EventFilters, EventIssue, EventReport } from './events/filters.js'
export { READER_ROLE } from './events/postgres-schema.js'
export type {
  PgClaim,
  PgPool,
  PgQueryable,
  PgResult,
  PostgresEventsOptions,
  ReconcileReport,
  SagaWitness,
} from './events/postgres-store.js'
export { PostgresEventStore } from './events/postgres-store.js'
export type { Garden, GardenOptions, GardenPath } from './garden/garden.js'
export { checkId, createGarden, DEFAULT_TEMPLATES, HISTORY_DIR } from './garden/garden.js'
export { memoryPolicy } from './garden/policy.js'
export type { CurateOp } from './markdown/curate.js'
export { curateList, MAX_CURATE_OPS } from './markdown/curate.js'
export type {
  AnchorMark,
  Frontmatter,
  GardenDocument,
  Section,
} from './markdown/document.js'
export {
  ANCHOR_COMMENT,
  IDENTITY_KEYS,
  identityOf,
  parseGardenDocument,
  sectionOf,
} from './markdown/document.js'
export type { BlockReport } from './markdown/guard.js'
export { checkEdit } from './markdown/guard.js'
export type { LintCode, LintDiagnostic, LintOptions, LintResult } from './markdown/lint.js'
export { DEFAULT_EVIDENCE_CAP, DEFAULT_WORD_BUDGET, lintDocument } from './markdown/lint.js'
export type { SectionChange } from './markdown/patch-section.js'
export { patchSection, sectionBody } from './markdown/patch-section.js'
export { applyUnifiedDiff, MAX_DIFF_CHARS, MAX_HUNKS } from './markdown/unified-patch.js'
export type { MemoryToolbeltOptions } from './tools/context.js'
export { scopeKey } from './tools/context.js'
export { SAGA_MARKER_SCOPE, SAGA_MARKER_TTL_MS } from './tools/saga.js'
export type { Memory, MemoryOptions } from './tools/toolbelt.js'
export { memoryTools, openMemory } from './tools/toolbelt.js'
