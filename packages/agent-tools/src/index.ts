export {
  auditCopy,
  createAgentTools,
  createToolEnvironment,
  MAX_INPUT_BYTES,
  TOOL_DEFINITIONS,
} from './create-agent-tools.js'
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
