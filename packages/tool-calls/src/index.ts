export type {
  QueryOptions,
  RecordInput,
  TimeInput,
  ToolCall,
  ToolStats,
  TrackOptions,
} from './model.js'
export { createToolCalls, ToolCalls } from './tool-calls.js'
