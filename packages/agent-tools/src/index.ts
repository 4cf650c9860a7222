export {
  auditCopy,
  createAgentTools,
  createToolEnvironment,
  MAX_INPUT_BYTES,
  TOOL_DEFINITIONS,
} from './create-agent-tools.js'
export { applyEdits } from './edit/apply-edits.js'
export { nearMisses, nearMissText } from './edit/near-miss.js'
export { TOLERANCES, type Tolerance } from './edit/normalize.js'
export { applyHunks } from './edit/patch-apply.js'
export { type FilePatch, type PatchHunk, parseAnyPatch } from './edit/patch-parse.js'
export {
  applyMatches,
  describeTolerance,
  type EditMatch,
  type FoundMatches,
  findMatches,
  replacementFor,
} from './edit/tolerant-edit.js'
export { failureOutput, ToolFailure } from './failure.js'
export type { ChangeSource } from './history-tools.js'
export { climbsAboveRoot, createPathPolicy, landing } from './paths.js'
export { isText } from './text.js'
export type {
  AgentTool,
  AgentToolDefinition,
  AgentToolsOptions,
  AnyAgentToolDefinition,
  OutputLimits,
  PathPolicy,
  ToolEnvironment,
  ToolOutput,
} from './types.js'
