export type {
  QueryOptions,
  RecordInput,
  TimeInput,
  ToolCall,
  ToolStats,
  TrackOptions,
} from './model.js'
export { AuditFullError } from './payloads.js'
export type {
  PendingOptions,
  PendingToolCall,
  ReconcileOptions,
  StartInput,
} from './pending.js'
export { createToolCalls, ToolCalls } from './tool-calls.js'
